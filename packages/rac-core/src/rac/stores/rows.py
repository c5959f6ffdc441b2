"""How records and runs become table rows and back, shared by the SQL stores (SQLite,
PostgreSQL): the column lists, JSON encoding of values, and field-name checks."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from rac.errors import StoreError
from rac.models import Record, RunInfo, RunStatus

RECORD_COLUMNS = ["run_id", "seq", "kind", "tool", "status", "agent_id", "scope", "args",
                  "result", "error", "attempts", "idempotency_key", "depends_on", "compensates",
                  "alternative_of", "compensable", "read_only", "note", "created_at",
                  "updated_at"]
RUN_COLUMNS = ["run_id", "agent_id", "status", "created_at", "updated_at", "owner",
               "lease_until", "summary"]
#: Columns stored as JSON text (not a native JSON type: values come back exactly as written).
JSON_FIELDS = frozenset({"args", "result", "depends_on"})
BOOL_FIELDS = frozenset({"compensable", "read_only"})


def encode(name: str, value: Any, *, int_bools: bool = False) -> Any:
    """The column value for a record field (``int_bools`` for stores without booleans)."""
    if name in JSON_FIELDS:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if int_bools and name in BOOL_FIELDS:
        return 1 if value else 0
    if name in ("kind", "status") and value is not None:
        return str(value)
    return value


def record_row(record: Record, *, int_bools: bool = False) -> list[Any]:
    """A record as column values, in :data:`RECORD_COLUMNS` order."""
    d = record.to_dict()
    return [encode(c, d[c], int_bools=int_bools) for c in RECORD_COLUMNS]


def decode_record(row: Sequence[Any]) -> Record:
    """A record from a row in :data:`RECORD_COLUMNS` order."""
    d = dict(zip(RECORD_COLUMNS, row, strict=True))
    for name in JSON_FIELDS:
        d[name] = json.loads(d[name]) if d[name] is not None else None
    for name in BOOL_FIELDS:
        d[name] = bool(d[name])
    d["depends_on"] = d["depends_on"] or []
    return Record.from_dict(d)


def decode_run(row: Sequence[Any]) -> RunInfo:
    """A run from a row in :data:`RUN_COLUMNS` order."""
    d = dict(zip(RUN_COLUMNS, row, strict=True))
    d["status"] = RunStatus(d["status"])
    return RunInfo(**d)


def check_fields(kind: str, fields: Iterable[str], columns: Sequence[str]) -> None:
    """Raise StoreError naming any field that is not a column (never build SQL from them)."""
    bad = set(fields) - set(columns)
    if bad:
        raise StoreError(f"unknown {kind} field(s): {sorted(bad)}")
