"""Crash recovery: finish, from the log alone, the rollbacks of runs whose process died.

A run left ``running`` or ``compensating`` by a process that is gone is *abandoned*. Recovery
claims it (compare-and-set on the run's owner and lease, so of two racing recoverers exactly
one proceeds), rebuilds it from its records, and compensates every side effect it may have
made, newest first:

* completed actions, as a rollback would;
* in-doubt actions (intent written, no outcome, or ``in_doubt``): the action may or may not
  have happened. When a lookup is declared for its tool (:class:`rac.Lookup`), it is asked
  first: found, the effect is compensated from the found result; absent, nothing is done.
  Otherwise its compensator is called with what can be mapped without the result (the
  arguments, and the idempotency key the call was made with, as ``args["idempotency_key"]``);
  if the compensation needs the missing result, the action is named as possibly live;
* interrupted compensations (the action is ``compensating``): a compensation whose outcome was
  written is taken as done; one with no outcome is marked ``failed`` (in doubt: it may have
  taken effect). It is made again only where a repeat is safe (an ``idempotent`` compensator,
  or a ``keyed`` one, called with the same idempotency key); an ``unsafe`` one is settled by
  its own lookup (found: the undo is done; absent: it is made again) or, with none or when the
  lookup cannot tell, the action is left as a dead letter named as possibly undone, never
  repeated blindly (see :mod:`rac.run.compensation`).

Compensations that exhaust their retries are dead letters (``compensation_failed``) and the run
ends ``needs_attention``; :func:`resume` retries them after the cause is fixed.

Every operator path decides who works on a run with one predicate, :func:`ownership`: a run is
taken over only when nobody does (no owner, its lease expired, its process is gone). On a run
whose owner is alive, :func:`resume` retries only the dead letters and held compensations, never
the owner's newer work, and leaves the run's status to its owner; :func:`recover` leaves it
alone. :func:`resolve` settles only what a rollback left live, through the run's checked writer.

:func:`continue_run` reopens a live run to carry on from its log: the steps the agent asks for
are checked against the log, and a different step at a sequence number raises
:class:`rac.errors.SequenceMismatchError`, never a silent realignment.
"""

from __future__ import annotations

import asyncio
import functools
import os
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from rac.effects import drive_async, drive_sync
from rac.errors import ConflictError, RACError, SequenceMismatchError
from rac.events import emit
from rac.leases import claim
from rac.lifecycle import RESUMABLE, LifecycleError
from rac.lifecycle import UNFINISHED as _UNFINISHED
from rac.models import RELEASED, Record, RecordKind, RecordStatus, RunInfo, RunStatus
from rac.report import RecoveryReport, UndoneAction
from rac.run import AsyncInvoker, CallOutcome, Invoker, Run
from rac.serialize import store_value

if TYPE_CHECKING:
    from rac.effects import Flow
    from rac.engine import RAC

#: Statuses of a run that a dead process may have left unfinished.
UNFINISHED = tuple(sorted(_UNFINISHED))
#: How long a recoverer's claim holds before another may take the run over (seconds).
DEFAULT_LEASE_SECONDS = 300.0
#: Where the sequence numbers start that an operator's process writes into a run whose owner
#: is still writing it (``rac resume`` on a live owner's run): a range the owner's own counter
#: never reaches, so the two never collide, while two operators racing for the same dead
#: letter pick the same number, and the store's refusal of a duplicate ``(run_id, seq)`` is
#: their claim: exactly one of them goes on.
OPERATOR_SEQ_BASE = 1_000_000_000
#: Recovery writes the steps of a run's rollback this many at a time, in one durable commit,
#: and what is left when it finishes with the run (see :meth:`rac.run.log.RunLog.relax`): a
#: crashed run of 10,000 records is not 20,000 commits. A crash of the recovering process
#: loses at most this many compensations' records, which the next recovery runs again with
#: the same idempotency keys (as it already does for one a crash interrupted).
FLUSH_EVERY = 1000


