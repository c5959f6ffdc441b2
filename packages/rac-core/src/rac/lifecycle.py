"""The lifecycle of records and runs, written once as tables, and the one function that
decides what a run's status is after a rollback.

Every status change RAC writes is checked against :data:`RECORD_TRANSITIONS` or
:data:`RUN_TRANSITIONS` (:func:`check_record`, :func:`check_run`);
:class:`rac.testing.LifecycleStore` wraps any store and enforces the same tables on every write,
so the whole test suite proves that nothing bypasses them.

The all-clear is computed here, not assumed: :func:`status_after_rollback` says
``compensated`` only when no side effect of the scope that may have happened is still live.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from enum import StrEnum

from rac.errors import RACError
from rac.models import Record, RecordKind, RecordStatus, RunStatus

R = RecordStatus
S = RunStatus

#: Legal status changes of an action record.
RECORD_TRANSITIONS: dict[RecordStatus, frozenset[RecordStatus]] = {
    # intent written: the call ran (completed), did not happen (failed), may have happened
    # and nothing could settle it (in_doubt); a crash leaves it pending for recovery, which
    # compensates it as in doubt, or an operator resolves it
    R.PENDING: frozenset({R.COMPLETED, R.FAILED, R.IN_DOUBT, R.COMPENSATING,
                          R.COMPENSATION_FAILED, R.RESOLVED}),
    # reconciled later (found: completed; absent: failed), or compensated as in doubt
    R.IN_DOUBT: frozenset({R.COMPLETED, R.FAILED, R.COMPENSATING, R.COMPENSATION_FAILED,
                           R.RESOLVED}),
    R.COMPLETED: frozenset({R.COMPENSATING, R.COMPENSATION_FAILED, R.RESOLVED}),
    R.FAILED: frozenset(),
    # compensating -> compensating: recovery runs an interrupted compensation again
    R.COMPENSATING: frozenset({R.COMPENSATED, R.COMPENSATION_FAILED, R.COMPENSATING}),
    R.COMPENSATED: frozenset(),
    # a dead letter: resumed (compensating) or settled by an operator
    R.COMPENSATION_FAILED: frozenset({R.COMPENSATING, R.RESOLVED}),
    R.RESOLVED: frozenset(),
}

#: Legal status changes of a compensation record.
COMPENSATION_TRANSITIONS: dict[RecordStatus, frozenset[RecordStatus]] = {
    R.PENDING: frozenset({R.COMPLETED, R.FAILED}),
    R.COMPLETED: frozenset(),
    R.FAILED: frozenset(),
}

#: Legal status changes of a run. ``needs_attention`` is sticky: only a rollback (a later
#: failure, ``rac resume``) or an operator's resolution leaves it; calls made meanwhile do not.
RUN_TRANSITIONS: dict[RunStatus, frozenset[RunStatus]] = {
    S.RUNNING: frozenset({S.COMPLETED, S.COMPENSATING}),
    S.COMPLETED: frozenset({S.RUNNING, S.COMPENSATING}),
    # a nested scope rolled back cleanly: the run goes on
    S.COMPENSATING: frozenset({S.COMPENSATED, S.NEEDS_ATTENTION, S.RUNNING, S.COMPLETED}),
    S.COMPENSATED: frozenset({S.RUNNING, S.COMPENSATING}),
    S.NEEDS_ATTENTION: frozenset({S.COMPENSATING, S.RESOLVED}),
    S.RESOLVED: frozenset({S.RUNNING, S.COMPENSATING}),
}


class RunEvent(StrEnum):
    """What happens to a run, as :data:`RUN_EVENTS` reads it: a call begins, a step of the
    run is done (its block closed, or its adapter finished it, idle and with no call
    interrupted), a rollback begins, an operator resolves what it left live. How a rollback
    ends is computed from the records (:func:`status_after_rollback`)."""

    CALL_BEGAN = "call_began"
    STEP_DONE = "step_done"
    ROLLBACK_BEGAN = "rollback_began"
    RESOLVED = "resolved"


#: The run's next status, by (status, event); a pair that is not here leaves the status as it
#: is (a call that begins in a ``needs_attention`` run leaves it ``needs_attention``: only a
#: rollback or a resolution leaves that status). The one place a run's status is decided,
#: with :func:`status_after_rollback`; every entry is a legal change of
#: :data:`RUN_TRANSITIONS` (a test holds it to that).
RUN_EVENTS: dict[tuple[RunStatus, RunEvent], RunStatus] = {
    **{(idle, RunEvent.CALL_BEGAN): S.RUNNING
       for idle in (S.COMPLETED, S.COMPENSATED, S.RESOLVED)},
    (S.RUNNING, RunEvent.STEP_DONE): S.COMPLETED,
    **{(status, RunEvent.ROLLBACK_BEGAN): S.COMPENSATING for status in S},
    (S.NEEDS_ATTENTION, RunEvent.RESOLVED): S.RESOLVED,
}
#: Statuses of a run that is not being worked on and not unfinished: a call reopens it.
IDLE = frozenset(s for (s, e), _ in RUN_EVENTS.items() if e is RunEvent.CALL_BEGAN)
#: Statuses of a run a dead process may have left unfinished.
UNFINISHED = frozenset({S.RUNNING, S.COMPENSATING})
#: Statuses of a run whose last rollback did what it could: undone, or waiting for a person.
ROLLED_BACK = frozenset({S.COMPENSATED, S.NEEDS_ATTENTION})
#: Statuses of a run ``rac resume`` takes up: unfinished, or waiting for a person.
RESUMABLE = UNFINISHED | {S.NEEDS_ATTENTION}
#: Statuses of a run no process works on: idle, or waiting for a person (every status but
#: the unfinished ones).
AT_REST = frozenset(S) - UNFINISHED
#: The statuses :func:`status_after_rollback` gives a rollback that left nothing live:
#: ``compensated`` (the run), ``running`` (a nested scope: the run goes on).
CLEAN_AFTER_ROLLBACK = frozenset({S.COMPENSATED, S.RUNNING})


# The members the functions below compare with, as module constants: reading a member off
# its enum class goes through the enum's metaclass at every use (about 0.1 µs each), and
# these functions run at every write of every call.
_PENDING, _COMPLETED, _FAILED, _IN_DOUBT = R.PENDING, R.COMPLETED, R.FAILED, R.IN_DOUBT
_COMPENSATING, _COMPENSATION_FAILED = R.COMPENSATING, R.COMPENSATION_FAILED
_ACTION, _COMPENSATION = RecordKind.ACTION, RecordKind.COMPENSATION
_S_COMPENSATING, _S_NEEDS_ATTENTION = S.COMPENSATING, S.NEEDS_ATTENTION
_S_RUNNING, _S_COMPENSATED = S.RUNNING, S.COMPENSATED


def run_after(status: RunStatus, event: RunEvent) -> RunStatus:
    """The run's status after ``event`` (see :data:`RUN_EVENTS`)."""
    return RUN_EVENTS.get((status, event), status)


