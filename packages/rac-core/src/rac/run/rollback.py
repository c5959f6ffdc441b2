"""A rollback: undo what a scope did, newest first and dependents first, then say what
happened. What the report names as live is derived from the records once the rollback is done,
so nothing that may still be in the world can be left out of it."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rac.classify import ErrorKind
from rac.dependencies import first_result_id
from rac.effects import Flow
from rac.lifecycle import happened_of, in_scope, may_be_live, uncertain
from rac.models import Record, RecordKind, RecordStatus
from rac.ordering import dependents_of
from rac.report import AttemptedAlternative, RecoveryReport, UndoneAction
from rac.run.compensation import Undo, compensate, undo_sources
from rac.run.planning import UNDOABLE
from rac.run.reconcile import ABSENT, settle
from rac.run.values import error_text
from rac.serialize import redact_text

if TYPE_CHECKING:
    from rac.run.run import Run

R = RecordStatus
#: A rollback of more records than this says how far it got every this many records (a
#: ``rac.rollback`` event with ``status="progress"``, ``done`` and ``total``).
PROGRESS_EVERY = 500


@dataclass(slots=True)
class Failure:
    """The call whose failure started a rollback."""

    tool: str
    seq: int
    error: BaseException
    kind: ErrorKind
    attempts: int


def rollback_flow(run: Run, scope: str, *, reason: str, failure: Failure | None = None,
                  alternatives: list[AttemptedAlternative] | None = None,
                  statuses: Collection[RecordStatus] = UNDOABLE,
                  keep: Mapping[int, str] | None = None) -> Flow[RecoveryReport]:
    """Roll back ``scope``; ``statuses`` are the record statuses it takes up (recovery and
    resume add interrupted compensations and dead letters); ``keep``: records to leave alone,
    seq -> why (named in the report as kept)."""
    engine = run.engine
    state = run.state
    with run.lock:
        run.log.set_status(state.rollback_status(run.status))
        plan = state.rollback_began(scope, run.log.records.values(), statuses=statuses,
                                    keep=keep)
    seqs = [r.seq for r in plan.order]
    run.log.event("rac.rollback", scope=scope, status="started", seqs=seqs, reason=reason)
    if engine.hooks.listened("rac_rollback_started"):
        engine.hooks.notify("rac_rollback_started", run_id=run.run_id, scope=scope, seqs=seqs,
                            reason=reason)
    #: seq -> what this rollback found out about it (the compensator, an error, a reason)
    notes: dict[int, Undo] = {}
    dependents = dependents_of(plan.order)
    total = len(plan.order)
    try:
        for done, rec in enumerate(plan.order):
            if done and done % PROGRESS_EVERY == 0:
                run.log.event("rac.rollback", scope=scope, status="progress", done=done,
                              total=total)
            blockers = [d for d in dependents.get(rec.seq, ()) if d != rec.seq
                        and may_be_live(run.log.records[d], state.in_flight)]
            if blockers:
                b = run.log.records[blockers[0]]
                notes[rec.seq] = Undo("blocked", None,
                                      f"{b.tool} (#{b.seq}) depends on it and is still live")
                continue
            if not rec.compensable:
                continue
            if rec.status in (R.PENDING, R.IN_DOUBT):
                settled = yield from _settle(run, rec)
                if settled is not None:
                    notes[rec.seq] = settled
                    if settled.outcome == "absent":
                        continue
            notes[rec.seq] = yield from compensate(run, rec)
    finally:
        with run.lock:
            state.rollback_ended(scope, plan)
    with run.lock:
        status = state.rollback_outcome(scope, run.log.records.values())
        report = _report(run, scope, reason, failure, alternatives or [], plan.kept, notes,
                         status, [r.seq for r in plan.order])
        run.log.write(status=status, durable=False,
                      run_fields={"report": redact_text(engine.render(report)[:9000])[:8000]})
        state.rollback_reported(report, [s for s, n in notes.items()
                                         if n.outcome == "compensated"])
    run.log.event("rac.rollback", level="info" if report.clean else "warning", scope=scope,
                  status=str(report.status), compensated=len(report.compensated),
                  left_live=len(report.left_live))
    if engine.hooks.listened("rac_rollback_finished"):
        engine.hooks.notify("rac_rollback_finished", run_id=run.run_id, scope=scope,
                            report=report)
    return report


def _settle(run: Run, rec: Record) -> Flow[Undo | None]:
    """For a call that may have happened: ask its lookup. Found: it becomes completed with the
    found result (then compensated as usual). Absent: it did not happen. None: no lookup, or
    it could not tell (the compensation then works from the arguments alone)."""
    lookup = run.engine.registry.lookups.get(rec.tool)
    if lookup is None:
        return None
    args, _result, _before = undo_sources(run, rec)
    seen = yield from settle(run, rec, lookup, args, shielded=True)
    if seen.verdict == ABSENT:
        return Undo("absent", None, seen.reason)
    return None


def _doubt_text(undo_error: str | None, why: str | None) -> str:
    """What the report says of a call that may have happened and was not undone: why it could
    not be undone and why it may have happened (the ambiguous failure, or the lookup that
    could not tell), so the agent and the person checking see both."""
    if not why:
        return undo_error or "it may have taken effect"
    if not undo_error or why in undo_error:
        return why
    return f"{undo_error}; {why}"


def _ref(rec: Record) -> str | None:
    found = first_result_id(rec.result)
    return found if type(found) is str or found is None else str(found)


def _unreviewed(run: Run, compensated: list[UndoneAction]) -> list[UndoneAction]:
    """The undone actions whose undo ran through a pair ``policy="auto"`` put in use that no
    person reviewed (status ``auto`` in the log's pairs): undone, but not on a person's word."""
    if not compensated:
        return []
    from rac.resolver.book import pairs_known

    auto = {(p.tool, p.compensator) for p in pairs_known(run.engine.store) if p.status == "auto"}
    if not auto:
        return []
    return [u for u in compensated if (u.tool, u.compensator) in auto]


def _report(run: Run, scope: str, reason: str, failure: Failure | None,
            alternatives: list[AttemptedAlternative], kept: dict[int, str],
            notes: dict[int, Undo], status: Any, order: list[int]) -> RecoveryReport:
    """The report, read off the records: every side effect of the scope that may still be
    live is named, with the reason this rollback found (or an earlier one left)."""
    compensated: list[UndoneAction] = []
    failed: list[UndoneAction] = []
    held: list[UndoneAction] = []
    not_undoable: list[UndoneAction] = []
    blocked: list[UndoneAction] = []
    in_doubt: list[UndoneAction] = []
    not_happened: list[UndoneAction] = []
    in_flight: list[UndoneAction] = []
    place = {seq: i for i, seq in enumerate(order)}
    for rec in sorted(run.log.records.values(),
                      key=lambda r: (place.get(r.seq, len(place)), -r.seq)):
        if rec.kind is not RecordKind.ACTION or rec.read_only or not in_scope(rec.scope, scope):
            continue
        note = notes.get(rec.seq)
        item = UndoneAction(rec.seq, rec.tool, note.compensator if note else None,
                            note.error if note else None, _ref(rec))
        st = rec.status
        if rec.seq in run.state.in_flight:
            item.happened = "running"
            in_flight.append(item)
        elif st is R.COMPENSATED:
            if note is not None and note.outcome == "compensated":
                # undone whether or not it happened (an in-doubt call undone by its arguments)
                item.happened = "maybe" if happened_of(rec) == "maybe" else "yes"
                compensated.append(item)
        elif note is not None and note.outcome == "absent":
            item.happened = "no"
            not_happened.append(item)
        elif st in (R.FAILED, R.RESOLVED, R.COMPENSATING):
            if st is R.COMPENSATING:  # another rollback is undoing it right now
                item.happened, item.error = "yes", "being undone by another rollback"
                in_flight.append(item)
        elif st in (R.PENDING, R.IN_DOUBT):
            item.happened = "maybe"
            item.error = _doubt_text(item.error, rec.note or rec.error)
            in_doubt.append(item)
        elif st is R.COMPENSATION_FAILED:
            item.error = item.error or rec.error
            if uncertain(rec):
                item.happened = "maybe"
                item.error = _doubt_text(item.error, rec.note)
                in_doubt.append(item)
            else:
                item.happened = "yes"
                failed.append(item)
        elif st is R.COMPLETED:
            item.happened = "yes"
            if rec.seq in kept:
                item.error = kept[rec.seq]
                blocked.append(item)
            elif note is not None and note.outcome == "blocked":
                blocked.append(item)
            elif note is not None and note.outcome == "held":
                held.append(item)
            elif not rec.compensable or (note is not None and note.outcome == "none"):
                item.error = item.error or rec.note
                not_undoable.append(item)
            else:
                item.error = "not undone by this rollback"
                failed.append(item)
    fields: dict[str, Any] = {
        "run_id": run.run_id, "scope": scope, "reason": reason, "alternatives": alternatives,
        "compensated": compensated, "unreviewed": _unreviewed(run, compensated),
        "compensation_failed": failed, "held": held,
        "not_undoable": not_undoable, "blocked": blocked, "in_doubt": in_doubt,
        "not_happened": not_happened, "in_flight": in_flight, "status": status}
    if failure is not None:
        fields.update(failed_tool=failure.tool, failed_seq=failure.seq,
                      error=error_text(failure.error), error_kind=str(failure.kind),
                      attempts=failure.attempts)
    return RecoveryReport(**fields)
