"""How fast ``rac ui``'s pages answer on a big log: the runs page (first page, the hundredth
page by cursor, filtered by status and by tool), a run's page and the needs-attention queue,
on a SQLite log of 10,000 runs, beside the same pages on a log of 100 runs (the comparator: a
page should cost the same on either). In-process through the application's own HTTP interface
(Starlette's test client); median of N requests. Writes ``benchmarks/results/ui_pages.json``.

    uv run python -m benchmarks.suites.ui_pages [--runs 10000] [--repeat 15]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from rac.models import Record, RecordKind, RecordStatus, RunInfo, RunStatus
from rac.stores.rows import RECORD_COLUMNS, RUN_COLUMNS, encode

STATUSES = [RunStatus.COMPLETED] * 8 + [RunStatus.COMPENSATED, RunStatus.NEEDS_ATTENTION]
TOOLS = ["book_flight", "book_hotel", "book_car"]


def build_log(path: Path, runs: int) -> str:
    """A SQLite log of ``runs`` runs (three records each), written in one transaction through
    RAC's own schema (the store creates it; rows as the store encodes them)."""
    from rac.stores import SQLiteStore

    SQLiteStore(path).close()  # the schema, as RAC writes it
    conn = sqlite3.connect(path)
    run_rows, rec_rows = [], []
    for i in range(runs):
        status = STATUSES[i % len(STATUSES)]
        info = RunInfo(f"run-{i:07d}", agent_id=f"agent-{i % 7}", status=status,
                       created_at=1_700_000_000.0 + i, updated_at=1_700_000_000.0 + i)
        d = info.to_dict()
        run_rows.append([d[c] for c in RUN_COLUMNS])
        for seq, tool in enumerate(TOOLS[: 1 + i % 3], 1):
            rec = Record(info.run_id, seq, tool, RecordKind.ACTION,
                         RecordStatus.COMPENSATION_FAILED if status is RunStatus.NEEDS_ATTENTION
                         and seq == 1 else RecordStatus.COMPLETED,
                         args={"who": f"p{i}"}, result={"booking_id": f"B-{i}-{seq}"},
                         attempts=1, created_at=info.created_at, updated_at=info.updated_at,
                         effect="unsafe")
            rd = rec.to_dict()
            rec_rows.append([encode(c, rd[c], int_bools=True) if c != "undo" else None
                             for c in RECORD_COLUMNS])
    with conn:
        conn.executemany(f"INSERT INTO runs({','.join(RUN_COLUMNS)}) VALUES "
                         f"({','.join('?' * len(RUN_COLUMNS))})", run_rows)
        conn.executemany(f"INSERT INTO records({','.join(RECORD_COLUMNS)}) VALUES "
                         f"({','.join('?' * len(RECORD_COLUMNS))})", rec_rows)
    conn.close()
    return f"sqlite:///{path}"


def time_pages(url: str, repeat: int) -> dict[str, float]:
    """Median milliseconds per page."""
    from starlette.testclient import TestClient

    from rac.stores import open_store
    from rac.ui.app import create_app
    from rac.ui.security import Guard

    store = open_store(url, read_only=True)
    client = TestClient(create_app(store, guard=Guard.for_server("127.0.0.1",
                                                                  token="x" * 20,
                                                                  read_only=True)),
                        base_url="http://127.0.0.1")
    # the cursor of the 100th page (or of the last one on a small log)
    newest = store.list_runs(limit=1)[0]
    total = len(store.list_runs())
    depth = min(99 * 50, max(total - 50, 0))
    at = newest.created_at - depth
    deep = f"/runs?after={at!r}:run-{int(at - 1_700_000_000):07d}"
    some = store.list_runs(limit=1)[0].run_id
    paths = {"runs, first page": "/runs", "runs, page 100 (cursor)": deep,
             "runs, needs_attention": "/runs?status=needs_attention",
             "runs, tool=book_car": "/runs?tool=book_car",
             "one run": f"/runs/{some}"}
    out: dict[str, float] = {}
    for label, path in paths.items():
        assert client.get(path).status_code == 200, path
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            response = client.get(path)
            times.append((time.perf_counter() - t0) * 1000)
            assert response.status_code == 200
        out[label] = round(statistics.median(times), 2)
    store.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--small", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "results" /
                                             "ui_pages.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rac-ui-bench-") as tmp:
        big = time_pages(build_log(Path(tmp) / "big.db", args.runs), args.repeat)
        small = time_pages(build_log(Path(tmp) / "small.db", args.small), args.repeat)
    results: dict[str, Any] = {
        "command": "uv run python -m benchmarks.suites.ui_pages",
        "runs": args.runs, "small_runs": args.small, "repeat": args.repeat,
        "median_ms": {label: {f"{args.runs} runs": big[label],
                              f"{args.small} runs": small[label],
                              "ratio": round(big[label] / small[label], 2)}
                      for label in big},
        "load_average": list(os.getloadavg()),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
