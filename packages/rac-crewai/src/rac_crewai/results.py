"""What the agent receives when RAC could not complete a call.

(:class:`rac_crewai.plugin.CrewAIPlugin` makes RAC read a returned ``ToolFailure`` as a failed
attempt.) :func:`failure_for_agent` turns an unrecoverable RAC outcome into the
``ToolFailure`` the agent receives: its message is the rendered recovery report, so the agent
reads what was undone, and CrewAI's ``tool_failure_policy`` decides whether the crew goes on
(``warn``/``ignore``) or stops (``raise``).
"""

from __future__ import annotations

from typing import Any

from crewai.tools.tool_failure import ToolFailure, ToolFailureReason

import rac
from rac.adapters import failure_text

#: Key of ``ToolFailure.details`` naming the RAC run that produced the failure.
RUN_ID_KEY = "rac_run_id"


def failure_for_agent(outcome: rac.CallOutcome, run: rac.Run,
                      more: str | None = None) -> ToolFailure:
    """The tool result for a call RAC could not complete: the rendered report as a failure
    (``more``: the report of a further rollback, appended)."""
    report = outcome.report
    details: dict[str, Any] = {RUN_ID_KEY: run.run_id, "rac_status": str(run.status),
                               "failed_tool": outcome.tool, "seq": outcome.seq}
    if report is not None:
        details["compensated"] = [u.tool for u in report.compensated]
        details["left_live"] = [u.tool for u in report.left_live]
    message = failure_text(outcome)
    if more:
        message = f"{message}\n{more}"
    return ToolFailure(message=message, reason=ToolFailureReason.TOOL_REPORTED,
                       retryable=False, details=details)