@dataclass
class RecoveredRun:
    """What recovery did with one run.

    ``outcome`` is ``"compensated"`` or ``"needs_attention"`` (the run's status after recovery),
    ``"retried"`` (:func:`resume` on a run whose owner is alive: its dead letters were
    retried, ``report`` says how each ended, and the run's status is its owner's),
    ``"skipped"`` (its owner is alive, another recoverer holds it, or it finished meanwhile;
    ``reason`` says which) or ``"error"`` (recovery itself failed; the run was released so it
    can be claimed again).
    """

    run_id: str
    outcome: str
    status: RunStatus | None = None
    report: RecoveryReport | None = None
    reason: str | None = None

    @property
    def settled(self) -> bool:
        """True when nothing the command took up is left live: the run is compensated, or
        (``outcome == "retried"``, a live owner's run) every dead letter retried was undone."""
        if self.outcome == "compensated":
            return True
        return self.outcome == "retried" and self.report is not None \
            and not self.report.left_live

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe summary."""
        left = [a.seq for a in self.report.left_live] if self.report is not None else []
        return {"run_id": self.run_id, "outcome": self.outcome,
                "status": str(self.status) if self.status is not None else None,
                "reason": self.reason, "left_live": left}


# -- who is gone -------------------------------------------------------------------------------
def owner_is_dead(owner: str | None) -> bool | None:
    """Whether the process named by an owner string (``host:pid:nonce``) is gone: True or False
    for a process on this host, None when it cannot be told (another host, another format)."""
    if not owner:
        return True
    parts = owner.split(":")
    if len(parts) < 3 or parts[0] != socket.gethostname() or not parts[1].isdigit():
        return None
    try:
        os.kill(int(parts[1]), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    except OSError:
        return None
    return False


OwnerState = Literal["free", "self", "local", "live", "unknown"]


@dataclass(frozen=True, slots=True)
class Ownership:
    """Who works on a run, as far as its row in the log and this host can tell (see
    :func:`ownership`). ``state``: ``free`` (nobody: no owner, its owner left it, its lease
    expired, or its process is gone), ``self`` (the engine asking), ``local`` (another engine
    of the asking process: the caller can tell, and names the run when it knows it stopped),
    ``live`` (a holder under an unexpired lease, or another process on this host that is
    alive), ``unknown`` (a process on another host that holds no lease). ``reason`` says it in
    words, for reports."""

    state: OwnerState
    reason: str

    @property
    def free(self) -> bool:
        """True when nobody works on the run: it may be taken over."""
        return self.state == "free"


def ownership(engine: RAC, info: RunInfo, now: float) -> Ownership:
    """Who works on run ``info``: the one predicate ``resume``, ``recover`` and their CLI
    commands act on.

    It reads the run's ``owner`` and ``lease_until``: a run its owner left
    (:data:`rac.models.RELEASED`: its block ended, or a recoverer finished with it) is free; an
    unexpired lease is a live holder; an expired one frees the run; with no lease, the owner's
    process is looked up on this host (gone frees the run, alive keeps it; another host cannot
    be told). Live leases renewed by a heartbeat make the last case disappear: every live run
    then holds a lease.
    """
    owner = info.owner
    if owner is None:
        return Ownership("free", "it has no owner")
    if info.lease_until == RELEASED:  # this engine's own too: it is over in this process
        return Ownership("free", f"its owner {owner} has left it")
    if owner == engine.owner:
        return Ownership("self", "this engine owns it")
    if owner_is_dead(owner):  # a process of this host that is gone holds no lease
        return Ownership("free", f"its owner process {owner} is gone")
    if info.lease_until > now:
        return Ownership("live", f"{owner} is alive: it holds the run under a lease for "
                                 f"{info.lease_until - now:.0f} s more")
    if info.lease_until > 0:
        return Ownership("free", f"the lease of {owner} on it expired")
    if owner.split(":")[:2] == [socket.gethostname(), str(os.getpid())]:
        return Ownership("local", f"its owner {owner} is another engine of this process")
    dead = owner_is_dead(owner)
    if dead:
        return Ownership("free", f"its owner process {owner} is gone")
    if dead is False:
        return Ownership("live", f"its owner process {owner} is alive")
    return Ownership("unknown", f"its owner {owner} runs on another host and holds no lease")


def is_abandoned(engine: RAC, info: RunInfo, now: float, *,
                 stale_after: float | None = None) -> bool:
    """Whether a run is unfinished and nobody is working on it any more: it is unfinished and
    :func:`ownership` finds it free, or (``stale_after`` seconds given) its owner cannot be
    told and nothing was written to it for that long."""
    if info.status not in UNFINISHED:
        return False
    who = ownership(engine, info, now)
    if who.free:
        return True
    if who.state == "unknown" and stale_after is not None:
        last = max([info.updated_at, *(r.updated_at for r in engine.store.get_records(info.run_id))])
        return last <= now - stale_after
    return False


def find_unfinished(engine: RAC, *, stale_after: float | None = None) -> list[RunInfo]:
    """The abandoned runs of ``engine``'s log (see :func:`is_abandoned`), oldest first."""
    now = engine.clock.now()
    runs = engine.store.list_runs(status=UNFINISHED)
    return [r for r in reversed(runs) if is_abandoned(engine, r, now, stale_after=stale_after)]


