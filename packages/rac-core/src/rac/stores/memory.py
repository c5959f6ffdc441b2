"""The in-memory store: fast, for tests and for runs that need no durability."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from rac.errors import ConflictError
from rac.lifecycle import check_record, check_run
from rac.models import PairRecord, Record, RecordStatus, RunInfo, RunStatus
from rac.stores.base import status_set
from rac.stores.capabilities import COMMIT, PAIRS, RUN_QUERY, RunFilter
from rac.stores.changes import (
    Append,
    Change,
    CreateRun,
    Fence,
    UpdateRecord,
    UpdateRun,
    lease_lost,
    status_changed,
)
from rac.stores.rows import RECORD_COLUMNS, RUN_COLUMNS, check_fields

_RECORD_FIELDS = frozenset(RECORD_COLUMNS)
_RUN_FIELDS = frozenset(RUN_COLUMNS)


class MemoryStore:
    """A transaction log held in process memory. Appends and updates are O(1); thread-safe.

    Writes keep the JSON values (``args``, ``result``) they are given, which RAC never changes
    after writing; reads return deep copies, so nothing a reader does reaches the log.
    Undo data is kept as given (nothing to seal in memory). Status changes are checked against
    the lifecycle tables, as the SQL stores check them; a commit that fails part-way leaves
    nothing of itself behind.
    """

    #: Optional capabilities beyond the Store protocol (see :mod:`rac.stores.capabilities`).
    capabilities: frozenset[str] = frozenset({PAIRS, RUN_QUERY, COMMIT})
    #: Writes never wait on a disk: async callers write on the event loop.
    blocking = False

    def __init__(self) -> None:
        self.url = "memory://"
        self._runs: dict[str, RunInfo] = {}
        self._records: dict[str, dict[int, Record]] = {}
        self._pairs: dict[str, PairRecord] = {}
        self._lock = threading.Lock()
        #: how :meth:`commit` applies each type of change
        self._apply: dict[type, Callable[[Any, list[_Undo]], None]] = {
            Fence: self._fence, Append: self._append, UpdateRecord: self._update_record,
            UpdateRun: self._update_run, CreateRun: self._create_run}

    def create_run(self, run: RunInfo) -> None:
        with self._lock:
            self._create_run(CreateRun(run), [])

    def get_run(self, run_id: str) -> RunInfo | None:
        run = self._runs.get(run_id)
        return run.copy() if run else None

    def list_runs(self, status: RunStatus | Iterable[RunStatus] | None = None,
                  limit: int | None = None) -> list[RunInfo]:
        wanted = status_set(status)
        with self._lock:
            runs = [r.copy() for r in self._runs.values() if wanted is None or r.status in wanted]
        runs.sort(key=lambda r: r.created_at, reverse=True)
        return runs[:limit] if limit else runs

    def query_runs(self, where: RunFilter, limit: int = 50) -> list[RunInfo]:
        """Runs matching ``where``, newest first (the ``run_query`` capability)."""
        with self._lock:
            found = [r.copy() for r in self._runs.values()
                     if where.matches(r, {rec.tool for rec in self._records[r.run_id].values()}
                                      if where.tool else ())]
        found.sort(key=lambda r: (r.created_at, r.run_id), reverse=True)
        return found[:limit]

    def update_run(self, run_id: str, **fields: Any) -> None:
        with self._lock:
            self._update_run(UpdateRun(run_id, fields), [])

    def claim_run(self, run_id: str, owner: str, now: float, lease_seconds: float) -> bool:
        with self._lock:
            run = self._runs.get(run_id)
            if run is None:
                return False
            if run.owner not in (None, owner) and run.lease_until > now:
                return False
            run.owner = owner
            run.lease_until = now + lease_seconds
            return True

    def append(self, record: Record) -> None:
        with self._lock:
            self._append(Append(record), [])

    def update_record(self, run_id: str, seq: int, **fields: Any) -> None:
        with self._lock:
            self._update_record(UpdateRecord(run_id, seq, fields), [])

    def get_records(self, run_id: str) -> list[Record]:
        recs = self._records.get(run_id, {}).copy()
        out = []
        for s in sorted(recs):
            rec = recs[s].copy()
            rec.args = _clone(rec.args)
            rec.result = _clone(rec.result)
            rec.undo = _clone(rec.undo)
            out.append(rec)
        return out

    # -- the changes of a step, together (the ``commit`` capability) ------------------------
    def commit(self, changes: Sequence[Change], *, durable: bool = True) -> None:
        """Apply ``changes`` in order, all or none (``durable`` means nothing in memory).

        Each change checks everything it can refuse before it changes anything, so a refused
        change leaves nothing of itself; what the changes before it did is taken back from
        ``undo``, a list of plain entries (no closure per change: a call commits twice). The
        changes are applied through a table by type: every step of every call comes here."""
        undo: list[_Undo] = []
        apply = self._apply
        with self._lock:
            try:
                last = len(changes) - 1
                for i, change in enumerate(changes):
                    how = apply.get(type(change))
                    if how is None:
                        raise TypeError(f"not a change of the log: {change!r}")
                    # the last change refuses before it changes anything: no undo entry
                    how(change, undo if i < last else _NO_UNDO)
            except BaseException:
                _take_back(undo)
                raise

    # -- one change each, under the lock; ``undo`` collects how to take it back ---------------
    def _create_run(self, change: CreateRun, undo: list[_Undo]) -> None:
        run = change.run
        if run.run_id in self._runs:
            raise ConflictError(f"run {run.run_id!r} already exists in the log")
        self._runs[run.run_id] = run.copy()
        undo.append((self._runs, run.run_id, None))
        if run.run_id not in self._records:
            self._records[run.run_id] = {}
            undo.append((self._records, run.run_id, None))

    def _update_run(self, change: UpdateRun, undo: list[_Undo]) -> None:
        fields = change.fields
        if not fields.keys() <= _RUN_FIELDS:
            check_fields("run", fields, RUN_COLUMNS)
        run = self._runs[change.run_id]
        status = fields.get("status")
        if status is not None:
            if type(status) is not RunStatus:
                fields = {**fields, "status": RunStatus(status)}
                status = fields["status"]
            check_run(change.run_id, run.status, status)
        _assign(run, fields, undo)

    def _append(self, change: Append, undo: list[_Undo]) -> None:
        record = change.record
        recs = self._records.get(record.run_id)
        if recs is None:
            recs = self._records.setdefault(record.run_id, {})
        if record.seq in recs:
            raise ConflictError(
                f"record {record.run_id}#{record.seq} already exists "
                f"({recs[record.seq].tool}); refusing to overwrite it")
        recs[record.seq] = record.copy()
        if undo is not _NO_UNDO:  # (the last change's needs none: no call to make)
            undo.append((recs, record.seq, None))

    def _update_record(self, change: UpdateRecord, undo: list[_Undo]) -> None:
        fields = change.fields
        if not fields.keys() <= _RECORD_FIELDS:
            check_fields("record", fields, RECORD_COLUMNS)
        rec = self._records[change.run_id][change.seq]
        if change.expect is not None and rec.status is not change.expect:
            raise status_changed(change, rec.status)
        status = fields.get("status")
        if status is not None:
            if type(status) is not RecordStatus:
                fields = {**fields, "status": RecordStatus(status)}
                status = fields["status"]
            check_record(rec, rec.status, status)
        _assign(rec, fields, undo)

    def _fence(self, fence: Fence, undo: list[_Undo]) -> None:
        run = self._runs[fence.run_id]
        if run.owner != fence.owner:
            raise lease_lost(fence.run_id, fence.owner, run.owner)
        if fence.lease_until is not None:
            undo.append((run, "lease_until", run.lease_until))
            run.lease_until = fence.lease_until

    # -- pairs (the ``pairs`` capability) ------------------------------------------------------
    def put_pair(self, pair: PairRecord) -> None:
        """Write ``pair``, replacing every field of the pair with the same key."""
        with self._lock:
            self._pairs[pair.key] = pair.copy()

    def get_pair(self, key: str) -> PairRecord | None:
        """The pair with this key, or None."""
        pair = self._pairs.get(key)
        return pair.copy() if pair is not None else None

    def list_pairs(self) -> list[PairRecord]:
        """Every pair, oldest first."""
        with self._lock:
            pairs = [p.copy() for p in self._pairs.values()]
        pairs.sort(key=lambda p: (p.created_at, p.key))
        return pairs

    def close(self) -> None:
        return None


#: How to take one change back: (dict, key, None) pops the key a change added; (obj, name,
#: value) sets an attribute back; (obj, fields, None) with ``fields`` a dict sets each back.
_Undo = tuple[Any, Any, Any]


class _Discard(list[_Undo]):
    """The undo list of a commit's last change: nothing after it can fail, so nothing of it
    needs taking back."""

    def append(self, entry: _Undo) -> None:  # noqa: D102 - see the class
        return None


_NO_UNDO = _Discard()


def _assign(obj: Any, fields: Mapping[str, Any], undo: list[_Undo]) -> None:
    """Set ``fields`` on ``obj``; ``undo`` learns how to set them back."""
    if type(undo) is list:  # not the last change's (see _Discard)
        undo.append((obj, {k: getattr(obj, k) for k in fields}, None))
    for k, v in fields.items():
        setattr(obj, k, v)


def _take_back(undo: list[_Undo]) -> None:
    """Undo the entries of a commit that failed part-way, newest first."""
    for target, what, value in reversed(undo):
        if type(target) is dict:
            target.pop(what, None)
        elif type(what) is dict:
            for k, v in what.items():
                setattr(target, k, v)
        else:
            setattr(target, what, value)


def _clone(value: Any) -> Any:
    """A deep copy of a JSON-safe value (dicts, lists, scalars), so no caller shares the log's."""
    t = type(value)
    if t is dict:
        return {k: _clone(v) for k, v in value.items()}
    if t is list:
        return [_clone(v) for v in value]
    return value

