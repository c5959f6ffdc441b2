"""The bare bookkeeping cost of one successful call: RAC's ``run.execute`` (memory store)
against the reference implementation's own core path for the same call
(``RecoveryManager.record_action`` + ``mark_completed``, empty log), same tool, same arguments,
in one process. It calibrates the machine: the issue's absolute targets were written for a
machine on which that reference path costs about 13 µs.

    uv run --group bench python -m benchmarks.suites.core_path [--calls 3000] [--rounds 5]

Writes ``benchmarks/results/core_path.json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import time
from pathlib import Path
from typing import Any

import rac


def book(passenger: str) -> dict[str, Any]:
    """The measured tool: returns a booking id, touches nothing."""
    return {"booking_id": f"BK-{passenger}", "status": "confirmed"}


def cancel(booking_id: str) -> dict[str, Any]:
    """Its compensator (never called here)."""
    return {"cancelled": booking_id}


def rac_execute_us(calls: int) -> float:
    """Median µs of ``run.execute`` for a successful call, one run holding all the calls."""
    engine = rac.RAC(compensations={"book": "cancel"}, tools=[book, cancel], store="memory://",
                     load_entrypoints=False)
    times = []
    with engine.run() as run:
        for i in range(calls):
            args = {"passenger": f"p{i:06d}"}
            t0 = time.perf_counter_ns()
            run.execute("book", args, lambda _n, a: book(**a))
            times.append(time.perf_counter_ns() - t0)
    return statistics.median(times) / 1000


def reference_core_us(calls: int) -> float:
    """Median µs of the reference's record_action + mark_completed on an empty log."""
    from react_agent_compensation.core import RecoveryManager

    logging.getLogger("react_agent_compensation").setLevel(logging.WARNING)
    times = []
    for i in range(calls):
        manager = RecoveryManager(compensation_pairs={"book": "cancel"})
        args = {"passenger": f"p{i:06d}"}
        t0 = time.perf_counter_ns()
        record = manager.record_action("book", args)
        manager.mark_completed(record.id, book(**args))
        times.append(time.perf_counter_ns() - t0)
    return statistics.median(times) / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "results" /
                                             "core_path.json"))
    args = parser.parse_args()
    rounds = [{"rac_execute_us": round(rac_execute_us(args.calls), 1),
               "reference_core_us": round(reference_core_us(args.calls), 1)}
              for _ in range(args.rounds)]
    result = {
        "calls_per_round": args.calls, "rounds": rounds,
        "rac_execute_us_median": statistics.median(r["rac_execute_us"] for r in rounds),
        "reference_core_us_median": statistics.median(r["reference_core_us"] for r in rounds),
        "load_average": list(os.getloadavg()),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