# -- rebuilding a run --------------------------------------------------------------------------
#: What an interrupted compensation's record says (``rac show``, the run's report): what
#: recovery does with it depends on the compensator's effect class, and is never a blind repeat.
IN_DOUBT_COMPENSATION = (
    "in doubt: the process stopped before the outcome of this compensation was written, so it "
    "may have taken effect; recovery makes it again only if a repeat is safe (an idempotent "
    "compensator, or a keyed one with the same key), else its lookup settles it or the action "
    "is left named as possibly undone")


def rebuild(engine: RAC, info: RunInfo, records: list[Record], *, owner: str | None = None,
            lease_seconds: float = DEFAULT_LEASE_SECONDS) -> Run:
    """A :class:`Run` rebuilt from the log, its interrupted compensations settled: one whose
    outcome was written counts as done; one with an intent and no outcome is closed as failed
    (in doubt), and the rollback makes it again only where a repeat is safe (an idempotent or
    keyed compensator, with the same key); an unsafe one is settled by its lookup or left
    named, never repeated blindly. Every change
    is a legal status change written to the log, fenced with ``owner`` (default: the engine),
    who claimed the run, and its lease renewed while the run is worked on."""
    run = Run.from_log(engine, info, records)
    run.log.take_over(owner or engine.owner, lease_seconds)
    comps: dict[int, list[Record]] = {}
    for rec in records:
        if rec.kind is RecordKind.COMPENSATION and rec.compensates is not None:
            comps.setdefault(rec.compensates, []).append(rec)
    updates: list[tuple[Record, dict[str, Any]]] = []
    for crecs in comps.values():
        for crec in crecs:
            if crec.status is RecordStatus.PENDING:
                updates.append((crec, {
                    "status": RecordStatus.FAILED, "note": "in_doubt",
                    "error": IN_DOUBT_COMPENSATION}))
    for rec in records:
        if rec.kind is RecordKind.ACTION and rec.status is RecordStatus.COMPENSATING and any(
                c.status is RecordStatus.COMPLETED for c in comps.get(rec.seq, ())):
            updates.append((rec, {"status": RecordStatus.COMPENSATED}))
    with run.lock:  # one commit, flushed with the rollback's first compensation
        run.log.write(updates=updates, durable=False)
    return run


# -- claiming and finishing --------------------------------------------------------------------
_Prepared = tuple[Run | None, RecoveredRun | None]


def _prepare(engine: RAC, run_id: str, *, statuses: Iterable[RunStatus], lease_seconds: float,
             owner: str, retry_dead_letters: bool) -> _Prepared:
    store = engine.store
    seen = store.get_run(run_id)
    if seen is None or not claim(engine, seen, owner=owner, lease_seconds=lease_seconds):
        return None, RecoveredRun(run_id, "skipped", reason="claimed by another recoverer")
    info = store.get_run(run_id)
    if info is None:  # pragma: no cover - claim_run succeeded, so the run exists
        return None, RecoveredRun(run_id, "skipped", reason="no such run")
    wanted = set(statuses)
    if info.status not in wanted:
        _release(engine, run_id, keep_owner=True)
        return None, RecoveredRun(run_id, "skipped", info.status,
                                  reason=f"the run is {info.status}, nothing to recover")
    emit("rac.recovery", run_id=run_id, status="claimed", owner=owner,
         previous=str(info.status))
    run = rebuild(engine, info, store.get_records(run_id), owner=owner,
                  lease_seconds=lease_seconds)
    run.log.relax(FLUSH_EVERY)
    return run, None


def _release(engine: RAC, run_id: str, *, keep_owner: bool) -> None:
    """End the lease so that the run can be claimed again (by ``resume``, or after an error):
    the recoverer has left it."""
    fields: dict[str, Any] = {"lease_until": RELEASED}
    if not keep_owner:
        fields["owner"] = None
    engine.store.update_run(run_id, **fields)


def _rollback(run: Run, reason: str, retry_dead_letters: bool) -> Flow[RecoveryReport]:
    requeue = [RecordStatus.COMPENSATING]
    if retry_dead_letters:
        requeue.append(RecordStatus.COMPENSATION_FAILED)
    return run.rollback_flow("0", reason=reason, requeue=requeue)


