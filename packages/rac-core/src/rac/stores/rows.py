"""How records, runs and pairs become table rows and back, shared by the SQL stores (SQLite,
PostgreSQL): the column lists, JSON encoding of values, and field-name checks.

The ``undo`` column is the one column whose text is not plain JSON when the log has a key:
:mod:`rac.sealing` seals it. Its encoding therefore lives in :class:`rac.stores.sql.SQLStore`,
which knows the store's key, not here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from rac.errors import StoreError
from rac.models import PairRecord, Record, RecordKind, RecordStatus, RunInfo, RunStatus

RECORD_COLUMNS = ["run_id", "seq", "kind", "tool", "status", "agent_id", "scope", "args",
                  "result", "error", "attempts", "idempotency_key", "depends_on", "compensates",
                  "alternative_of", "compensable", "read_only", "note", "created_at",
                  "updated_at", "effect", "undo", "call_id", "happened"]
RUN_COLUMNS = ["run_id", "agent_id", "status", "created_at", "updated_at", "owner",
               "lease_until", "summary", "report"]
PAIR_COLUMNS = ["key", "tool", "compensator", "args", "source", "status", "schema_hash",
                "note", "created_at", "updated_at"]
#: Record columns stored as JSON text (not a native JSON type: values come back exactly as
#: written).
JSON_FIELDS = frozenset({"args", "result", "depends_on"})
BOOL_FIELDS = frozenset({"compensable", "read_only"})


_loads = json.loads


def dump_json(value: Any, what: str) -> str:
    """``value`` as compact JSON text; a StoreError naming ``what`` if it is not JSON-safe."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as e:
        raise StoreError(f"{what} is not JSON-safe and cannot be written to the log: {e}") from e


def encode(name: str, value: Any, *, int_bools: bool = False) -> Any:
    """The column value for a record field other than ``undo`` (``int_bools`` for stores
    without booleans)."""
    if name in JSON_FIELDS:
        return dump_json(value, f"record field {name!r}")
    if int_bools and name in BOOL_FIELDS:
        return 1 if value else 0
    if name in ("kind", "status") and value is not None:
        return str(value)
    return value


def decode_record(row: Sequence[Any], undo: dict[str, Any] | None) -> Record:
    """A record from a row in :data:`RECORD_COLUMNS` order, with its unsealed ``undo``
    (field by field, not through a dict: recovery reads every record of a big run)."""
    d = dict(zip(RECORD_COLUMNS, row, strict=True))
    args, result, depends = d["args"], d["result"], d["depends_on"]
    d["args"] = _loads(args) if args is not None else None
    d["result"] = _loads(result) if result is not None else None
    d["depends_on"] = (_loads(depends) if depends is not None else None) or []
    d["compensable"] = bool(d["compensable"])
    d["read_only"] = bool(d["read_only"])
    d["kind"] = RecordKind(d["kind"])
    d["status"] = RecordStatus(d["status"])
    d["effect"] = d["effect"] or ""
    d["call_id"] = d["call_id"] or ""
    d["happened"] = d["happened"] or ""
    d["undo"] = undo
    return Record(**d)


def record_row(record: Record, seal: Callable[[Any], Any], *, int_bools: bool) -> list[Any]:
    """A record as column values, in :data:`RECORD_COLUMNS` order, ``undo`` through ``seal``
    (read attribute by attribute: recovery writes thousands at once)."""
    return [seal(record.undo) if c == "undo" else
            encode(c, list(record.depends_on) if c == "depends_on" else getattr(record, c),
                   int_bools=int_bools)
            for c in RECORD_COLUMNS]


def decode_run(row: Sequence[Any]) -> RunInfo:
    """A run from a row in :data:`RUN_COLUMNS` order."""
    d = dict(zip(RUN_COLUMNS, row, strict=True))
    d["status"] = RunStatus(d["status"])
    return RunInfo(**d)


def pair_row(pair: PairRecord) -> list[Any]:
    """A pair as column values, in :data:`PAIR_COLUMNS` order."""
    d = pair.to_dict()
    d["args"] = dump_json(d["args"], f"the argument mapping of pair {pair.key!r}")
    return [d[c] for c in PAIR_COLUMNS]


def decode_pair(row: Sequence[Any]) -> PairRecord:
    """A pair from a row in :data:`PAIR_COLUMNS` order."""
    d = dict(zip(PAIR_COLUMNS, row, strict=True))
    d["args"] = json.loads(d["args"]) if d["args"] else {}
    return PairRecord(**d)


def check_fields(kind: str, fields: Iterable[str], columns: Sequence[str]) -> None:
    """Raise StoreError naming any field that is not a column (never build SQL from them)."""
    bad = set(fields) - set(columns)
    if bad:
        raise StoreError(f"unknown {kind} field(s): {sorted(bad)}")