class LifecycleError(RACError):
    """A status change that the lifecycle tables forbid: a bug in RAC or in a store."""


def check_record(record: Record | RecordKind, previous: RecordStatus,
                 new: RecordStatus) -> None:
    """Raise :class:`LifecycleError` unless ``previous -> new`` is legal for the record."""
    if previous is new and previous is not _COMPENSATING:
        return
    kind = record if type(record) is RecordKind else record.kind  # type: ignore[union-attr]
    table = COMPENSATION_TRANSITIONS if kind is _COMPENSATION else RECORD_TRANSITIONS
    allowed = table.get(previous)
    if allowed is None or new not in allowed:
        where = f"{record.run_id}#{record.seq} ({record.tool})" \
            if isinstance(record, Record) else str(kind)
        raise LifecycleError(f"illegal status change of {where}: {previous} -> {new}")


def check_run(run_id: str, previous: RunStatus, new: RunStatus) -> None:
    """Raise :class:`LifecycleError` unless ``previous -> new`` is legal for a run."""
    if previous is not new and new not in RUN_TRANSITIONS.get(previous, frozenset()):
        raise LifecycleError(f"illegal status change of run {run_id}: {previous} -> {new}")


#: Statuses of an action whose effect may be in the world.
MAYBE_LIVE = frozenset({R.COMPLETED, R.COMPENSATING, R.COMPENSATION_FAILED, R.IN_DOUBT,
                        _PENDING})
#: Statuses that need a person (or a resume) before a run can be called clean.
NEEDS_A_PERSON = frozenset({R.COMPENSATION_FAILED, R.IN_DOUBT})


#: How RAC ends the error of a dead-lettered action that may not have happened (an in-doubt
#: call whose undo failed).
UNCERTAIN_NOTE = "(the call may or may not have taken effect)"
#: The endings of that error RAC has written, this version's first (earlier logs load too).
UNCERTAIN_ENDINGS = (UNCERTAIN_NOTE, "(the call is in doubt: it may or may not have taken effect)")


#: Notes RAC writes on a compensation record whose undo may have taken effect (an ambiguous
#: failure not repeated; an attempt a crash interrupted, as recovery closes it).
MAYBE_UNDONE_NOTES = ("may have taken effect", "in_doubt")
#: The note RAC writes on an action in doubt (its ambiguous failure, or the lookup that could
#: not tell): kept when its undo begins.
MAYBE_HAPPENED_NOTE = "may have happened"


def happened_of(record: Record) -> str:
    """Whether ``record``'s effect happened: ``"yes"``, ``"no"`` or ``"maybe"``. An intent
    or a call in doubt is ``maybe``, a failure ``no``, an outcome ``yes``, whatever wrote
    them; once its undo began (compensating, a dead letter, resolved, undone) what was known
    of the call is its ``happened`` field, or, in a log written before that field, the
    wording RAC wrote then."""
    st = record.status
    if record.kind is _COMPENSATION:
        if st is _PENDING:
            return "maybe"
        if st is _COMPLETED:
            return "yes"
        if record.happened:
            return record.happened
        return "maybe" if (record.note or "").startswith(MAYBE_UNDONE_NOTES) else "no"
    if st in (_PENDING, _IN_DOUBT):
        return "maybe"
    if st is _FAILED:
        return "no"
    if st is _COMPLETED:
        return "yes"
    if record.happened:
        return record.happened
    if (record.error or "").endswith(UNCERTAIN_ENDINGS) or (record.note or "").startswith(
            MAYBE_HAPPENED_NOTE):
        return "maybe"
    return "yes"