def _finish(engine: RAC, run: Run, report: RecoveryReport) -> RecoveredRun:
    status = run.status
    summary = None
    if report.left_live:
        summary = "left live: " + ", ".join(f"#{a.seq} {a.tool}" for a in report.left_live)
    run.log.release()
    run.log.relax(0)  # what the last batch holds, in one durable commit
    # then the summary and the lease released
    engine.store.update_run(run.run_id, summary=summary, lease_until=RELEASED)
    emit("rac.recovery", level="info" if status is RunStatus.COMPENSATED else "warning",
         run_id=run.run_id, status=str(status), compensated=len(report.compensated),
         left_live=len(report.left_live))
    return RecoveredRun(run.run_id, str(status), status, report)


def _failed(engine: RAC, run_id: str, err: Exception) -> RecoveredRun:
    emit("rac.recovery", level="error", run_id=run_id, status="error",
         error=f"{type(err).__name__}: {err}")
    try:
        _release(engine, run_id, keep_owner=False)
    except Exception as release_err:  # noqa: BLE001 - the lease then simply expires
        emit("rac.recovery", level="error", run_id=run_id, status="release_failed",
             error=str(release_err))
    return RecoveredRun(run_id, "error", reason=f"{type(err).__name__}: {err}")


def _targets(engine: RAC, run_ids: Iterable[str] | None, stale_after: float | None
             ) -> list[str]:
    if run_ids is None:
        return [r.run_id for r in find_unfinished(engine, stale_after=stale_after)]
    return list(run_ids)


_RECOVER_REASON = "recovery: the process running this run stopped before it finished"
_RESUME_REASON = "resume: retrying compensations that had failed"


def _taken(engine: RAC, run_id: str) -> RecoveredRun | None:
    """A "skipped" result when ``run_id`` (named by the operator) is unfinished and another
    live process works on it (or holds its lease): a live owner's run is never taken over."""
    info = engine.store.get_run(run_id)
    if info is None:
        return RecoveredRun(run_id, "skipped", reason=f"no run {run_id!r} in the log")
    who = ownership(engine, info, engine.clock.now())
    if info.status in UNFINISHED and who.state == "live":
        return RecoveredRun(run_id, "skipped", info.status,
                            reason=f"{who.reason}: a run its owner is still working on is "
                                   "never taken over; recover it once that process stops")
    return None


def _progress(done: list[RecoveredRun], targets: list[str]) -> None:
    """Say how far a recovery of several runs got (a ``rac.recovery`` event with
    ``status="progress"``, ``done`` and ``total``, before each run after the first)."""
    if done:
        emit("rac.recovery", status="progress", done=len(done), total=len(targets),
             run_id=targets[len(done)])


def recover(engine: RAC, run_ids: Iterable[str] | None = None, *,
            lease_seconds: float = DEFAULT_LEASE_SECONDS, stale_after: float | None = None,
            owner: str | None = None,
            progress: Callable[[int, int, str], None] | None = None) -> list[RecoveredRun]:
    """Recover abandoned runs: claim each and compensate everything it may have done.

    ``run_ids`` names runs to recover even if their owner cannot be told to be gone (it runs
    on another host, or is another engine of this process: you know it stopped); a run that
    another live process on this host works on, or whose lease is held, is still skipped. By default the abandoned runs of the log are found
    with :func:`find_unfinished`. Returns one :class:`RecoveredRun` per run tried. An error
    while recovering one run releases it (claimable again) and does not stop the others.
    """
    me = owner or engine.owner
    out: list[RecoveredRun] = []
    targets = _targets(engine, run_ids, stale_after)
    for run_id in targets:  # ``progress``: (runs done, runs to do, "RUN_ID: outcome")
        _progress(out, targets)
        busy = _taken(engine, run_id) if run_ids is not None else None
        out.append(busy or _recover_one_sync(engine, run_id, UNFINISHED, lease_seconds, me,
                                             retry_dead_letters=False,
                                             reason=_RECOVER_REASON))
        if progress is not None:
            progress(len(out), len(targets), f"{run_id}: {out[-1].outcome}")
    return out


async def arecover(engine: RAC, run_ids: Iterable[str] | None = None, *,
                   lease_seconds: float = DEFAULT_LEASE_SECONDS,
                   stale_after: float | None = None,
                   owner: str | None = None) -> list[RecoveredRun]:
    """Async :func:`recover`; compensations finish even if the task is cancelled."""
    me = owner or engine.owner
    out: list[RecoveredRun] = []
    targets = _targets(engine, run_ids, stale_after)
    for run_id in targets:
        _progress(out, targets)
        busy = _taken(engine, run_id) if run_ids is not None else None
        out.append(busy or await _recover_one_async(engine, run_id, UNFINISHED, lease_seconds,
                                                    me, retry_dead_letters=False,
                                                    reason=_RECOVER_REASON))
    return out


