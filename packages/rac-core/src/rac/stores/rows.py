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
# One encoder, built once: json.dumps with options builds a new one at every call.
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def dump_json(value: Any, what: str) -> str:
    """``value`` as compact JSON text; a StoreError naming ``what`` if it is not JSON-safe."""
    try:
        return _dumps(value)
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
    d["result"] = None if result is None or result == "null" else _loads(result)
    d["depends_on"] = [] if depends is None or depends == "[]" else (_loads(depends) or [])
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
    r = record
    try:
        args, result, depends = _dumps(r.args), _dumps(r.result), _dumps(list(r.depends_on))
    except (TypeError, ValueError):  # name the field that is not JSON-safe
        for name in ("args", "result", "depends_on"):
            encode(name, getattr(r, name), int_bools=int_bools)
        raise
    kind, status = r.kind, r.status
    compensable, read_only = ((1 if r.compensable else 0, 1 if r.read_only else 0)
                              if int_bools else (r.compensable, r.read_only))
    # the order of RECORD_COLUMNS (checked below, at import)
    return [r.run_id, r.seq, str(kind) if kind is not None else None, r.tool,
            str(status) if status is not None else None, r.agent_id, r.scope, args, result,
            r.error, r.attempts, r.idempotency_key, depends, r.compensates, r.alternative_of,
            compensable, read_only, r.note, r.created_at, r.updated_at, r.effect,
            seal(r.undo), r.call_id, r.happened]


assert RECORD_COLUMNS == [
    "run_id", "seq", "kind", "tool", "status", "agent_id", "scope", "args", "result", "error",
    "attempts", "idempotency_key", "depends_on", "compensates", "alternative_of", "compensable",
    "read_only", "note", "created_at", "updated_at", "effect", "undo", "call_id", "happened",
], "record_row writes the columns in this order"


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


#: The column lists' names as sets, by list (the lists above are module constants).
_COLUMN_SETS: dict[int, frozenset[str]] = {}


def check_fields(kind: str, fields: Iterable[str], columns: Sequence[str]) -> None:
    """Raise StoreError naming any field that is not a column (never build SQL from them)."""
    known = _COLUMN_SETS.get(id(columns))
    if known is None:
        known = _COLUMN_SETS[id(columns)] = frozenset(columns)
    if known.issuperset(fields):
        return
    bad = set(fields) - known
    if bad:
        raise StoreError(f"unknown {kind} field(s): {sorted(bad)}")
