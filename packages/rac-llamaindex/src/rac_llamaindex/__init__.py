"""RAC for LlamaIndex agents and agent workflows: one call puts every tool call under RAC.

>>> from rac_llamaindex import enable_rac
>>> agent = enable_rac(agent, compensations={"book_flight": "cancel_flight"})  # doctest: +SKIP
>>> await agent.run("book my trip")  # one RAC run; failures retried, rolled back, reported

See ``docs/llamaindex.md``.
"""

try:  # first: an adapter on a core it was not built for fails here, in one line
    from rac.adapters.compat import require_core
except ImportError as e:  # no RAC core at all, or another project's `rac` module
    raise ImportError(f"rac_llamaindex needs RAC's core, robust-agent-compensation: {e}") from None

require_core("robust-agent-compensation-llamaindex")

from rac_llamaindex.codeact import CodeCallFailed, code_functions
from rac_llamaindex.enable import enable_rac, enabled_engine
from rac_llamaindex.guarded_tool import RACFunctionTool
from rac_llamaindex.plugin import LlamaIndexPlugin
from rac_llamaindex.run_scope import RACWorkflowHandler, rac_run_of

__version__ = "0.1.0"

__all__ = ["CodeCallFailed", "LlamaIndexPlugin", "RACFunctionTool", "RACWorkflowHandler",
           "code_functions", "enable_rac", "enabled_engine", "rac_run_of"]