_LIVE_REASON = "resume: retrying the dead letters of a run its owner is still working on"


def _resume_plan(engine: RAC, run_id: str) -> tuple[RecoveredRun | None, Ownership | None]:
    """How to resume ``run_id``: (a result, None) when it is left alone; (None, the live
    owner) when only its dead letters may be retried; (None, None) for a full resume.
    KeyError for an unknown run."""
    info = engine.store.get_run(run_id)
    if info is None:
        raise KeyError(f"no run {run_id!r} in {engine.store.url}")
    who = ownership(engine, info, engine.clock.now())
    if info.status in UNFINISHED and who.state in ("live", "self", "local"):
        return RecoveredRun(run_id, "skipped", info.status,
                            reason=f"the run is still {info.status} and {who.reason}; "
                                   "resume it after that process stops"), None
    if info.status is RunStatus.NEEDS_ATTENTION and who.state in ("live", "unknown"):
        return None, who
    return None, None


def resume(engine: RAC, run_id: str, *, lease_seconds: float = DEFAULT_LEASE_SECONDS,
           owner: str | None = None) -> RecoveredRun:
    """Retry the dead letters of a run (``compensation_failed`` records, after the cause was
    fixed) and its held compensations. When nobody works on the run any more (see
    :func:`ownership`), also undo any side effect it left live, as recovery does; while its
    owner is alive, only the dead letters and held compensations are retried and the run's
    status is left to its owner (outcome ``"retried"``). Raises KeyError for an unknown run."""
    done, live_owner = _resume_plan(engine, run_id)
    if done is not None:
        return done
    if live_owner is not None:
        return _retry_sync(engine, run_id, live_owner)
    return _recover_one_sync(engine, run_id, RESUMABLE, lease_seconds, owner or engine.owner,
                             retry_dead_letters=True, reason=_RESUME_REASON)


async def aresume(engine: RAC, run_id: str, *, lease_seconds: float = DEFAULT_LEASE_SECONDS,
                  owner: str | None = None) -> RecoveredRun:
    """Async :func:`resume`."""
    done, live_owner = _resume_plan(engine, run_id)
    if done is not None:
        return done
    if live_owner is not None:
        try:
            return await drive_async(_retry_flow(engine, run_id, live_owner), engine.clock,
                                     engine.passthrough,
                                     offload=bool(getattr(engine.store, "blocking", True)))
        except Exception as e:  # noqa: BLE001 - reported; the owner keeps its run
            return _retry_failed(run_id, e)
    return await _recover_one_async(engine, run_id, RESUMABLE, lease_seconds,
                                    owner or engine.owner, retry_dead_letters=True,
                                    reason=_RESUME_REASON)


# -- a live owner's run: its dead letters only -------------------------------------------------
def held(record: Record) -> bool:
    """True if ``record`` is an action whose compensation a rollback held for approval
    (whatever a person decided about it since: see :mod:`rac.approvals`)."""
    from rac.approvals import is_held

    return is_held(record)


def _retry_sync(engine: RAC, run_id: str, who: Ownership) -> RecoveredRun:
    try:
        return drive_sync(_retry_flow(engine, run_id, who), engine.clock, engine.passthrough)
    except Exception as e:  # noqa: BLE001 - reported; the owner keeps its run
        return _retry_failed(run_id, e)


def _retry_failed(run_id: str, err: Exception) -> RecoveredRun:
    emit("rac.recovery", level="error", run_id=run_id, status="error",
         error=f"{type(err).__name__}: {err}")
    return RecoveredRun(run_id, "error", reason=f"{type(err).__name__}: {err}")


