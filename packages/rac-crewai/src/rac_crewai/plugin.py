"""The RAC plugin that teaches an engine CrewAI's types.

* A tool may *return* a :class:`crewai.tools.tool_failure.ToolFailure` instead of raising: RAC
  treats it as a failed attempt (transient when the tool says it is retryable).
* A rollback of a run empties CrewAI's tool caches of the run (:mod:`rac_crewai.caches`).
* A CrewAI tool given to the engine itself (``rac.RAC(tools=[...])``, for compensators the
  crew's agents do not hold) becomes a :class:`rac.Tool` calling its ``run``.
"""

from __future__ import annotations

from typing import Any

from crewai.tools import BaseTool
from crewai.tools.tool_failure import ToolFailure, ToolFailureReason

import rac
from rac.errors import ResultError
from rac_crewai.caches import empty_caches
from rac_crewai.tool_table import as_rac_tool

#: The name under which :class:`CrewAIPlugin` is registered on an engine.
PLUGIN_NAME = "rac_crewai"


class CrewAIPlugin:
    """RAC hooks for CrewAI results and tools (registered by ``enable_rac``; pass it in
    ``rac.RAC(plugins=[...])`` to give the engine CrewAI tools at construction)."""

    @rac.hookimpl
    def rac_detect_result_error(self, tool: str, result: Any) -> BaseException | None:
        """Flag a ``ToolFailure`` result; defer on anything else."""
        if isinstance(result, ToolFailure):
            message = result.as_agent_message()
            if result.reason is ToolFailureReason.USAGE_LIMIT:
                message += " (CrewAI's usage budget of this tool ended the attempts, not a " \
                           "failure of the tool itself)"
            return ResultError(message, result, transient=result.retryable)
        return None

    @rac.hookimpl
    def rac_rollback_started(self, run_id: str, scope: str, seqs: list[int],
                             reason: str) -> None:
        """A rollback starts: CrewAI's tool caches of the run hold reads it may change."""
        empty_caches(run_id)

    @rac.hookimpl
    def rac_rollback_finished(self, run_id: str, scope: str, report: Any) -> None:
        """A rollback finished: a read cached while it ran may describe a world it changed."""
        empty_caches(run_id)

    @rac.hookimpl
    def rac_adapt_tool(self, tool: Any) -> rac.Tool | None:
        """A CrewAI tool as a RAC tool; defer on anything else."""
        return as_rac_tool(tool) if isinstance(tool, BaseTool) else None
