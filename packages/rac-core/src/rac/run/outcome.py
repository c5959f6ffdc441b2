"""What became of one tool call under RAC, as an adapter or the caller receives it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rac.errors import CallRefused, ToolCallFailed
from rac.report import RecoveryReport


@dataclass(slots=True)
class CallOutcome:
    """What became of one tool call under RAC.

    ``ok`` is True when a tool (the requested one or an alternative, named by ``tool``) succeeded;
    ``result`` is its raw return value and ``value`` the normalised one. When ``ok`` is False,
    ``message`` is what the agent should be told: the rendered ``report`` after a rollback, or
    why the call was refused (``refused``: it never ran) or was undone after the fact
    (``undone``: it completed after its scope had been rolled back, and was undone too).
    """

    ok: bool
    tool: str
    seq: int
    result: Any = None
    value: Any = None
    error: BaseException | None = None
    report: RecoveryReport | None = None
    message: str | None = None
    refused: bool = False
    undone: bool = False


def unwrap(outcome: CallOutcome) -> Any:
    """The result of a successful call, or the exception that tells the caller why not."""
    if outcome.ok:
        return outcome.result
    if outcome.refused:
        if isinstance(outcome.error, CallRefused):
            raise outcome.error
        raise CallRefused(outcome.message or "refused")
    if outcome.report is not None:
        raise ToolCallFailed(outcome.report, outcome.message)
    raise ToolCallFailed(
        RecoveryReport(run_id="", failed_tool=outcome.tool, reason=outcome.message or ""),
        outcome.message)
