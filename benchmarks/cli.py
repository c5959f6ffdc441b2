"""The one command, ``python -m benchmarks [--quick | --full]``: runs the scenario suite
(:mod:`benchmarks.suites.scenarios`), writes JSON and regenerates docs/benchmarks.md."""

from __future__ import annotations

import argparse

from benchmarks.harness import report
from benchmarks.suites.scenarios import FULL_SEEDS, QUICK_SEEDS, run


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help=f"{QUICK_SEEDS} seeds, smoke run")
    mode.add_argument("--full", action="store_true", help=f"{FULL_SEEDS} seeds (default)")
    p.add_argument("--seeds", type=int, help="seeds per scenario and fault class")
    p.add_argument("--workers", type=int, help="worker processes (default: cores, max 4)")
    p.add_argument("--no-docs", action="store_true", help="do not rewrite docs/benchmarks.md")
    args = p.parse_args(argv)
    data = run(quick=args.quick, seeds=args.seeds, workers=args.workers,
               docs=not args.no_docs)
    for name, t in data["targets"].items():
        print(f"{'PASS' if t['pass'] else 'FAIL'}  {name}: {t['detail']}")
    print(f"wrote {report.RESULTS.relative_to(report.ROOT)} in {data['meta']['seconds']} s")
    return 0
