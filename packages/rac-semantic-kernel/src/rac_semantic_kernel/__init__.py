"""RAC for Semantic Kernel kernels, agents and orchestrations.

``enable_rac(kernel_or_agent, rac=engine)`` registers RAC's filters on the kernel: every function
call the model makes is logged, retried while its failure is transient, replaced by declared
alternatives, and on an unrecoverable failure the invocation's side effects are compensated and
the model receives the recovery report as the function's result. See ``docs/semantic-kernel.md``.
"""

try:  # first: an adapter on a core it was not built for fails here, in one line
    from rac.adapters.compat import require_core
except ImportError as e:  # no RAC core at all, or another project's `rac` module
    raise ImportError(f"rac_semantic_kernel needs RAC's core, robust-agent-compensation: {e}") from None

require_core("robust-agent-compensation-semantic-kernel")

from rac_semantic_kernel.enable import enable_rac, enabled_engine, prepare_recovery
from rac_semantic_kernel.filters import FunctionCallFilter, InvocationError
from rac_semantic_kernel.mcp_plugins import MCPToolError

__version__ = "0.1.0"

__all__ = ["FunctionCallFilter", "InvocationError", "MCPToolError", "enable_rac",
           "enabled_engine", "prepare_recovery"]
