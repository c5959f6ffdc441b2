"""The operator's tools at speed (issue #28): how long ``rac runs`` and ``rac show`` take on a
log of 10,000 runs, against ``python -c "import rac"``, and what storing a large tool result
costs (redaction and the size cap) against ``json.dumps`` of the same value. Writes
``benchmarks/results/operator_speed.json``.

    uv run python -m benchmarks.suites.operator_speed [--runs 11] [--reps 15]

Each command runs ``--runs`` times in a fresh interpreter; the figure is the median, in wall
time and in CPU time (user + system of the child, which a loaded machine inflates less).
Each value is stored ``--reps`` times; the figure is the median. Ratios are taken side by side
in one run; nothing here is a pass/fail threshold.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

RUNS_IN_LOG = 10_000


def build_log(path: Path) -> str:
    """A SQLite log of 10,000 finished runs, one record each; returns its URL."""
    from rac.models import Record, RecordKind, RecordStatus, RunInfo, RunStatus
    from rac.stores import open_store
    from rac.stores.changes import Append, Change, CreateRun

    url = f"sqlite:///{path}"
    store: Any = open_store(url)
    changes: list[Change] = []
    for i in range(RUNS_IN_LOG):
        run_id = f"run-{i:05d}"
        changes.append(CreateRun(RunInfo(run_id, "agent", RunStatus.COMPLETED,
                                         1.7e9 + i, 1.7e9 + i)))
        changes.append(Append(Record(run_id, 1, "book_flight", RecordKind.ACTION,
                                     RecordStatus.COMPLETED, args={"passenger": "ann"},
                                     result={"booking_id": f"FL-{i}"})))
    store.commit(changes)
    store.close()
    return url


def time_command(argv: list[str], runs: int) -> dict[str, Any]:
    """Median wall and CPU milliseconds of ``argv`` over ``runs`` fresh processes."""
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        walls.append((time.perf_counter() - t0) * 1000)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
                    * 1000)
    return {"wall_ms": round(statistics.median(walls), 1),
            "cpu_ms": round(statistics.median(cpus), 1), "runs": runs}


def cli_figures(runs: int) -> dict[str, Any]:
    rac_bin = str(Path(sys.executable).with_name("rac"))
    with tempfile.TemporaryDirectory() as tmp:
        url = build_log(Path(tmp) / "log.db")
        probes = {
            'python -c "import rac"': [sys.executable, "-c", "import rac"],
            "rac --help": [rac_bin, "--help"],
            "rac runs": [rac_bin, "runs", "--store", url],
            "rac runs --json": [rac_bin, "runs", "--store", url, "--json"],
            "rac show RUN": [rac_bin, "show", "run-04242", "--store", url],
            "rac show RUN --json": [rac_bin, "show", "run-04242", "--store", url, "--json"],
        }
        out = {name: time_command(argv, runs) for name, argv in probes.items()}
    base = out['python -c "import rac"']
    for fig in out.values():
        fig["x_import_wall"] = round(fig["wall_ms"] / base["wall_ms"], 2)
        fig["x_import_cpu"] = round(fig["cpu_ms"] / base["cpu_ms"], 2)
    return out


def _prose(n: int, rng: random.Random) -> str:
    words = ("the booking of a hotel room in Paris for two nights was confirmed by the "
             "front desk at 2026 rates and the guest asked for a late check out").split()
    parts: list[str] = []
    size = 0
    while size < n:
        w = rng.choice(words)
        parts.append(w)
        size += len(w) + 1
    return " ".join(parts)[:n]


def values(rng: random.Random) -> dict[str, Any]:
    """The values measured: a call's arguments (short values; realistic ids, timestamps and
    URLs), prose of 1 KB, 100 KB and 1 MB (a result that is one long
    text), 1 MB of JSON rows (a list of small dicts) and 1 MB of JSON text (a string holding
    a JSON document)."""
    rows = [{"id": i, "guest": f"guest {i}", "city": "Paris", "nights": i % 7,
             "note": "late check out"} for i in range(12_500)]
    return {
        "call args, short values": {"passenger": "ann", "origin": "SFO", "dest": "CDG",
                                    "nights": 2},
        "call args, UUID / timestamp / URL": {
            "booking_id": "123e4567-e89b-12d3-a456-426614174000",
            "at": "2026-12-02T05:05:21Z",
            "url": "https://api.example.com/v1/bookings/HT-102", "nights": 2},
        "prose 1 KB": {"text": _prose(1_000, rng)},
        "prose 100 KB": {"text": _prose(100_000, rng)},
        "prose 1 MB": {"text": _prose(1_000_000, rng)},
        "rows 1 MB": rows,
        "JSON text 1 MB": json.dumps(rows),
    }


def _median_ms(fn: Any, reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def value_figures(reps: int) -> dict[str, Any]:
    from rac.serialize import store_value

    out: dict[str, Any] = {}
    for name, value in values(random.Random(7)).items():
        n = 200 if len(json.dumps(value)) < 10_000 else 1  # small values: time 200 at once
        dumps = _median_ms(lambda v=value, n=n: [json.dumps(v) for _ in range(n)], reps) / n
        stored = _median_ms(lambda v=value, n=n: [store_value(v) for _ in range(n)], reps) / n
        out[name] = {"json_dumps_ms": round(dumps, 4), "store_value_ms": round(stored, 4),
                     "x_json_dumps": round(stored / dumps, 2),
                     "json_chars": len(json.dumps(value)), "reps": reps}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=11, help="processes per command")
    parser.add_argument("--reps", type=int, default=15, help="repetitions per value")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "results" /
                                             "operator_speed.json"))
    args = parser.parse_args()
    results = {
        "command": "uv run python -m benchmarks.suites.operator_speed "
                   f"--runs {args.runs} --reps {args.reps}",
        "cli": cli_figures(args.runs),
        "values": value_figures(args.reps),
        "load_average": list(os.getloadavg()),
        "cpus": os.cpu_count(),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
