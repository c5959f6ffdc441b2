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
  written is taken as done; one with no outcome is marked ``failed`` (in doubt) and run again
  with the same idempotency key, so a compensator must also be idempotent.

Compensations that exhaust their retries are dead letters (``compensation_failed``) and the run
ends ``needs_attention``; :func:`resume` retries them after the cause is fixed.

:func:`continue_run` reopens a live run to carry on from its log: the steps the agent asks for
are checked against the log, and a different step at a sequence number raises
:class:`rac.errors.SequenceMismatchError`, never a silent realignment.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rac.effects import drive_async, drive_sync
from rac.errors import RACError, SequenceMismatchError
from rac.events import emit
from rac.models import Record, RecordKind, RecordStatus, RunInfo, RunStatus
from rac.report import RecoveryReport
from rac.run import AsyncInvoker, CallOutcome, Invoker, Run
from rac.serialize import store_value

if TYPE_CHECKING:
    from rac.effects import Flow
    from rac.engine import RAC

#: Statuses of a run that a dead process may have left unfinished.
UNFINISHED = (RunStatus.RUNNING, RunStatus.COMPENSATING)
#: How long a recoverer's claim holds before another may take the run over (seconds).
DEFAULT_LEASE_SECONDS = 300.0


@dataclass
class RecoveredRun:
    """What recovery did with one run.

    ``outcome`` is ``"compensated"`` or ``"needs_attention"`` (the run's status after recovery),
    ``"skipped"`` (another recoverer holds it, or it finished meanwhile; ``reason`` says which)
    or ``"error"`` (recovery itself failed; the run was released so it can be claimed again).
    """

    run_id: str
    outcome: str
    status: RunStatus | None = None
    report: RecoveryReport | None = None
    reason: str | None = None

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


def is_abandoned(engine: RAC, info: RunInfo, now: float, *,
                 stale_after: float | None = None) -> bool:
    """Whether a run is unfinished and nobody is working on it any more.

    A run is abandoned when it is unfinished and: it has no owner; or a recoverer's lease on it
    expired; or it has no lease and its owner is a process on this host that no longer exists;
    or (``stale_after`` seconds given) nothing was written to it for that long. A run owned by
    ``engine`` itself, or under an unexpired lease, never is.
    """
    if info.status not in UNFINISHED or info.owner == engine.owner:
        return False
    if info.owner is None:
        return True
    if info.lease_until > now:
        return False
    if info.lease_until > 0:
        return True
    if owner_is_dead(info.owner):
        return True
    if stale_after is not None:
        last = max([info.updated_at, *(r.updated_at for r in engine.store.get_records(info.run_id))])
        return last <= now - stale_after
    return False


def find_unfinished(engine: RAC, *, stale_after: float | None = None) -> list[RunInfo]:
    """The abandoned runs of ``engine``'s log (see :func:`is_abandoned`), oldest first."""
    now = engine.clock.now()
    runs = engine.store.list_runs(status=UNFINISHED)
    return [r for r in reversed(runs) if is_abandoned(engine, r, now, stale_after=stale_after)]


# -- rebuilding a run --------------------------------------------------------------------------
def rebuild(engine: RAC, info: RunInfo, records: list[Record]) -> Run:
    """A :class:`Run` rebuilt from the log, its interrupted compensations settled: one whose
    outcome was written counts as done; one with an intent and no outcome is closed as failed
    (in doubt) so that the rollback runs it again with the same idempotency key. Every change
    is a legal status change written to the log."""
    run = Run.from_log(engine, info, records)
    comps: dict[int, list[Record]] = {}
    for rec in records:
        if rec.kind is RecordKind.COMPENSATION and rec.compensates is not None:
            comps.setdefault(rec.compensates, []).append(rec)
    with run.lock:
        for crecs in comps.values():
            for crec in crecs:
                if crec.status is RecordStatus.PENDING:
                    run.log.update(crec, status=RecordStatus.FAILED, note="in_doubt",
                                   error="in doubt: the process stopped before the outcome of "
                                         "this compensation was written; recovery runs it again")
        for rec in records:
            if rec.kind is RecordKind.ACTION and rec.status is RecordStatus.COMPENSATING and any(
                    c.status is RecordStatus.COMPLETED for c in comps.get(rec.seq, ())):
                run.log.update(rec, status=RecordStatus.COMPENSATED)
    return run


# -- claiming and finishing --------------------------------------------------------------------
_Prepared = tuple[Run | None, RecoveredRun | None]


def _prepare(engine: RAC, run_id: str, *, statuses: Iterable[RunStatus], lease_seconds: float,
             owner: str, retry_dead_letters: bool) -> _Prepared:
    store = engine.store
    if not store.claim_run(run_id, owner, engine.clock.now(), lease_seconds):
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
    return rebuild(engine, info, store.get_records(run_id)), None


def _release(engine: RAC, run_id: str, *, keep_owner: bool) -> None:
    """End the lease so that the run can be claimed again (by ``resume``, or after an error)."""
    fields: dict[str, Any] = {"lease_until": 0.0}
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
    engine.store.update_run(run.run_id, summary=summary)
    _release(engine, run.run_id, keep_owner=True)
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


def recover(engine: RAC, run_ids: Iterable[str] | None = None, *,
            lease_seconds: float = DEFAULT_LEASE_SECONDS, stale_after: float | None = None,
            owner: str | None = None) -> list[RecoveredRun]:
    """Recover abandoned runs: claim each and compensate everything it may have done.

    ``run_ids`` names runs to recover even if their owner looks alive (you know it is gone);
    by default the abandoned runs of the log are found with :func:`find_unfinished`. Returns
    one :class:`RecoveredRun` per run tried. An error while recovering one run releases it
    (claimable again) and does not stop the others.
    """
    me = owner or engine.owner
    out: list[RecoveredRun] = []
    for run_id in _targets(engine, run_ids, stale_after):
        out.append(_recover_one_sync(engine, run_id, UNFINISHED, lease_seconds, me,
                                     retry_dead_letters=False, reason=_RECOVER_REASON))
    return out