#: What ``happened`` becomes, by (kind, new status), where no note can change it (the
#: writes of every call: :func:`happened_after` gives the same; a change not here is
#: decided by it).
HAPPENED_ON: dict[tuple[RecordKind, RecordStatus], str] = {
    (_ACTION, _PENDING): "maybe", (_ACTION, _IN_DOUBT): "maybe", (_ACTION, _COMPLETED): "yes",
    (_ACTION, _FAILED): "no", (_COMPENSATION, _PENDING): "maybe",
    (_COMPENSATION, _COMPLETED): "yes"}


def happened_after(record: Record, new: RecordStatus, note: str | None = None) -> str:
    """What ``record``'s ``happened`` becomes as its status changes to ``new`` (``note``:
    the note written with the change, if any): an intent or a call in doubt, ``maybe``; an
    outcome, ``yes``; a failure (evidence it did not happen), ``no``; an undo, a dead letter or
    a resolution keep what was known of the call. For a compensation record, a failure
    marked as possibly done (``MAYBE_UNDONE_NOTES``) is ``maybe``."""
    if record.kind is _COMPENSATION:
        if new is _PENDING:
            return "maybe"
        if new is _COMPLETED:
            return "yes"
        text = note if note is not None else record.note
        return "maybe" if (text or "").startswith(MAYBE_UNDONE_NOTES) else "no"
    if new in (_PENDING, _IN_DOUBT):
        return "maybe"
    if new is _COMPLETED:
        return "yes"
    if new is _FAILED:
        return "no"
    return happened_of(record)


def uncertain(record: Record) -> bool:
    """True if ``record`` is an action that may or may not have happened: pending, in doubt,
    or being undone or dead-lettered while it may not have happened (its ``happened`` is
    ``maybe``, kept through its undo, a crash and a resume; in logs written before that field,
    the wording RAC ended the dead letter's error with)."""
    if record.status in (_PENDING, _IN_DOUBT):
        return True
    return record.status in (_COMPENSATING, _COMPENSATION_FAILED) \
        and happened_of(record) == "maybe"


def in_scope(record_scope: str, scope: str) -> bool:
    """True if a record of ``record_scope`` belongs to ``scope`` (``"0"`` is the whole run)."""
    return scope == "0" or record_scope == scope or record_scope.startswith(scope + ".")


def may_be_live(record: Record, running: Collection[int] = ()) -> bool:
    """True if ``record`` is a side-effecting action whose effect may be in the world (a call
    still ``running`` is not counted: it is settled when it returns)."""
    if record.kind is not _ACTION or record.read_only:
        return False
    if record.status is _PENDING:
        return record.seq not in running
    return record.status in MAYBE_LIVE


def status_after_rollback(records: Iterable[Record], scope: str, *,
                          running: Collection[int] = (),
                          unsettled: Collection[int] = ()) -> RunStatus:
    """The run's status once a rollback of ``scope`` has done what it could.

    ``compensating`` while a call of the scope is still running or being undone
    (``unsettled``); ``needs_attention`` while any side effect of the scope may still be live
    (not undone, in doubt, a dead letter, held, kept for a dependent, not undoable); for a
    nested scope that is clean, the run goes on (``running``) unless something elsewhere in the
    run still needs a person; else ``compensated``.
    """
    attention = False
    elsewhere = False
    for r in records:
        if r.kind is not _ACTION or r.read_only:
            continue
        mine = in_scope(r.scope, scope)
        if mine and (r.seq in unsettled or (r.status is _PENDING and r.seq in running)):
            return _S_COMPENSATING
        if mine and may_be_live(r, running):
            attention = True
        elif not mine and r.status in NEEDS_A_PERSON:
            elsewhere = True
    if attention:
        return _S_NEEDS_ATTENTION
    if scope != "0":
        return _S_NEEDS_ATTENTION if elsewhere else _S_RUNNING
    return _S_COMPENSATED


__all__ = ["AT_REST", "CLEAN_AFTER_ROLLBACK", "COMPENSATION_TRANSITIONS", "IDLE", "LifecycleError", "HAPPENED_ON", "MAYBE_HAPPENED_NOTE",
           "MAYBE_LIVE", "MAYBE_UNDONE_NOTES", "RECORD_TRANSITIONS", "RESUMABLE", "ROLLED_BACK",
           "RUN_EVENTS", "RUN_TRANSITIONS", "RunEvent", "UNCERTAIN_ENDINGS", "UNCERTAIN_NOTE",
           "UNFINISHED",
           "check_record", "check_run", "happened_after", "happened_of", "in_scope",
           "may_be_live", "run_after", "status_after_rollback", "uncertain"]