def _retry_flow(engine: RAC, run_id: str, who: Ownership) -> Flow[RecoveredRun]:
    """Retry the dead letters and held compensations of a run whose owner is alive, newest
    first, without touching its run row or any other record: the owner keeps writing it.

    The compensation records go at :data:`OPERATOR_SEQ_BASE` and up, so they never collide
    with the owner's; a second operator racing for the same dead letter collides with the
    first on the same seq and stops ("skipped"), so exactly one claim proceeds."""
    from rac.lifecycle import may_be_live
    from rac.ordering import rollback_order
    from rac.run.compensation import compensate

    info = engine.store.get_run(run_id)
    if info is None:
        raise KeyError(f"no run {run_id!r} in {engine.store.url}")
    records = engine.store.get_records(run_id)
    taken = [r for r in records if r.kind is RecordKind.ACTION and not r.read_only
             and (r.status is RecordStatus.COMPENSATION_FAILED or held(r))]
    if not taken:
        return RecoveredRun(run_id, "skipped", info.status,
                            reason=f"no dead letter or held compensation to retry, and "
                                   f"{who.reason}: its other work is left to it")
    first = max(OPERATOR_SEQ_BASE, max(r.seq for r in records)) + 1
    run = Run.from_log(engine, info, records, next_seq=first)
    wanted = {r.seq for r in taken}
    emit("rac.recovery", run_id=run_id, status="retrying_dead_letters",
         seqs=sorted(wanted), owner=info.owner)
    report = RecoveryReport(run_id=run_id, reason=_LIVE_REASON, status=info.status)
    for rec in rollback_order(taken):
        mine = run.log.records[rec.seq]
        blocker = next((r for r in run.log.records.values() if rec.seq in r.depends_on
                        and r.seq not in wanted and may_be_live(r)), None)
        item = UndoneAction(rec.seq, rec.tool)
        if blocker is not None:
            item.error = f"{blocker.tool} (#{blocker.seq}) depends on it and is still live"
            report.blocked.append(item)
            continue
        try:
            undo = yield from compensate(run, mine)
        except (ConflictError, LifecycleError):
            # the seq the other operator took, or the record it already moved on (its
            # compensation finished before this one began): nothing of this try was written
            _repair_after_race(engine, run, mine)
            return RecoveredRun(run_id, "skipped", info.status,
                                reason="another operator is resuming this run right now")
        item.compensator, item.error = undo.compensator, undo.error
        {"compensated": report.compensated, "held": report.held,
         "none": report.not_undoable}.get(undo.outcome, report.compensation_failed).append(item)
    emit("rac.recovery", level="info" if not report.left_live else "warning", run_id=run_id,
         status="dead_letters_retried", compensated=len(report.compensated),
         left_live=len(report.left_live))
    return RecoveredRun(run_id, "retried", info.status, report,
                        reason=f"{who.reason}: only its dead letters were retried; its newer "
                               "work and its status are left to it")


def _repair_after_race(engine: RAC, run: Run, rec: Record) -> None:
    """After losing the race for ``rec`` to another operator: if the winner already finished
    its compensation, the record this process marked ``compensating`` meanwhile is given the
    winner's outcome again (``compensated``, or the dead letter)."""
    if rec.status is not RecordStatus.COMPENSATING:
        return
    theirs = [r for r in engine.store.get_records(run.run_id)
              if r.kind is RecordKind.COMPENSATION and r.compensates == rec.seq
              and r.seq >= OPERATOR_SEQ_BASE]
    ended = {RecordStatus.COMPLETED: RecordStatus.COMPENSATED,
             RecordStatus.FAILED: RecordStatus.COMPENSATION_FAILED}
    if theirs and theirs[-1].status in ended:
        with run.lock:
            run.log.update(rec, status=ended[theirs[-1].status])


def _recover_one_sync(engine: RAC, run_id: str, statuses: Iterable[RunStatus],
                      lease_seconds: float, owner: str, *, retry_dead_letters: bool,
                      reason: str) -> RecoveredRun:
    try:
        run, skipped = _prepare(engine, run_id, statuses=statuses, lease_seconds=lease_seconds,
                                owner=owner, retry_dead_letters=retry_dead_letters)
        if run is None:
            assert skipped is not None
            return skipped
        report = drive_sync(_rollback(run, reason, retry_dead_letters), engine.clock,
                            engine.passthrough)
        return _finish(engine, run, report)
    except Exception as e:  # noqa: BLE001 - reported, and the run is left claimable
        return _failed(engine, run_id, e)


async def _recover_one_async(engine: RAC, run_id: str, statuses: Iterable[RunStatus],
                             lease_seconds: float, owner: str, *, retry_dead_letters: bool,
                             reason: str) -> RecoveredRun:
    blocks = bool(getattr(engine.store, "blocking", True))

    async def off_loop(fn: Callable[[], Any]) -> Any:  # the log's reads and writes block
        return await asyncio.to_thread(fn) if blocks else fn()

    try:
        run, skipped = await off_loop(lambda: _prepare(
            engine, run_id, statuses=statuses, lease_seconds=lease_seconds, owner=owner,
            retry_dead_letters=retry_dead_letters))
        if run is None:
            assert skipped is not None
            return skipped  # type: ignore[no-any-return]
        report = await drive_async(_rollback(run, reason, retry_dead_letters), engine.clock,
                                   engine.passthrough, offload=blocks)
        finished: RecoveredRun = await off_loop(functools.partial(_finish, engine, run, report))
        return finished
    except Exception as e:  # noqa: BLE001 - reported, and the run is left claimable
        failed: RecoveredRun = await off_loop(functools.partial(_failed, engine, run_id, e))
        return failed


