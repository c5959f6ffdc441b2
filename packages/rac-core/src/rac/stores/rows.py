"""How records, runs and pairs become table rows and back, shared by the SQL stores (SQLite,
PostgreSQL): the column lists, JSON encoding of values, and field-name checks.

The ``undo`` column is the one column whose text is not plain JSON when the log has a key:
:mod:`rac.sealing` seals it. Its encoding therefore lives in :class:`rac.stores.sql.SQLStore`,
which knows the store's key, not here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from rac.errors import StoreError
from rac.models import PairRecord, Record, RunInfo, RunStatus

RECORD_COLUMNS = ["run_id", "seq", "kind", "tool", "status", "agent_id", "scope", "args",
                  "result", "error", "attempts", "idempotency_key", "depends_on", "compensates",
                  "alternative_of", "compensable", "read_only", "note", "created_at",
                  "updated_at", "effect", "undo", "call_id"]
RUN_COLUMNS = ["run_id", "agent_id", "status", "created_at", "updated_at", "owner",
               "lease_until", "summary", "report"]
PAIR_COLUMNS = ["key", "tool", "compensator", "args", "source", "status", "schema_hash",
                "note", "created_at", "updated_at"]
#: Record columns stored as JSON text (not a native JSON type: values come back exactly as
#: written).
JSON_FIELDS = frozenset({"args", "result", "depends_on"})
BOOL_FIELDS = frozenset({"compensable", "read_only"})


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
    """A record from a row in :data:`RECORD_COLUMNS` order, with its unsealed ``undo``."""
    d = dict(zip(RECORD_COLUMNS, row, strict=True))
    for name in JSON_FIELDS:
        d[name] = json.loads(d[name]) if d[name] is not None else None
    for name in BOOL_FIELDS:
        d[name] = bool(d[name])
    d["depends_on"] = d["depends_on"] or []
    d["effect"] = d["effect"] or ""
    d["call_id"] = d["call_id"] or ""
    d["undo"] = undo
    return Record.from_dict(d)


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
