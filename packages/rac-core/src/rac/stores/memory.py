"""The in-memory store: fast, for tests and for runs that need no durability."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from rac.errors import ConflictError
from rac.models import PairRecord, Record, RecordStatus, RunInfo, RunStatus
from rac.stores.base import status_set
from rac.stores.capabilities import PAIRS, RUN_QUERY, RunFilter
from rac.stores.rows import RECORD_COLUMNS, RUN_COLUMNS, check_fields

_RECORD_FIELDS = frozenset(RECORD_COLUMNS)
_RUN_FIELDS = frozenset(RUN_COLUMNS)


class MemoryStore:
    """A transaction log held in process memory. Appends and updates are O(1); thread-safe.

    Writes keep the JSON values (``args``, ``result``) they are given, which RAC never changes
    after writing; reads return deep copies, so nothing a reader does reaches the log.
    Undo data is kept as given (nothing to seal in memory).
    """

    #: Optional capabilities beyond the Store protocol (see :mod:`rac.stores.capabilities`).
    capabilities: frozenset[str] = frozenset({PAIRS, RUN_QUERY})

    def __init__(self) -> None:
        self.url = "memory://"
        self._runs: dict[str, RunInfo] = {}
        self._records: dict[str, dict[int, Record]] = {}
        self._pairs: dict[str, PairRecord] = {}
        self._lock = threading.Lock()

    def create_run(self, run: RunInfo) -> None:
        with self._lock:
            if run.run_id in self._runs:
                raise ConflictError(f"run {run.run_id!r} already exists in the log")
            self._runs[run.run_id] = run.copy()
            self._records.setdefault(run.run_id, {})

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
            if not fields.keys() <= _RUN_FIELDS:
                check_fields("run", fields, RUN_COLUMNS)
            run = self._runs[run_id]
            for k, v in fields.items():
                setattr(run, k, RunStatus(v) if k == "status" and type(v) is not RunStatus
                        else v)

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

    # Record operations rely on the atomicity of single dict operations (setdefault, copy)
    # instead of a lock: they are on the hot path of every tool call.
    def append(self, record: Record) -> None:
        recs = self._records.get(record.run_id)
        if recs is None:
            recs = self._records.setdefault(record.run_id, {})
        mine = record.copy()
        existing = recs.setdefault(record.seq, mine)
        if existing is not mine:
            raise ConflictError(
                f"record {record.run_id}#{record.seq} already exists ({existing.tool}); "
                "refusing to overwrite it")

    def update_record(self, run_id: str, seq: int, **fields: Any) -> None:
        if not fields.keys() <= _RECORD_FIELDS:
            check_fields("record", fields, RECORD_COLUMNS)
        rec = self._records[run_id][seq]
        status = fields.get("status")
        if status is not None and type(status) is not RecordStatus:
            fields["status"] = RecordStatus(status)
        for k, v in fields.items():
            setattr(rec, k, v)

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


def _clone(value: Any) -> Any:
    """A deep copy of a JSON-safe value (dicts, lists, scalars), so no caller shares the log's."""
    t = type(value)
    if t is dict:
        return {k: _clone(v) for k, v in value.items()}
    if t is list:
        return [_clone(v) for v in value]
    return value

