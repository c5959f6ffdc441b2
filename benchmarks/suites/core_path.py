"""The bare bookkeeping cost of one successful call: RAC's ``run.execute`` (memory store)
against the reference implementation's own core path for the same call
(``RecoveryManager.record_action`` + ``mark_completed``, empty log), same tool, same arguments,
in one process. It calibrates the machine: the issue's absolute targets were written for a
machine on which that reference path costs about 13 µs.

The headline is the path adapters take: RAC's general call flow (``rac.run.calls``), measured
at 0, 100, 1,000 and 10,000 records already in the run, with the budget of issue 28 checked in
the same run: at most 0.8x the reference's core path at 0 prior records, and flat in log size
(the median with 10,000 prior records within 25% of the one with 0). While the blocking
shortcut of ``rac.run.fast`` exists, its figure is a row beside it (``shortcut``), never the
headline. Each round times the variants in turn, the order alternating from round to round,
the garbage collector on.

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


def _engine(shortcut: bool) -> rac.RAC:
    engine = rac.RAC(compensations={"book": "cancel"}, tools=[book, cancel], store="memory://",
                     load_entrypoints=False)
    if hasattr(engine, "fast_path"):  # the shortcut, while it exists: on only when asked
        engine.fast_path = shortcut
    return engine


def has_shortcut() -> bool:
    """True while RAC has the blocking shortcut (``rac.run.fast``) beside its general flow."""
    return hasattr(rac.RAC(store="memory://", load_entrypoints=False), "fast_path")


def rac_execute_us(calls: int, *, shortcut: bool = False) -> float:
    """Median µs of ``run.execute`` for a successful call, one run holding all the calls."""
    engine = _engine(shortcut)
    times = []
    with engine.run() as run:
        for i in range(calls):
            args = {"passenger": f"p{i:06d}"}
            t0 = time.perf_counter_ns()
            run.execute("book", args, lambda _n, a: book(**a))
            times.append(time.perf_counter_ns() - t0)
    return statistics.median(times) / 1000


#: records already in the run for the log-size figures
PRIOR = (0, 100, 1_000, 10_000)
#: the budget: RAC at 0 prior records over the reference's core path, and the log-size drift
RATIO_MAX = 0.8
FLAT_MAX = 1.25


def rac_execute_prior_us(prior: int, calls: int, *, shortcut: bool = False) -> float:
    """Median µs of ``run.execute`` for a successful call in a run already holding ``prior``
    records (for 0: the first call of a fresh run, one run per timed call); the general flow,
    or with ``shortcut`` the blocking shortcut where it applies."""
    engine = _engine(shortcut)
    invoke = lambda _n, a: book(**a)  # noqa: E731
    times = []
    if prior == 0:
        for i in range(calls):
            with engine.run() as run:
                args = {"passenger": f"p{i:06d}"}
                t0 = time.perf_counter_ns()
                run.execute("book", args, invoke)
                times.append(time.perf_counter_ns() - t0)
        return statistics.median(times) / 1000
    with engine.run() as run:
        for i in range(prior):
            run.execute("book", {"passenger": f"f{i:06d}"}, invoke)
        for i in range(calls):
            args = {"passenger": f"p{i:06d}"}
            t0 = time.perf_counter_ns()
            run.execute("book", args, invoke)
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
    shortcut = has_shortcut()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load_before = list(os.getloadavg())
    rounds = []
    for n in range(args.rounds):
        row: dict[str, Any] = {}

        def general(row: dict[str, Any] = row) -> None:
            row["rac_execute_us"] = round(rac_execute_us(args.calls), 1)
            row["rac_by_prior_us"] = {str(p): round(rac_execute_prior_us(p, args.calls), 1)
                                      for p in PRIOR}

        def reference(row: dict[str, Any] = row) -> None:
            row["reference_core_us"] = round(reference_core_us(args.calls), 1)

        def fast(row: dict[str, Any] = row) -> None:
            row["shortcut_us"] = round(rac_execute_prior_us(0, args.calls, shortcut=True), 1)

        order = [general, reference, *([fast] if shortcut else [])]
        for variant in (order if n % 2 == 0 else order[::-1]):
            variant()
        rounds.append(row)
    ref = statistics.median(r["reference_core_us"] for r in rounds)
    by_prior = {str(n): statistics.median(r["rac_by_prior_us"][str(n)] for r in rounds)
                for n in PRIOR}
    ratio = by_prior["0"] / ref if ref else float("inf")
    drift = by_prior[str(PRIOR[-1])] / by_prior["0"] if by_prior["0"] else float("inf")
    result: dict[str, Any] = {
        "command": "uv run --group bench python -m benchmarks.suites.core_path"
                   f" --calls {args.calls} --rounds {args.rounds}",
        "started": started,
        "path": "the general call flow (rac.run.calls), the path adapters take",
        "calls_per_round": args.calls, "rounds": rounds,
        "rac_execute_us_median": statistics.median(r["rac_execute_us"] for r in rounds),
        "reference_core_us_median": ref,
        "rac_by_prior_us_median": by_prior,
        "budget": {"ratio_at_0": round(ratio, 3), "ratio_max": RATIO_MAX,
                   "drift_at_10000": round(drift, 3), "drift_max": FLAT_MAX,
                   "pass": ratio <= RATIO_MAX and drift <= FLAT_MAX},
        "load_average": {"before": load_before, "after": list(os.getloadavg())},
    }
    if shortcut:
        fast_us = statistics.median(r["shortcut_us"] for r in rounds)
        result["shortcut"] = {
            "what": "rac.run.fast, the blocking shortcut (not the path adapters take)",
            "us_median_at_0": fast_us, "ratio_at_0": round(fast_us / ref, 3) if ref else None}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
