"""What RAC tells the agent after a failure it could not recover from, and how it says it."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, Field

from rac.models import RunStatus


@dataclass(slots=True)
class AttemptedAlternative:
    """An alternative tool RAC tried in place of the failed one."""

    tool: str
    error: str | None = None
    attempts: int = 0


@dataclass(slots=True)
class UndoneAction:
    """An action a rollback dealt with: compensated, failed to compensate, or could not touch.

    ``happened`` says whether its effect happened: ``"yes"``, ``"no"`` (a lookup showed it
    did not), ``"maybe"`` (in doubt), ``"running"`` (still under way); ``error`` says why it is
    where it is (the failed undo, the reason it is in doubt or kept). ``ref`` is a short handle
    for it (the first id its result holds)."""

    seq: int
    tool: str
    compensator: str | None = None
    error: str | None = None
    ref: str | None = None
    happened: str = "yes"


class RecoveryReport(BaseModel):
    """The outcome of an unrecoverable failure: what failed, what RAC tried, what it undid and
    what is left live. Nothing is listed as undone that was not."""

    run_id: str
    scope: str = "0"
    failed_tool: str | None = None
    failed_seq: int | None = None
    error: str | None = None
    error_kind: str | None = None
    attempts: int = 0
    alternatives: list[AttemptedAlternative] = Field(default_factory=list)
    compensated: list[UndoneAction] = Field(default_factory=list)
    compensation_failed: list[UndoneAction] = Field(default_factory=list)
    held: list[UndoneAction] = Field(default_factory=list)
    not_undoable: list[UndoneAction] = Field(default_factory=list)
    in_flight: list[UndoneAction] = Field(default_factory=list)
    blocked: list[UndoneAction] = Field(default_factory=list)
    in_doubt: list[UndoneAction] = Field(default_factory=list)
    not_happened: list[UndoneAction] = Field(default_factory=list)
    status: RunStatus = RunStatus.COMPENSATED
    reason: str = ""

    @property
    def left_live(self) -> list[UndoneAction]:
        """Side effects that are, or may be, still in the world after the rollback."""
        return [*self.compensation_failed, *self.held, *self.blocked, *self.not_undoable,
                *self.in_doubt]

    @property
    def clean(self) -> bool:
        """True only if every side effect of the scope that may have happened was undone (and
        the run's status, computed from its records, agrees)."""
        return (not self.left_live and not self.in_flight
                and self.status in (RunStatus.COMPENSATED, RunStatus.RUNNING))

    def render(self) -> str:
        """The default short text for the agent (plugins may replace it through
        ``rac_render_report``)."""
        return render_report(self)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _name(u: UndoneAction) -> str:
    return f"{u.tool} {u.ref}" if u.ref else u.tool


def render_report(report: RecoveryReport) -> str:
    """Render ``report`` in a few lines: the failure, what was undone, what is left, next step."""
    lines: list[str] = []
    if report.failed_tool:
        head = (f"RAC: {report.failed_tool} failed ({report.error_kind or 'error'}: "
                f"{report.error}) after {_plural(report.attempts, 'attempt')}")
        if report.alternatives:
            alts = ", ".join(f"{a.tool} ({'failed: ' + a.error if a.error else 'failed'})"
                             for a in report.alternatives)
            head += f"; alternatives tried: {alts}"
        lines.append(head + ".")
    else:
        lines.append(f"RAC: rolled back this run ({report.reason or 'aborted'}).")
    if report.compensated:
        done = ", ".join(f"{_name(u)} (via {u.compensator})" for u in report.compensated)
        lines.append(f"Undone, newest first: {done}.")
    if report.in_flight:
        lines.append("Still running, will be undone when it completes: "
                     + ", ".join(_name(u) for u in report.in_flight) + ".")
    left = report.left_live
    if left:
        parts = []
        for u in report.compensation_failed:
            parts.append(f"{_name(u)} (undo via {u.compensator} failed: {u.error})")
        for u in report.held:
            parts.append(f"{_name(u)} (undo held for approval)")
        for u in report.blocked:
            parts.append(f"{_name(u)} (kept: {u.error})")
        for u in report.not_undoable:
            parts.append(f"{_name(u)} (cannot be undone{': ' + u.error if u.error else ''})")
        for u in report.in_doubt:
            parts.append(f"{_name(u)} (MAY HAVE HAPPENED, not undone: {u.error})")
        lines.append("STILL LIVE: " + "; ".join(parts) + ". A person must check these.")
    if report.not_happened:
        lines.append("Checked and did not happen: "
                     + ", ".join(_name(u) for u in report.not_happened) + ".")
    if not report.compensated and not left and not report.in_flight:
        lines.append("Nothing earlier in this run needed undoing.")
    if report.clean:
        lines.append("The world is back to how it was before these steps; "
                     "replan from here (e.g. another option) or tell the user.")
    elif left:
        lines.append("Do not retry the failed step blindly; tell the user what is still live.")
    else:
        lines.append("Not everything is settled yet; do not assume the world is back.")
    return "\n".join(lines)