# -- an operator's resolution ----------------------------------------------------------------------
def unresolvable(info: RunInfo, rec: Record) -> str | None:
    """Why ``rec`` of run ``info`` cannot be resolved by hand, or None when it can: only what
    a rollback left live (a dead letter, a call in doubt, a held or not undoable effect) of a
    ``needs_attention`` run is a person's to settle."""
    if rec.kind is not RecordKind.ACTION:
        return (f"it is the compensation record of #{rec.compensates}: resolve the action it "
                "undoes")
    if rec.read_only:
        return "it is a read-only call: it changed nothing"
    if rec.status is RecordStatus.RESOLVED:
        return f"it is already resolved ({rec.note}): there is nothing to resolve"
    if info.status is not RunStatus.NEEDS_ATTENTION:
        if info.status in UNFINISHED:
            return (f"the run is {info.status}, not needs_attention: no rollback has finished "
                    "with it; `rac recover` (or `rac resume`) finishes it first")
        return f"the run is {info.status}: nothing of it waits for a person"
    if rec.status in (RecordStatus.FAILED, RecordStatus.COMPENSATED):
        return f"it is {rec.status}: nothing of it is live, there is nothing to resolve"
    if rec.status is RecordStatus.COMPENSATING:
        return "its undo is under way, or was interrupted: `rac resume` settles it"
    if rec.status in (RecordStatus.COMPENSATION_FAILED, RecordStatus.IN_DOUBT):
        return None
    if not rec.compensable or held(rec):  # completed or pending: not undoable, or held
        return None
    if rec.status is RecordStatus.PENDING:
        return "its call has no outcome yet: `rac recover` or `rac resume` settles it first"
    return ("no rollback left it live: it completed and can be undone (a rollback, or `rac "
            "resume` once its owner is gone, undoes it)")


