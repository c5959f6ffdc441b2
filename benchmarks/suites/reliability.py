"""Reliability figures: durable-store overhead per call, recovery time, shared-log throughput.

    uv run python -m benchmarks.suites.reliability            # writes benchmarks/results/reliability.json

PostgreSQL figures are measured when RAC_TEST_POSTGRES_URL is set (``eval "$(.ci/postgres.sh
start)"``), else reported as skipped.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import rac
from rac.stores import open_store

OUT = Path(__file__).resolve().parents[1] / "results" / "reliability.json"


def act(n: int) -> dict[str, Any]:
    return {"item_id": f"I-{n}"}


def undo(item_id: str) -> dict[str, Any]:
    return {"undone": item_id}


def engine_for(url: str) -> rac.RAC:
    return rac.RAC(compensations={"act": "undo"}, tools=[act, undo], store=url,
                   load_entrypoints=False)


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def overhead(url: str, calls: int = 300) -> dict[str, float]:
    bare = []
    for i in range(calls):
        t = time.perf_counter()
        act(i)
        bare.append(time.perf_counter() - t)
    engine = engine_for(url)
    wrapped = []
    with engine.run() as run:
        for i in range(calls):
            t = time.perf_counter()
            run.call(act, n=i)
            wrapped.append(time.perf_counter() - t)
    engine.store.close()
    extra = [w - statistics.median(bare) for w in wrapped]
    return {"calls": calls, "median_us": round(statistics.median(extra) * 1e6, 1),
            "p99_us": round(pct(extra, 0.99) * 1e6, 1)}


def recovery_time(url: str, records: int) -> dict[str, float]:
    engine = engine_for(url)
    run = engine.run()
    run.start()
    for i in range(records):
        run.call(act, n=i)  # the process "dies" here: the run is left running
    t = time.perf_counter()
    (out,) = engine_for(url).recover([run.run_id])
    elapsed = time.perf_counter() - t
    assert out.outcome == "compensated", out
    engine.store.close()
    return {"records": records, "seconds": round(elapsed, 4),
            "per_record_ms": round(elapsed / records * 1e3, 3)}


def throughput(url: str, agents: int, calls: int = 40) -> dict[str, float]:
    engine = engine_for(url)
    errors: list[BaseException] = []
    barrier = threading.Barrier(agents)

    def agent() -> None:
        try:
            barrier.wait()
            with engine.run() as run:
                for i in range(calls):
                    run.call(act, n=i)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=agent) for _ in range(agents)]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    elapsed = time.perf_counter() - t
    engine.store.close()
    assert not errors, errors
    return {"agents": agents, "calls": agents * calls,
            "calls_per_second": round(agents * calls / elapsed, 1)}


def measure(url: str) -> dict[str, Any]:
    return {"overhead_per_call": overhead(url),
            "recovery": [recovery_time(url, n) for n in (10, 1000)],
            "throughput": [throughput(url, n) for n in (1, 4, 8)]}


def main() -> int:
    import logging

    import structlog

    # Measure RAC, not a console: events below CRITICAL are dropped, as the CLI does.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    results: dict[str, Any] = {"python": sys.version.split()[0], "machine": platform.machine(),
                               "cpus": os.cpu_count(), "time": time.strftime("%Y-%m-%dT%H:%M:%S")}
    with tempfile.TemporaryDirectory() as tmp:
        results["sqlite_full_sync"] = measure(f"sqlite:///{tmp}/bench.db")
    pg = os.environ.get("RAC_TEST_POSTGRES_URL")
    if pg:
        url = f"{pg}{'&' if '?' in pg else '?'}rac_schema=rac_bench_{uuid.uuid4().hex[:8]}"
        try:
            results["postgres_loopback"] = measure(url)
        finally:
            store = open_store(url)
            store.drop_schema()  # type: ignore[attr-defined]
            store.close()
    else:
        results["postgres_loopback"] = "skipped: RAC_TEST_POSTGRES_URL is not set"
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
