"""The one command, ``python -m benchmarks [--quick | --full]``: runs the scenario suite
(:mod:`benchmarks.suites.scenarios`) and writes its figures.

``--full`` (the default; ``make bench-full``) writes the committed figures,
``benchmarks/results/latest.json``, and regenerates docs/benchmarks.md from them. ``--quick``
(``make bench``, a smoke run) writes a scratch file, ``benchmarks/results/quick.json`` (not
committed), and touches neither the committed figures nor the docs."""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmarks.harness import report
from benchmarks.suites.scenarios import FULL_SEEDS, QUICK_SEEDS, run


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true",
                      help=f"{QUICK_SEEDS} seeds, smoke run; writes "
                           f"{report.QUICK_RESULTS.relative_to(report.ROOT)} only")
    mode.add_argument("--full", action="store_true",
                      help=f"{FULL_SEEDS} seeds (the default); writes "
                           f"{report.RESULTS.relative_to(report.ROOT)} and the docs page")
    p.add_argument("--seeds", type=int, help="seeds per scenario and fault class")
    p.add_argument("--workers", type=int, help="worker processes (default: cores, max 4)")
    p.add_argument("--out", type=Path, help="write the figures here instead")
    p.add_argument("--no-docs", action="store_true",
                   help="do not rewrite docs/benchmarks.md (a full run only)")
    args = p.parse_args(argv)
    out = args.out or (report.QUICK_RESULTS if args.quick else report.RESULTS)
    docs = not (args.quick or args.no_docs or args.out)
    data = run(quick=args.quick, seeds=args.seeds, workers=args.workers, out=out, docs=docs)
    for name, t in data["targets"].items():
        print(f"{'PASS' if t['pass'] else 'FAIL'}  {name}: {t['detail']}")
    shown = out.resolve()
    shown_s = shown.relative_to(report.ROOT) if shown.is_relative_to(report.ROOT) else shown
    print(f"wrote {shown_s}{' and ' + str(report.DOC.relative_to(report.ROOT)) if docs else ''}"
          f" in {data['meta']['seconds']} s")
    return 0
