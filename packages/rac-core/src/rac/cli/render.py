"""Plain-text and JSON renderings of runs and records for the CLI."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rac.models import Record, RunInfo


def record_json(r: Record) -> dict[str, Any]:
    """The JSON shape of one record in ``rac show --json``."""
    return {"seq": r.seq, "tool": r.tool, "kind": str(r.kind), "status": str(r.status),
            "args": r.args, "result": r.result, "error": r.error, "attempts": r.attempts,
            "compensates": r.compensates, "agent_id": r.agent_id}


def run_json(run_id: str, status: str, records: Sequence[Record]) -> dict[str, Any]:
    """The JSON object ``rac show --json`` prints."""
    return {"run_id": run_id, "status": status, "records": [record_json(r) for r in records]}


def _short(value: Any, width: int) -> str:
    text = "" if value is None else (value if isinstance(value, str) else json.dumps(value))
    return text if len(text) <= width else text[: width - 1] + "…"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A left-aligned text table."""
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
             for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def records_table(records: Sequence[Record]) -> str:
    """The log of one run as a table."""
    rows = [(r.seq, r.kind, r.tool, r.status, r.attempts,
             "" if r.compensates is None else f"#{r.compensates}",
             _short(r.args, 38), _short(r.error or r.result, 44)) for r in records]
    return table(["seq", "kind", "tool", "status", "tries", "undoes", "args", "result / error"],
                 rows)


def runs_table(runs: Sequence[RunInfo]) -> str:
    """A list of runs as a table."""
    import datetime as dt

    rows = [(r.run_id, r.status, r.agent_id,
             dt.datetime.fromtimestamp(r.created_at).strftime("%Y-%m-%d %H:%M:%S"))
            for r in runs]
    return table(["run_id", "status", "agent", "started"], rows)
