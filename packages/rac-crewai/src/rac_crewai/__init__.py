"""RAC for CrewAI: one call puts every tool of a crew under RAC.

>>> from rac_crewai import enable_rac
>>> enable_rac(crew, compensations={"book_flight": "cancel_flight"})  # doctest: +SKIP
>>> crew.kickoff()  # one RAC run; failures are retried, rolled back and reported to the agent

See ``docs/crewai.md``.
"""

try:  # first: an adapter on a core it was not built for fails here, in one line
    from rac.adapters.compat import require_core
except ImportError as e:  # no RAC core at all, or another project's `rac` module
    raise ImportError(f"rac_crewai needs RAC's core, robust-agent-compensation: {e}") from None

require_core("robust-agent-compensation-crewai")

from rac_crewai.approvals import Approval, ask_in_console
from rac_crewai.enable import enable_rac, enable_rac_for_agent, enabled_engine
from rac_crewai.guarded_tool import RACTool
from rac_crewai.plugin import CrewAIPlugin
from rac_crewai.run_scope import CrewRefused

__all__ = ["Approval", "CrewAIPlugin", "CrewRefused", "RACTool", "ask_in_console",
           "enable_rac", "enable_rac_for_agent", "enabled_engine"]
