"""``rac prove``: inject a failure at every step of your own scenario and check your world."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any) -> None:
    """Add ``rac prove`` to the parser."""
    p = sub.add_parser(
        "prove", help="inject a failure at every step of your scenario and check your world",
        description="Runs your scenario once clean to learn its calls, then once per injection "
                    "point (each call failing before it runs, or timing out after its effect; "
                    "each compensation failing; with --crash, the process killed at every "
                    "boundary and recovered in a new one), runs your check after each, and "
                    "prints what RAC did, what the check found and a verdict: clean, named "
                    "(live but reported), or FALSE CLEAN. Exit 0: every point clean; 1: a false "
                    "clean or a compensator that did nothing; 3: effects left live but named; "
                    "4: a point that could not be judged; 2: bad arguments.")
    p.add_argument("--app", required=True, metavar="MODULE:ENGINE",
                   help="your rac.RAC engine, e.g. myagent.tools:engine")
    p.add_argument("--scenario", required=True, metavar="MODULE:FUNC",
                   help="your code that drives the agent or the tools (sync or async; it gets "
                        "the engine if it takes an argument)")
    p.add_argument("--check", default=None, metavar="MODULE:FUNC",
                   help="returns what of the scenario is still live (an empty list, True or "
                        "None when nothing is)")
    p.add_argument("--setup", default=None, metavar="MODULE:FUNC",
                   help="resets your world before each run of the scenario")
    p.add_argument("--snapshot", default=None, metavar="MODULE:FUNC",
                   help="with --compare: the world's state, taken before each run")
    p.add_argument("--compare", default=None, metavar="MODULE:FUNC",
                   help="compare(before, after) -> the differences (empty: as before)")
    p.add_argument("--crash", action="store_true",
                   help="also kill the process at every boundary of the log and recover in a "
                        "new one (needs a log and a world that outlive the process)")
    p.add_argument("--point", action="append", dest="points", metavar="TEXT",
                   help="only points whose name contains TEXT (repeatable)")
    p.add_argument("--json", action="store_true", help="print the proof as JSON")
    p.set_defaults(handler=prove_command)


def prove_command(args: argparse.Namespace) -> int:
    """Run the proof and print its table (or JSON); the exit status is the proof's."""
    import sys

    from rac.cli.main import print_json
    from rac.cli.progress import terminal_progress
    from rac.testing.proof import Prover

    if "" not in sys.path:  # MODULE:NAME of the current folder, as `python -m` finds them
        sys.path.insert(0, "")

    prover = Prover(args.scenario, engine=args.app, check=args.check, setup=args.setup,
                    snapshot=args.snapshot, compare=args.compare, crash=args.crash,
                    points=args.points,
                    progress=terminal_progress("rac prove", "point"))
    proof = prover.run()
    if args.json:
        print_json(proof.to_dict())
    else:
        print(proof.table())
    return proof.exit_code
