"""Rollback planning: what a rollback of a scope will undo, in which order, and what it must
leave alone. A pure function of the records (no I/O, no locks), so it can be read and tested on
its own."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from rac.lifecycle import in_scope, may_be_live
from rac.models import Record, RecordKind, RecordStatus
from rac.ordering import rollback_order

R = RecordStatus


@dataclass(slots=True)
class RollbackPlan:
    """The plan of one rollback.

    ``order``: the records to undo, newest first and dependents first. ``kept``: records of
    the scope left alone because a live record outside the scope depends on them (seq -> the
    reason). ``running``: calls of the scope still running (undone when they return).
    """

    order: list[Record] = field(default_factory=list)
    kept: dict[int, str] = field(default_factory=dict)
    running: list[Record] = field(default_factory=list)


#: What a rollback undoes: effects that happened or may have.
UNDOABLE = frozenset({R.COMPLETED, R.IN_DOUBT, R.PENDING})
#: What recovery and resume also take up: an interrupted compensation, a dead letter.
REQUEUED = frozenset({R.COMPENSATING, R.COMPENSATION_FAILED})


def plan_rollback(records: Iterable[Record], scope: str, *, running: Collection[int] = (),
                  claimed: Collection[int] = (),
                  statuses: Collection[RecordStatus] = UNDOABLE,
                  keep: Mapping[int, str] | None = None) -> RollbackPlan:
    """Plan the rollback of ``scope`` over a run's ``records``.

    A candidate is an action of the scope with side effects, whose status is in ``statuses``,
    that is not running (``running``: the seqs of calls under way) and not being undone by
    another rollback (``claimed``). A candidate that a record outside the scope depends on,
    while that record may still be live, is kept and named instead (undoing it would pull the
    ground from under the live one). ``keep`` names candidates the caller leaves alone
    (seq -> the reason; :func:`rac.undo.undo` keeps the effects that drifted since the run):
    they are kept and named the same way.
    """
    recs = [r for r in records if r.kind is RecordKind.ACTION]
    plan = RollbackPlan(kept=dict(keep or {}))
    candidates: list[Record] = []
    for r in recs:
        if r.read_only or not in_scope(r.scope, scope):
            continue
        if r.seq in running and r.status is R.PENDING:
            plan.running.append(r)
        elif r.status in statuses and r.seq not in claimed:
            candidates.append(r)
    if scope != "0" and candidates:
        wanted = {r.seq for r in candidates}
        for o in recs:
            if in_scope(o.scope, scope) or not (may_be_live(o, running) or o.seq in running):
                continue
            for dep in o.depends_on:
                if dep in wanted and dep not in plan.kept:
                    plan.kept[dep] = (f"{o.tool} (#{o.seq}), outside this scope, depends on it "
                                      "and is still live")
    plan.order = rollback_order([r for r in candidates if r.seq not in plan.kept])
    return plan
