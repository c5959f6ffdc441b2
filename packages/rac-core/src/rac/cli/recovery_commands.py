"""``rac recover``, ``rac resume``, and the demo's ``--crash-at`` / ``--recover`` options."""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any

from rac.cli.render import run_json


def register(sub: Any) -> None:
    """Add ``rac recover`` and ``rac resume``, and crash options to ``rac demo``."""
    p = sub.add_parser(
        "recover", help="compensate runs left unfinished by a process that died",
        description="Find runs left running or compensating by a dead process, claim each "
                    "(one recoverer per run) and compensate what they did, in-doubt calls "
                    "included. --app names your rac.RAC engine, which knows the tools.")
    p.add_argument("--app", required=True, metavar="MODULE:ATTR",
                   help="your engine, e.g. myagent.tools:engine")
    p.add_argument("--store", default=None,
                   help="log URL (default: the engine's store)")
    p.add_argument("--run", action="append", dest="run_ids", metavar="RUN_ID",
                   help="recover this run even if its owner looks alive (repeatable)")
    p.add_argument("--stale-after", type=float, default=None, metavar="SECONDS",
                   help="also treat runs with no write for this long as abandoned (for "
                        "owners on other hosts)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=recover)

    r = sub.add_parser("resume", help="retry a run's failed compensations after a fix",
                       description="Retry the dead letters (compensation_failed records) of a "
                                   "run, e.g. one listed by `rac runs --status needs_attention`.")
    r.add_argument("run_id")
    r.add_argument("--app", default=None, metavar="MODULE:ATTR",
                   help="your engine (default: the demo's engine)")
    r.add_argument("--store", default=None, help="log URL (default: the engine's store)")
    r.add_argument("--json", action="store_true", help="print JSON")
    r.set_defaults(handler=resume)

    z = sub.add_parser("resolve", help="record that a person settled a live action",
                       description="Mark one action a rollback left live (a dead letter, a "
                                   "call in doubt) as resolved by hand, with who and why; the "
                                   "run leaves needs_attention once nothing of it is live.")
    z.add_argument("run_id")
    z.add_argument("seq", type=int)
    z.add_argument("--note", required=True, help="what was done (kept in the log)")
    z.add_argument("--by", default=None, help="who did it (default: the current user)")
    z.add_argument("--store", default=None, help="log URL (default: $RAC_STORE or .rac/rac.db)")
    z.add_argument("--json", action="store_true", help="print JSON")
    z.set_defaults(handler=resolve_command)

    demo = sub.choices.get("demo")
    if demo is not None:
        from rac.demo.crash import CRASH_POINTS

        demo.add_argument("--crash-at", default=None, metavar="POINT",
                          help="end the process hard at this point (`--crash-at list` prints "
                               f"them: {CRASH_POINTS[0]}, ...)")
        demo.add_argument("--recover", action="store_true",
                          help="recover the demo run a crash left behind and print it")
        demo.set_defaults(handler=_demo_with_crashes(demo.get_default("handler")))


def resolve_command(args: argparse.Namespace) -> int:
    """``rac resolve RUN_ID SEQ --note ...``."""
    from rac.engine import RAC

    engine = RAC(store=args.store, load_entrypoints=False)
    info = engine.resolve(args.run_id, args.seq, note=args.note, by=args.by)
    if args.json:
        from rac.cli.main import print_json

        print_json(info.to_dict())
    else:
        print(f"{args.run_id}#{args.seq} resolved; the run is {info.status}")
    return 0


def load_engine(spec: str, store: str | None) -> Any:
    """The ``rac.RAC`` named by ``MODULE:ATTR`` (with its store replaced by ``store``)."""
    from rac.engine import RAC
    from rac.stores import open_store

    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"--app must be MODULE:ATTR, got {spec!r}")
    if "" not in sys.path:
        sys.path.insert(0, "")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    if callable(obj) and not isinstance(obj, RAC):
        obj = obj()
    if not isinstance(obj, RAC):
        raise ValueError(f"{spec} is a {type(obj).__name__}, not a rac.RAC engine")
    if store is not None:
        obj.store = open_store(store)
    return obj


def _print_outcomes(outcomes: list[Any], as_json: bool) -> None:
    from rac.cli.main import print_json

    if as_json:
        print_json([o.to_dict() for o in outcomes])
        return
    if not outcomes:
        print("no unfinished runs to recover")
    for o in outcomes:
        line = f"{o.run_id}: {o.outcome}"
        if o.reason:
            line += f" ({o.reason})"
        print(line)
        if o.report is not None and o.report.left_live:
            print("  left live: " + ", ".join(f"#{a.seq} {a.tool}"
                                               for a in o.report.left_live))


def recover(args: argparse.Namespace) -> int:
    """``rac recover``: exit 0 when every run was recovered clean, 1 otherwise."""
    engine = load_engine(args.app, args.store)
    outcomes = engine.recover(args.run_ids, stale_after=args.stale_after)
    _print_outcomes(outcomes, args.json)
    return 0 if all(o.outcome in ("compensated", "skipped") for o in outcomes) else 1


def resume(args: argparse.Namespace) -> int:
    """``rac resume``: exit 0 when the run ends compensated, 1 otherwise."""
    if args.app:
        engine = load_engine(args.app, args.store)
        outcome = engine.resume(args.run_id)
    else:
        outcome = _resume_demo(args.run_id, args.store)
    _print_outcomes([outcome], args.json)
    return 0 if outcome.outcome == "compensated" else 1


def _resume_demo(run_id: str, store: str | None) -> Any:
    import os

    from rac.demo.crash import KeyedTravelWorld
    from rac.demo.trip import build_engine, world_path_for
    from rac.stores import DEFAULT_STORE_URL, open_store

    url = store or os.environ.get("RAC_STORE") or DEFAULT_STORE_URL
    world = KeyedTravelWorld(world_path_for(url))
    engine = build_engine(world, open_store(url))
    try:
        return engine.resume(run_id)
    finally:
        world.close()


def _demo_with_crashes(plain: Any) -> Any:
    def handler(args: argparse.Namespace) -> int:
        from rac.cli.main import print_json
        from rac.demo.crash import CRASH_POINTS
        from rac.demo.trip import recover_demo, run_demo

        if args.crash_at == "list":
            print("\n".join(CRASH_POINTS))
            return 0
        if args.recover:
            try:
                result = recover_demo(args.store)
            except LookupError as e:
                print(f"rac: {e}", file=sys.stderr)
                return 1
            if args.json:
                obj = run_json(result.run_id, str(result.status), result.records)
                obj["world"] = result.world
                print_json(obj)
            else:
                finished = bool(result.agent_saw) and \
                    result.agent_saw[0].startswith("nothing left to recover")
                print(f"{'run' if finished else 'recovered run'} {result.run_id}: "
                      f"{result.status}")
                for line in result.agent_saw:
                    print("  " + line.replace("\n", "\n  "))
                live = [b["booking_id"] for k in ("flights", "hotels", "cars")
                        for b in result.world[k]]
                print("live bookings: " + (", ".join(live) if live else "(none)"))
            return 0
        if args.crash_at is not None:
            if args.crash_at not in CRASH_POINTS:
                raise ValueError(f"unknown crash point {args.crash_at!r}; `rac demo --crash-at "
                                 "list` prints them")
            run_demo(fail=args.fail, store=args.store, crash_at=args.crash_at)
            print(f"rac: the demo never reached crash point {args.crash_at!r} "
                  f"(with --fail {args.fail})", file=sys.stderr)
            return 3
        return int(plain(args))

    return handler
