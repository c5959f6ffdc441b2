"""What RAC tells the agent after a failure it could not recover from, and how it says it."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import BaseModel, Field

from rac.lifecycle import CLEAN_AFTER_ROLLBACK
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
    #: of ``compensated``, those undone through a model-proposed pair nobody reviewed
    #: (``policy="auto"``): the report is not clean on their account alone
    unreviewed: list[UndoneAction] = Field(default_factory=list)
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
        return (not self.left_live and not self.in_flight and not self.unreviewed
                and self.status in CLEAN_AFTER_ROLLBACK)

    def render(self) -> str:
        """The default short text for the agent (plugins may replace it through
        ``rac_render_report``)."""
        return render_report(self)


#: A clause of RAC's own error texts that tells the developer what to declare or register
#: (``declare it, e.g. Compensation(...)``, ``register it with rac.RAC(tools=[...])``): kept
#: in the log and ``rac show``, cut from what the model reads.
_ADVICE = re.compile(
    r"(?:[:;,]\s*|\s+)\(?(?:declare (?:it|them)|register it|give it to the agent"
    r"|add it to the|pass the function|give each agent|write the function as)\b.*$",
    re.IGNORECASE | re.DOTALL)
#: A parenthesised piece of code in an error text (``(rac.Compensation(..., lookup=...))``).
_CODE = re.compile(r"\s*\((?=[^()]*(?:rac\.|Compensation\(|Lookup\(|tools=\[))"
                   r"(?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)")
#: A file-system path (``/home/ann/app/world.db``, ``C:\\data\\x.db``, ``file:///...``):
#: where a process keeps its files is nothing a model should read, or repeat to a user.
_PATH = re.compile(r"\b(?:file|sqlite3?)://+(?:[\w.@+-]+/)*[\w.@+-]*"
                   r"|(?<![\w:/.~-])(?:~|\.{1,2})?/(?:[\w.@+-]+/)+[\w.@+-]*"
                   r"|\b[A-Za-z]:\\(?:[^\\\s'\"]+\\)*[^\\\s'\",;)]*")


def for_model(text: str) -> str:
    """``text`` (one error or refusal RAC hands to the agent) as the model may read it: no
    file-system paths (``<path>`` instead) and no advice to the developer on what to declare
    or register (that stays in the log, in ``rac show`` and in the structured events)."""
    return _PATH.sub("<path>", _reason(text))


def _reason(text: str | None) -> str:
    """One error text without the advice to the developer it may end with."""
    return _ADVICE.sub("", _CODE.sub("", text or ""))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _name(u: UndoneAction) -> str:
    return f"{u.tool} {u.ref}" if u.ref else u.tool


def render_report(report: RecoveryReport) -> str:
    """Render ``report`` for the agent in a few lines: the failure, what was undone, what is
    left, next step. No file-system path and no advice to the developer reaches the text
    (see :func:`for_model`); the records keep them for the operator."""
    lines: list[str] = []
    if report.failed_tool:
        head = (f"RAC: {report.failed_tool} failed ({report.error_kind or 'error'}: "
                f"{_reason(report.error)}) after {_plural(report.attempts, 'attempt')}")
        if report.alternatives:
            alts = ", ".join(
                f"{a.tool} ({'failed: ' + _reason(a.error) if a.error else 'failed'})"
                for a in report.alternatives)
            head += f"; alternatives tried: {alts}"
        lines.append(head + ".")
    else:
        lines.append(f"RAC: rolled back this run ({report.reason or 'aborted'}).")
    if report.compensated:
        done = ", ".join(f"{_name(u)} (via {u.compensator})" for u in report.compensated)
        lines.append(f"Undone, newest first: {done}.")
    if report.unreviewed:
        lines.append("Undone through a model-proposed pair nobody reviewed: "
                     + ", ".join(f"{_name(u)} (via {u.compensator})" for u in report.unreviewed)
                     + "; a person should confirm these.")
    if report.in_flight:
        lines.append("Still running, will be undone when it completes: "
                     + ", ".join(_name(u) for u in report.in_flight) + ".")
    left = report.left_live
    if left:
        parts = []
        for u in report.compensation_failed:
            parts.append(f"{_name(u)} (undo via {u.compensator} failed: {_reason(u.error)})")
        for u in report.held:
            parts.append(f"{_name(u)} (undo held for approval)")
        for u in report.blocked:
            parts.append(f"{_name(u)} (kept: {_reason(u.error)})")
        for u in report.not_undoable:
            why = f": {_reason(u.error)}" if u.error else ""
            parts.append(f"{_name(u)} (cannot be undone{why})")
        for u in report.in_doubt:
            parts.append(f"{_name(u)} (MAY HAVE HAPPENED, not undone: {_reason(u.error)})")
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
    return _PATH.sub("<path>", "\n".join(lines))
