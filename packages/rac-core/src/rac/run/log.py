"""A run's writes to the transaction log: records and the run's own row, each status change
checked against the lifecycle tables, written to the store first, then to the run's copy, then
announced (one structlog event, and the notification hooks).

Every write carries a fence (:class:`rac.stores.changes.Fence`): it goes through only while
this process holds the run, and renews the run's lease once a tenth of it has run down
(:data:`RENEW_AFTER`, see :mod:`rac.leases`). Once another process has claimed the run, a
write raises :class:`rac.errors.LeaseLostError` and nothing of it reaches the log."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rac.errors import LeaseLostError
from rac.events import info_enabled, run_logger
from rac.leases import ENDED
from rac.lifecycle import HAPPENED_ON, check_record, check_run, happened_after
from rac.models import Record, RecordKind, RecordStatus, RunInfo, RunStatus
from rac.stores.changes import (
    Append,
    Change,
    CreateRun,
    Fence,
    UpdateRecord,
    UpdateRun,
    coalesce,
    commit,
)

if TYPE_CHECKING:
    from rac.engine import RAC

_BAD = (RecordStatus.FAILED, RecordStatus.COMPENSATION_FAILED, RecordStatus.IN_DOUBT)
_COMPENSATING = RecordStatus.COMPENSATING  # (a member off its class costs a lookup each use)
#: the notification of every record written (announced only when some plugin listens)
_WRITTEN = "rac_record_written"
#: A write renews the run's lease once it has run down by this share of its length since
#: the last write that renewed it (a call writes twice in microseconds: renewing both times
#: moves the lease by nothing and costs each write an update of the run's row).
RENEW_AFTER = 0.1


class RunLog:
    """The records of one run as it writes them, and its status.

    The store is the truth; ``records`` is this process's copy (seq -> record), changed only
    after the store accepted the write. Thread-safe under ``lock`` (the run's lock).
    """

    def __init__(self, engine: RAC, run_id: str, agent_id: str,
                 lock: threading.RLock) -> None:
        self.engine = engine
        self.run_id = run_id
        self.agent_id = agent_id
        self.lock = lock
        self.records: dict[int, Record] = {}
        #: action seq -> the seqs of its compensation records, built on first use from
        #: ``records`` and kept by :meth:`write` (a rollback asks it once per record)
        self._undoes: dict[int, list[int]] | None = None
        self.status = RunStatus.RUNNING
        self._events: Any = None
        #: whether info-level events go anywhere (decided when the run starts)
        self.info = True
        #: who holds the run (this engine, or the recoverer that claimed it) and for how long
        #: a lease lasts; every write is fenced with them
        self.owner = engine.owner
        self.lease_seconds = engine.leases.lease_seconds
        #: set when the heartbeat found the run claimed by another process
        self.lost: LeaseLostError | None = None
        #: True once this process holds the run (it created it, or claimed it): its writes are
        #: fenced. A run rebuilt from the log without a claim (an operator's dead-letter retry
        #: or resolution beside a live owner) writes unfenced, as the owner's guest.
        self.fenced = False
        #: see :meth:`relax`: how many steps a commit holds, the changes held, their steps
        self._flush_every = 0
        self._held: list[Change] = []
        self._steps = 0
        #: the fence that checks the owner without renewing (one per owner), and the lease
        #: this process last wrote with its writes (None: none yet, or another owner's)
        self._check: Fence | None = None
        self._renewed: float | None = None
        #: the store the last commit went to, and its own ``commit`` (None: the fallback)
        self._store: Any = None
        self._store_commit: Any = None

    # -- the lease -------------------------------------------------------------------------------
    def take_over(self, owner: str, lease_seconds: float) -> None:
        """The run was claimed by ``owner`` (a recoverer, a continuation): fence its writes
        with that owner and renew its lease while it works."""
        self.owner, self.lease_seconds, self.lost = owner, lease_seconds, None
        self._renewed = None  # the claim wrote a lease of its own: the next write renews
        self.fenced = True
        self.info = info_enabled()
        self.engine.leases.hold(self)

    def release(self) -> None:
        """Stop renewing the lease (the work is done; the lease runs out by itself)."""
        self.engine.leases.release(self)

    def end(self) -> None:
        """The run is over in this process (its block closed, or an adapter finished it):
        stop renewing its lease and end it in the log now, so that an operator may act on the
        run at once (a ``needs_attention`` run can be resumed; one an interruption left
        ``running`` is found by ``rac recover`` on any machine). Not flushed to disk on its
        own (see :meth:`write`)."""
        if self.lost is not None or self not in self.engine.leases.held():
            return
        if self.fenced:
            self._commit([], True, False)
        else:
            self.engine.leases.release(self)

    def relax(self, every: int) -> None:
        """Batch the commits of a big recovery: from now on the changes of ``every`` steps are
        held in this process and written in one durable commit (and whatever is held when
        :meth:`flush` is called, or a lease-ending commit comes). ``every`` 0: each step is
        its own commit again (what is held is written first).

        Only recovery asks for it, and a crash it does not survive is no new kind of crash:
        what a crash loses is compensations that ran with no outcome in the log, and the next
        recovery runs them again with the same idempotency keys, as it does for a
        compensation a crash interrupted before its outcome was written (a compensator must
        be idempotent for that; see :mod:`rac.recovery`)."""
        self.flush()
        self._flush_every = every

    def flush(self) -> None:
        """Write what :meth:`relax` holds, in one durable commit."""
        if self._held:
            every, self._flush_every = self._flush_every, 0
            try:
                self._commit([], False, True)
            finally:
                self._flush_every = every

    def commit(self, *changes: Change, end: bool = False, durable: bool = True) -> None:
        """Write ``changes`` behind this run's fence, in one commit, announcing nothing (the
        callers announce); ``end``: the commit also ends the lease (the run is over in this
        process); ``durable``: flushed to disk before it returns (see :meth:`write`). Raises
        :class:`rac.errors.LeaseLostError` once another process holds the run."""
        self._commit(list(changes), end, durable)

    def _commit(self, changes: Sequence[Change], end: bool, durable: bool) -> None:
        """:meth:`commit` of a list of changes (every step of the run comes through here: it
        is written for speed)."""
        if self.lost is not None:
            raise self.lost
        if self._flush_every or self._held:  # a relaxed recovery (see relax)
            if self._flush_every and not end:
                self._held.extend(changes)
                self._steps += 1
                if self._steps >= self._flush_every:
                    self.flush()
                return
            changes, self._held, self._steps = coalesce([*self._held, *changes]), [], 0
            durable = True
        lease: float | None = None  # the lease this commit writes, if any
        if self.fenced:
            if end:
                lease = ENDED
                changes = [Fence(self.run_id, self.owner, ENDED), *changes]
            else:
                until = self.engine.clock.now() + self.lease_seconds
                fence = self._check
                if fence is None or fence.owner != self.owner:
                    fence = self._check = Fence(self.run_id, self.owner)
                    self._renewed = None
                renewed = self._renewed
                if renewed is None or until - renewed >= self.lease_seconds * RENEW_AFTER:
                    lease = until
                    fence = Fence(self.run_id, self.owner, until)
                # else renewed a moment ago: the fence checks the owner, leaves the lease
                changes = [fence, *changes]
        store = self.engine.store
        if store is not self._store:  # the store's own commit, looked up once per store
            own = getattr(store, "commit", None)
            self._store, self._store_commit = store, (
                own if own is not None and "commit" in getattr(store, "capabilities", ())
                else None)
        if self._store_commit is not None:
            self._store_commit(changes, durable=durable)
        else:
            commit(store, changes, durable=durable)
        if lease is not None:
            self._renewed = lease
            if end:
                self.engine.leases.release(self)

    def write(self, *, status: RunStatus | None = None,
              updates: Sequence[tuple[Record, dict[str, Any]]] = (),
              appends: Sequence[Record] = (), durable: bool = True,
              end: bool = False, run_fields: Mapping[str, Any] | None = None,
              expect: Mapping[int, RecordStatus] | None = None) -> None:
        """One step of the run, in one commit: the run's new ``status`` (a legal change; the
        same status is no change), field ``updates`` of records (a status change must be
        legal, see :mod:`rac.lifecycle`), new records (``appends``); then this process's copy
        follows and each change is announced (one structlog event, and the notification
        hooks), in that order. ``end``: the run is over in this process (see :meth:`end`);
        ``run_fields``: other fields of the run's row (a summary), in the same commit;
        ``expect``: seq -> the status a record must still have in the log (compare-and-set,
        see :class:`rac.stores.changes.UpdateRecord`).

        ``durable``: the commit is flushed to disk before this returns. RAC asks for it where
        the write-ahead rule needs it, for a step that lets a tool run (a call's intent, a
        compensation's); every other step (an outcome, a run's status) reaches the database
        at once, so a crash of the process loses nothing, and is flushed with the next durable
        commit (the next intent) or when the log is closed. A power cut can lose it: the call
        is then read as "may have happened" by recovery, never as "did not happen"
        (docs/reliability.md, "What a power cut can lose")."""
        previous = self.status
        if status is previous:
            status = None
        if status is not None:
            check_run(self.run_id, previous, status)
        now = self.engine.clock.now()
        changes: list[Change] = []
        before: list[RecordStatus] = []
        for rec, fields in updates:
            was = rec.status
            before.append(was)
            new = fields.get("status")
            if new is not None:
                check_record(rec, was, new)
                if "happened" not in fields:  # whether it happened is data, kept with it
                    fields["happened"] = happened_after(rec, new, fields.get("note"))
            fields["updated_at"] = now
            changes.append(UpdateRecord(self.run_id, rec.seq, fields,
                                        expect.get(rec.seq) if expect else None))
        for rec in appends:
            if not rec.happened:
                rec.happened = happened_after(rec, rec.status, rec.note)
            changes.append(Append(rec))
        if status is not None or run_fields:  # the run's row last, after what decided it
            row = dict(run_fields or {})
            if status is not None:
                row["status"] = status
            row["updated_at"] = now
            changes.append(UpdateRun(self.run_id, row))
        if not changes:
            if end:
                self.end()
            return
        self._commit(changes, end, durable)
        if status is not None:
            self.status = status
            if not end and self.fenced:
                self.engine.leases.hold(self)
            self._announce_status(status, previous)
        if updates:
            for (rec, fields), was in zip(updates, before, strict=True):
                for k, v in fields.items():
                    setattr(rec, k, v)
                new = fields.get("status")
                if new is not None and (new is not was or new is RecordStatus.COMPENSATING):
                    self._announce(rec, was)
        for rec in appends:
            self.records[rec.seq] = rec
            if self._undoes is not None and rec.compensates is not None:
                self._undoes.setdefault(rec.compensates, []).append(rec.seq)
            self._announce(rec, None)

    def compensations_of(self, seq: int) -> list[Record]:
        """The compensation records of action ``seq``, oldest first (call under the run's
        lock)."""
        if self._undoes is None:
            self._undoes = {}
            for r in self.records.values():
                if r.kind is RecordKind.COMPENSATION and r.compensates is not None:
                    self._undoes.setdefault(r.compensates, []).append(r.seq)
        return [self.records[s] for s in self._undoes.get(seq, ())]

    # -- the run's row -----------------------------------------------------------------------
    def create(self) -> None:
        """Write the run's row (``running``) and announce it (flushed to disk with the first
        intent)."""
        now = self.engine.clock.now()
        commit(self.engine.store, [CreateRun(RunInfo(
            self.run_id, self.agent_id, RunStatus.RUNNING, now, now, self.owner,
            now + self.lease_seconds))], durable=False)
        self.fenced = True
        self._check, self._renewed = Fence(self.run_id, self.owner), now + self.lease_seconds
        self.engine.leases.hold(self)
        self.info = info_enabled()
        self.event("rac.run", status=str(RunStatus.RUNNING), agent_id=self.agent_id)
        hooks = self.engine.hooks
        if hooks.listened("rac_run_status_changed"):
            hooks.notify("rac_run_status_changed", run_id=self.run_id,
                         status=RunStatus.RUNNING, previous=None)

    def set_status(self, status: RunStatus, *, end: bool = False,
                   durable: bool = False) -> None:
        """Change the run's status (a legal change only; the same status is no change), not
        flushed to disk on its own unless ``durable`` (see :meth:`write`). ``end``: the run
        is over in this process (see :meth:`end`), in the same commit."""
        self.write(status=status, end=end, durable=durable)

    def _announce_status(self, status: RunStatus, previous: RunStatus) -> None:
        attention = status is RunStatus.NEEDS_ATTENTION
        self.event("rac.run", level="warning" if attention else "info", status=str(status),
                   previous=str(previous))
        hooks = self.engine.hooks
        if hooks.listened("rac_run_status_changed"):
            hooks.notify("rac_run_status_changed", run_id=self.run_id, status=status,
                         previous=previous)

    # -- records -------------------------------------------------------------------------------
    def append(self, rec: Record, *, status: RunStatus | None = None) -> None:
        """Write a new record (the intent of a call, or a refusal), flushed to disk before
        this returns; ``status``: the run's new status, in the same commit (a call that
        reopens an idle run)."""
        if status is not None and status is not self.status:
            self.write(status=status, appends=[rec])
            return
        # write(appends=[rec]), one record and no run status: the step of every call
        if not rec.happened:
            rec.happened = HAPPENED_ON.get((rec.kind, rec.status)) or happened_after(
                rec, rec.status, rec.note)
        self._commit([Append(rec)], False, True)
        self.records[rec.seq] = rec
        if self._undoes is not None and rec.compensates is not None:
            self._undoes.setdefault(rec.compensates, []).append(rec.seq)
        if self.info or rec.status in _BAD or _WRITTEN in self.engine.hooks.implemented:
            self._announce(rec, None)

    def update(self, rec: Record, *, durable: bool = False,
               expect: RecordStatus | None = None, **fields: Any) -> None:
        """Change fields of a record; a status change must be legal (see
        :mod:`rac.lifecycle`). Not flushed to disk on its own unless ``durable`` (see
        :meth:`write`). ``expect``: only while the log still holds the record with that
        status (compare-and-set, see :class:`rac.stores.changes.UpdateRecord`)."""
        self.change(rec, fields, durable, expect)

    def change(self, rec: Record, fields: dict[str, Any], durable: bool = False,
               expect: RecordStatus | None = None) -> None:
        """:meth:`update` with the fields as a dict of the caller's, which it takes over."""
        # write(updates=[(rec, fields)]), one record and no run status: a call's outcome
        was = rec.status
        new = fields.get("status")
        if new is not None:
            check_record(rec, was, new)
            if "happened" not in fields:  # whether it happened is data, kept with it
                fields["happened"] = HAPPENED_ON.get((rec.kind, new)) or happened_after(
                    rec, new, fields.get("note"))
        fields["updated_at"] = self.engine.clock.now()
        self._commit([UpdateRecord(self.run_id, rec.seq, fields, expect)], False, durable)
        for k, v in fields.items():
            setattr(rec, k, v)
        if new is not None and (new is not was or new is _COMPENSATING) and (
                self.info or new in _BAD or _WRITTEN in self.engine.hooks.implemented):
            self._announce(rec, was)

    def _announce(self, rec: Record, previous: RecordStatus | None) -> None:
        bad = rec.status in _BAD
        if bad or self.info:
            self.event("rac.record", level="warning" if bad else "info", seq=rec.seq,
                       tool=rec.tool, kind=str(rec.kind), status=str(rec.status),
                       agent_id=rec.agent_id, attempts=rec.attempts, error=rec.error)
        hooks = self.engine.hooks
        if _WRITTEN in hooks.implemented:
            hooks.notify("rac_record_written", record=rec.shown(),
                         previous=str(previous) if previous is not None else None)

    # -- events --------------------------------------------------------------------------------
    def event(self, event: str, *, level: str = "info", **fields: Any) -> None:
        """Emit one event on this run's logger (``run_id`` is bound)."""
        if level == "info" and not self.info:
            return
        if self._events is None:
            self._events = run_logger(run_id=self.run_id)[0]
        getattr(self._events, level)(event, **fields)