async def arecover(engine: RAC, run_ids: Iterable[str] | None = None, *,
                   lease_seconds: float = DEFAULT_LEASE_SECONDS,
                   stale_after: float | None = None,
                   owner: str | None = None) -> list[RecoveredRun]:
    """Async :func:`recover`; compensations finish even if the task is cancelled."""
    me = owner or engine.owner
    out: list[RecoveredRun] = []
    for run_id in _targets(engine, run_ids, stale_after):
        out.append(await _recover_one_async(engine, run_id, UNFINISHED, lease_seconds, me,
                                            retry_dead_letters=False, reason=_RECOVER_REASON))
    return out


_RESUMABLE = (RunStatus.NEEDS_ATTENTION, RunStatus.RUNNING, RunStatus.COMPENSATING)


def _still_running(engine: RAC, run_id: str) -> RecoveredRun | None:
    """A "skipped" result if the run is unfinished and its owner, a process on this host, is
    alive (resuming it would roll it back from under that process); KeyError if unknown."""
    info = engine.store.get_run(run_id)
    if info is None:
        raise KeyError(f"no run {run_id!r} in {engine.store.url}")
    if info.status in UNFINISHED and info.lease_until <= 0 and (
            info.owner == engine.owner or owner_is_dead(info.owner) is False):
        return RecoveredRun(run_id, "skipped", info.status,
                            reason=f"the run is still {info.status} in its owner process "
                                   f"{info.owner}; resume it after that process stops")
    return None


def resume(engine: RAC, run_id: str, *, lease_seconds: float = DEFAULT_LEASE_SECONDS,
           owner: str | None = None) -> RecoveredRun:
    """Retry the dead letters of a run (``compensation_failed`` records, after the cause was
    fixed) and any side effect it left live. Raises KeyError for an unknown run."""
    busy = _still_running(engine, run_id)
    if busy is not None:
        return busy
    return _recover_one_sync(engine, run_id, _RESUMABLE, lease_seconds, owner or engine.owner,
                             retry_dead_letters=True, reason=_RESUME_REASON)


async def aresume(engine: RAC, run_id: str, *, lease_seconds: float = DEFAULT_LEASE_SECONDS,
                  owner: str | None = None) -> RecoveredRun:
    """Async :func:`resume`."""
    busy = _still_running(engine, run_id)
    if busy is not None:
        return busy
    return await _recover_one_async(engine, run_id, _RESUMABLE, lease_seconds,
                                    owner or engine.owner, retry_dead_letters=True,
                                    reason=_RESUME_REASON)


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
    try:
        run, skipped = _prepare(engine, run_id, statuses=statuses, lease_seconds=lease_seconds,
                                owner=owner, retry_dead_letters=retry_dead_letters)
        if run is None:
            assert skipped is not None
            return skipped
        report = await drive_async(_rollback(run, reason, retry_dead_letters), engine.clock,
                                   engine.passthrough)
        return _finish(engine, run, report)
    except Exception as e:  # noqa: BLE001 - reported, and the run is left claimable
        return _failed(engine, run_id, e)


# -- an operator's resolution ----------------------------------------------------------------------
def resolve(engine: RAC, run_id: str, seq: int, *, note: str, by: str | None = None) -> RunInfo:
    """Record that a person settled an action a rollback left live (a dead letter, a call in
    doubt, an effect that could not be undone): the record becomes ``resolved`` with who and
    why, and once nothing of the run may be live any more, the run leaves ``needs_attention``
    for ``resolved``. Returns the run as the log now holds it.

    Raises KeyError for an unknown run or seq, and :class:`rac.errors.RACError` for a record
    that is not live (there is nothing to resolve) or an empty note."""
    import getpass

    from rac.lifecycle import check_record, may_be_live
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
    if not may_be_live(rec):
        raise RACError(f"{run_id}#{seq} ({rec.tool}) is {rec.status}: nothing of it is live, "
                       "there is nothing to resolve")
    check_record(rec, rec.status, RecordStatus.RESOLVED)
    who = by or getpass.getuser()
    now = engine.clock.now()
    text = redact_text(f"resolved by {who}: {note.strip()}")[:2000]
    engine.store.update_record(run_id, seq, status=RecordStatus.RESOLVED, note=text,
                               updated_at=now)
    emit("rac.resolve", level="warning", run_id=run_id, seq=seq, tool=rec.tool,
         status="resolved", by=who)
    rec.status = RecordStatus.RESOLVED
    if info.status is RunStatus.NEEDS_ATTENTION and not any(may_be_live(r) for r in records):
        engine.store.update_run(run_id, status=RunStatus.RESOLVED, updated_at=now,
                                summary=f"resolved by {who}")
        emit("rac.run", run_id=run_id, status=str(RunStatus.RESOLVED),
             previous=str(RunStatus.NEEDS_ATTENTION))
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
    run._init_replay()
    if tools:
        run.add_tools(tools)
    return run


__all__ = ["DEFAULT_LEASE_SECONDS", "UNFINISHED", "RecoveredRun", "ReplayRun", "arecover",
           "aresume", "continue_run", "find_unfinished", "is_abandoned", "owner_is_dead",
           "rebuild", "recover", "resolve", "resume"]
