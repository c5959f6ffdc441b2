"""A store wrapper that enforces the lifecycle tables on every write (see
:mod:`rac.lifecycle`): a status change the tables forbid raises
:class:`rac.LifecycleError` at the write, whoever made it. RAC's own suite runs every store
through it; use it in an adapter's or a plugin's tests the same way."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import Any

from rac.lifecycle import check_record, check_run
from rac.models import Record, RecordKind, RecordStatus, RunInfo, RunStatus
from rac.stores.base import Store
from rac.stores.changes import (
    Append,
    Change,
    CreateRun,
    Fence,
    UpdateRecord,
    UpdateRun,
    commit,
    lease_lost,
)


class LifecycleStore:
    """``store``, with every record and run status change checked against the tables.

    Reads and writes go to the wrapped store; the wrapper only remembers the last status it
    saw of each record and run (reading it from the store for one it has not seen)."""

    def __init__(self, store: Store) -> None:
        self.inner = store
        self.url = store.url
        self._lock = threading.Lock()
        self._records: dict[tuple[str, int], tuple[RecordKind, RecordStatus]] = {}
        self._runs: dict[str, RunStatus] = {}
        #: every status change written, as (run_id, seq or None, previous, new)
        self.changes: list[tuple[str, int | None, str, str]] = []

    def __getattr__(self, name: str) -> Any:  # optional capabilities of the wrapped store
        return getattr(self.inner, name)

    def create_run(self, run: RunInfo) -> None:
        self.inner.create_run(run)
        with self._lock:
            self._runs[run.run_id] = run.status

    def get_run(self, run_id: str) -> RunInfo | None:
        return self.inner.get_run(run_id)

    def list_runs(self, status: RunStatus | Iterable[RunStatus] | None = None,
                  limit: int | None = None) -> list[RunInfo]:
        return self.inner.list_runs(status, limit)

    def commit(self, changes: Sequence[Change], *, durable: bool = True) -> None:
        """Check every status change of ``changes`` in order (a status written earlier in the
        same commit counts), then hand them to the wrapped store in one commit."""
        runs: dict[str, RunStatus] = {}
        recs: dict[tuple[str, int], tuple[RecordKind, RecordStatus]] = {}
        noted: list[tuple[str, int | None, str, str]] = []
        for change in changes:
            if isinstance(change, Fence):  # a refused fence refuses the rest, checked or not
                info = self.inner.get_run(change.run_id)
                if info is not None and info.owner != change.owner:
                    raise lease_lost(change.run_id, change.owner, info.owner)
            elif isinstance(change, CreateRun):
                runs[change.run.run_id] = change.run.status
            elif isinstance(change, Append):
                rec = change.record
                recs[(rec.run_id, rec.seq)] = (rec.kind, rec.status)
            elif isinstance(change, UpdateRun) and change.fields.get("status") is not None:
                new_run = RunStatus(change.fields["status"])
                previous = runs.get(change.run_id) or self._run_status(change.run_id)
                if previous is not None:
                    check_run(change.run_id, previous, new_run)
                    noted.append((change.run_id, None, str(previous), str(new_run)))
                runs[change.run_id] = new_run
            elif isinstance(change, UpdateRecord) and change.fields.get("status") is not None:
                new_rec = RecordStatus(change.fields["status"])
                where = (change.run_id, change.seq)
                known = recs.get(where) or self._record_state(*where)
                if known is not None:
                    check_record(known[0], known[1], new_rec)
                    noted.append((change.run_id, change.seq, str(known[1]), str(new_rec)))
                    recs[where] = (known[0], new_rec)
        commit(self.inner, changes, durable=durable)
        with self._lock:
            self._runs.update(runs)
            self._records.update(recs)
            self.changes.extend(noted)

    def _run_status(self, run_id: str) -> RunStatus | None:
        with self._lock:
            known = self._runs.get(run_id)
        if known is not None:
            return known
        info = self.inner.get_run(run_id)
        return info.status if info is not None else None

    def _record_state(self, run_id: str, seq: int) -> tuple[RecordKind, RecordStatus] | None:
        with self._lock:
            known = self._records.get((run_id, seq))
        if known is not None:
            return known
        rec = next((r for r in self.inner.get_records(run_id) if r.seq == seq), None)
        return (rec.kind, rec.status) if rec is not None else None

    def update_run(self, run_id: str, **fields: Any) -> None:
        new = fields.get("status")
        if new is not None:
            new = RunStatus(new)
            with self._lock:
                previous = self._runs.get(run_id)
            if previous is None:
                info = self.inner.get_run(run_id)
                previous = info.status if info is not None else None
            if previous is not None:
                check_run(run_id, previous, new)
                self.changes.append((run_id, None, str(previous), str(new)))
        self.inner.update_run(run_id, **fields)
        if new is not None:
            with self._lock:
                self._runs[run_id] = new

    def claim_run(self, run_id: str, owner: str, now: float, lease_seconds: float) -> bool:
        claimed = self.inner.claim_run(run_id, owner, now, lease_seconds)
        with self._lock:
            self._runs.pop(run_id, None)  # another process may have changed it: read again
        return claimed

    def append(self, record: Record) -> None:
        self.inner.append(record)
        with self._lock:
            self._records[(record.run_id, record.seq)] = (record.kind, record.status)

    def update_record(self, run_id: str, seq: int, **fields: Any) -> None:
        new = fields.get("status")
        if new is not None:
            new = RecordStatus(new)
            with self._lock:
                known = self._records.get((run_id, seq))
            if known is None:
                rec = next((r for r in self.inner.get_records(run_id) if r.seq == seq), None)
                known = (rec.kind, rec.status) if rec is not None else None
            if known is not None:
                kind, previous = known
                check_record(kind, previous, new)
                self.changes.append((run_id, seq, str(previous), str(new)))
        self.inner.update_record(run_id, seq, **fields)
        if new is not None and known is not None:
            with self._lock:
                self._records[(run_id, seq)] = (known[0], new)

    def get_records(self, run_id: str) -> list[Record]:
        return self.inner.get_records(run_id)

    def close(self) -> None:
        self.inner.close()