def resolve(engine: RAC, run_id: str, seq: int, *, note: str, by: str | None = None) -> RunInfo:
    """Record that a person settled an action a rollback left live (a dead letter, a call in
    doubt, a held or not undoable effect) of a ``needs_attention`` run: the record becomes
    ``resolved``, its note saying who, when and why; once nothing of the run may be live any
    more, the run leaves ``needs_attention`` for ``resolved``. Both changes go through the
    run's writer (checked against the lifecycle tables, one event each, and the
    ``rac_record_written`` / ``rac_run_status_changed`` notifications). Returns the run as the
    log now holds it.

    Raises KeyError for an unknown run or seq, and :class:`rac.errors.RACError` for an empty
    note or anything else (:func:`unresolvable` says why)."""
    import datetime as dt
    import getpass

    from rac.lifecycle import may_be_live
    from rac.serialize import redact_text

    if not note.strip():
        raise RACError("a resolution needs a note saying what was done (--note)")
    info = engine.store.get_run(run_id)
    if info is None:
        raise KeyError(f"no run {run_id!r} in {engine.store.url}")
    records = engine.store.get_records(run_id)
    rec = next((r for r in records if r.seq == seq), None)
    if rec is None:
        raise KeyError(f"run {run_id} has no record #{seq}")
    why_not = unresolvable(info, rec)
    if why_not is not None:
        raise RACError(f"cannot resolve {run_id}#{seq} ({rec.tool}, {rec.status}): {why_not}")
    who = by or getpass.getuser()
    when = dt.datetime.fromtimestamp(engine.clock.now(), dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    text = redact_text(f"resolved by {who} at {when}: {note.strip()}")[:2000]
    run = Run.from_log(engine, info, records)
    with run.lock:  # one durable commit: the record, and the run once nothing is live
        clear = not any(may_be_live(r) for r in run.log.records.values() if r.seq != seq)
        # compare-and-set on the status checked above: of two operators resolving one record
        # at once, the second is refused (ConflictError), never writes over the first's note
        run.log.write(
            status=run.state.resolved(run.status, clear),
            updates=[(run.log.records[seq], {"status": RecordStatus.RESOLVED, "note": text})],
            run_fields={"summary": redact_text(f"resolved by {who}")} if clear else None,
            expect={seq: rec.status}, durable=True)
    emit("rac.resolve", level="warning", run_id=run_id, seq=seq, tool=rec.tool,
         status="resolved", by=redact_text(who))
    updated = engine.store.get_run(run_id)
    assert updated is not None
    return updated


# -- carrying a run on from its log --------------------------------------------------------------
class ReplayRun(Run):
    """A live run reopened from its log (see :func:`continue_run`).

    The first calls replay the log: each must ask for the step the log holds at that point
    (same tool, same arguments), and gets the logged result back without the tool running
    again. A different step raises :class:`SequenceMismatchError`. Once the log is used up,
    calls run normally and are appended after the last sequence number.
    """

    _replay: list[Record]
    _cursor: int
    _by_alt: dict[int, list[Record]]

    def _init_replay(self) -> None:
        recs = self.records()
        self._replay = [r for r in recs if r.kind is RecordKind.ACTION
                        and r.alternative_of is None]
        self._by_alt = {}
        for r in recs:
            if r.alternative_of is not None:
                self._by_alt.setdefault(r.alternative_of, []).append(r)
        self._cursor = 0

    def _replayed(self, name: str, args: dict[str, Any]) -> CallOutcome | None:
        if self._cursor >= len(self._replay):
            return None
        step = self._replay[self._cursor]
        self._cursor += 1
        wanted = store_value(args, self.engine.max_value_chars)
        if step.tool != name or step.args != wanted:
            raise SequenceMismatchError(
                f"run {self.run_id}: step {self._cursor} of the log (seq {step.seq}) is "
                f"{step.tool}({step.args}), but the resumed run asked for {name}({wanted}); "
                "refusing to realign the log")
        for rec in [step, *self._by_alt.get(step.seq, [])]:
            if rec.status is RecordStatus.COMPLETED:
                return CallOutcome(True, rec.tool, rec.seq, result=rec.result, value=rec.result)
        raise RACError(f"run {self.run_id}: step seq {step.seq} ({step.tool}) is {step.status} "
                       "in the log and cannot be replayed; recover the run instead")

    def execute(self, name: str, args: dict[str, Any], invoke: Invoker, *,
                agent_id: str | None = None, depends_on: Iterable[int] = (),
                batch: Any = None, call_id: str | None = None) -> CallOutcome:
        replayed = self._replayed(name, dict(args))
        if replayed is not None:
            return replayed
        return super().execute(name, args, invoke, agent_id=agent_id, depends_on=depends_on,
                               batch=batch, call_id=call_id)

    async def aexecute(self, name: str, args: dict[str, Any], ainvoke: AsyncInvoker, *,
                       agent_id: str | None = None, depends_on: Iterable[int] = (),
                       batch: Any = None, call_id: str | None = None) -> CallOutcome:
        replayed = self._replayed(name, dict(args))
        if replayed is not None:
            return replayed
        return await super().aexecute(name, args, ainvoke, agent_id=agent_id,
                                      depends_on=depends_on, batch=batch, call_id=call_id)


def continue_run(engine: RAC, run_id: str, *, lease_seconds: float = DEFAULT_LEASE_SECONDS,
                 tools: Iterable[Callable[..., Any]] | None = None) -> ReplayRun:
    """Reopen a ``running`` run from its log to carry on with it (use it as a context manager).

    Claims the run for ``engine``; raises :class:`rac.errors.RACError` if another process holds
    it or the run is finished, KeyError if it does not exist.
    """
    info = engine.store.get_run(run_id)
    if info is None:
        raise KeyError(f"no run {run_id!r} in {engine.store.url}")
    if info.status is not RunStatus.RUNNING:
        raise RACError(f"run {run_id} is {info.status}; only a running run can be continued")
    if not engine.store.claim_run(run_id, engine.owner, engine.clock.now(), lease_seconds):
        raise RACError(f"run {run_id} is held by {info.owner}; not continuing it")
    run = ReplayRun.from_log(engine, info, engine.store.get_records(run_id))
    assert isinstance(run, ReplayRun)
    run.log.take_over(engine.owner, lease_seconds)
    run._init_replay()
    if tools:
        run.add_tools(tools)
    return run


__all__ = ["DEFAULT_LEASE_SECONDS", "FLUSH_EVERY", "OPERATOR_SEQ_BASE", "UNFINISHED", "Ownership",
           "RecoveredRun", "ReplayRun", "arecover", "aresume", "continue_run",
           "find_unfinished", "held", "is_abandoned", "owner_is_dead", "ownership", "rebuild",
           "recover", "resolve", "resume", "unresolvable"]
