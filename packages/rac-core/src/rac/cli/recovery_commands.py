"""``rac recover``, ``rac resume``, ``rac resolve``, and the demo's ``--crash-at`` /
``--recover`` options.

``recover`` and ``resume`` run tools (the compensators): they need the operator's engine
(``--app`` or ``$RAC_APP``), except for runs the demo wrote, which the demo's engine undoes in
the demo's own world. Each opens only a log that exists; none creates one."""

from __future__ import annotations

import argparse
from typing import Any

from rac.cli.apps import add_app_option, app_spec, load_engine, missing_app
from rac.cli.logs import STORE_HELP, add_store_options, open_log, store_url
from rac.cli.main import NOT_REACHED, OK, UNSETTLED, CLIError

_ENGINE_STORE_HELP = "log URL (default: the --app engine's store; without --app, " \
                     "$RAC_STORE or sqlite:///.rac/rac.db)"


def register(sub: Any) -> None:
    """Add ``rac recover``, ``rac resume`` and ``rac resolve``, and crash options to
    ``rac demo``."""
    p = sub.add_parser(
        "recover", help="compensate runs left unfinished by a process that died",
        description="Find runs left running or compensating by a process that is gone, claim "
                    "each (one recoverer per run) and compensate what they did, in-doubt calls "
                    "included. --app names your rac.RAC engine, which has the tools.")
    add_app_option(p)
    add_store_options(p, store_help=_ENGINE_STORE_HELP)
    p.add_argument("--run", action="append", dest="run_ids", metavar="RUN_ID",
                   help="recover this run even if its owner looks alive (repeatable; you "
                        "know its process is gone)")
    p.add_argument("--stale-after", type=float, default=None, metavar="SECONDS",
                   help="also treat runs with no write for this long as abandoned (for "
                        "owners on other hosts)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=recover)

    r = sub.add_parser(
        "resume", help="retry what a rollback left live, once the cause is fixed",
        description="Retry the dead letters (compensation_failed records) and held "
                    "compensations of a run, e.g. one `rac runs --status needs_attention` "
                    "lists. While the run's owner is alive, only those are retried: its newer "
                    "work is never rolled back.")
    r.add_argument("run_id")
    add_app_option(r)
    add_store_options(r, store_help=_ENGINE_STORE_HELP)
    r.add_argument("--json", action="store_true", help="print JSON")
    r.set_defaults(handler=resume)

    z = sub.add_parser(
        "resolve", help="record that a person settled an action a rollback left live",
        description="Mark one action a rollback left live (a dead letter, a call in doubt, a "
                    "held or not undoable effect) of a needs_attention run as settled by hand, "
                    "with who, when and why; the run leaves needs_attention once nothing of it "
                    "is live. Anything else is refused with the reason.")
    z.add_argument("run_id")
    z.add_argument("seq", type=int)
    z.add_argument("--note", required=True, help="what was done (kept in the log)")
    z.add_argument("--by", default=None, help="who did it (default: the current user)")
    add_store_options(z, store_help=STORE_HELP)
    z.add_argument("--json", action="store_true", help="print JSON")
    z.set_defaults(handler=resolve_command)

    demo = sub.choices.get("demo")
    if demo is not None:
        demo.add_argument("--crash-at", default=None, metavar="POINT",
                          help="end the process hard at this point, saying so on stderr "
                               "(exit 86); `--crash-at list` prints the points")
        demo.add_argument("--recover", action="store_true",
                          help="recover the demo run a crash left behind and print it")
        demo.set_defaults(handler=_demo_with_crashes(demo.get_default("handler")))


def resolve_command(args: argparse.Namespace) -> int:
    """``rac resolve RUN_ID SEQ --note ...``."""
    from rac.engine import RAC

    engine = RAC(store=open_log(args, write=True), load_entrypoints=False)
    info = engine.resolve(args.run_id, args.seq, note=args.note, by=args.by)
    if args.json:
        from rac.cli.main import print_json

        print_json(info.to_dict())
    else:
        print(f"{args.run_id}#{args.seq} resolved; the run is {info.status}")
    return OK


def _engine(args: argparse.Namespace, spec: str) -> Any:
    """The operator's engine, on the log ``--store`` names (which must exist), else its own."""
    store = open_log(args, write=True) if getattr(args, "store", None) else None
    return load_engine(spec, store)


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
        if o.report is not None and o.outcome == "retried" and o.report.compensated:
            print("  undone: " + ", ".join(f"#{a.seq} {a.tool} (via {a.compensator})"
                                           for a in o.report.compensated))
        if o.report is not None and o.report.left_live:
            print("  left live: " + ", ".join(f"#{a.seq} {a.tool}"
                                               for a in o.report.left_live))


def recover(args: argparse.Namespace) -> int:
    """``rac recover``: exit 0 when every run was recovered clean, 1 otherwise."""
    spec = app_spec(args)
    if spec is not None:
        from rac.cli.progress import terminal_progress

        engine = _engine(args, spec)
        outcomes = engine.recover(args.run_ids, stale_after=args.stale_after,
                                  progress=terminal_progress("rac recover", "run"))
    else:
        outcomes = _recover_demo_runs(args)
    _print_outcomes(outcomes, args.json)
    return OK if all(o.outcome in ("compensated", "skipped") for o in outcomes) else UNSETTLED


def resume(args: argparse.Namespace) -> int:
    """``rac resume``: exit 0 when the run ends compensated, 1 otherwise."""
    spec = app_spec(args)
    if spec is not None:
        outcome = _engine(args, spec).resume(args.run_id)
    else:
        outcome = _resume_demo_run(args)
    _print_outcomes([outcome], args.json)
    return OK if outcome.settled else UNSETTLED


def _demo_runs(args: argparse.Namespace, command: str, run_id: str | None = None
               ) -> tuple[str, set[str]]:
    """The log's URL and the runs the demo wrote into it (with the log checked first: a
    missing, corrupt, locked or newer log, or an unknown ``run_id``, is said here)."""
    from rac.demo.trip import demo_runs

    url = store_url(args)
    log = open_log(args, url=url)
    try:
        if run_id is not None and log.get_run(run_id) is None:
            raise KeyError(f"no run {run_id!r} in {log.url}")
    finally:
        log.close()
    found = demo_runs(url)
    if not found:
        raise missing_app(command, f"the log {url} was not written by `rac demo`")
    return url, found


def _resume_demo_run(args: argparse.Namespace) -> Any:
    from rac.demo.trip import resume_demo

    url, found = _demo_runs(args, "resume", args.run_id)
    if args.run_id not in found:
        raise missing_app("resume", f"run {args.run_id} was not written by `rac demo`")
    open_log(args, write=True, url=url).close()
    return resume_demo(args.run_id, url)


def _recover_demo_runs(args: argparse.Namespace) -> list[Any]:
    from rac.demo.trip import recover_demo_runs

    if args.run_ids:
        raise missing_app("recover --run", "naming runs is for your own engine's runs")
    url, found = _demo_runs(args, "recover")
    open_log(args, write=True, url=url).close()
    return recover_demo_runs(url, found)


def _demo_with_crashes(plain: Any) -> Any:
    def handler(args: argparse.Namespace) -> int:
        from rac.cli.main import print_json, say

        if args.crash_at == "list":
            from rac.demo.crash import CRASH_POINTS

            print("\n".join(CRASH_POINTS))
            return OK
        if args.recover:
            from rac.demo.trip import recover_demo

            url = store_url(args)
            open_log(args, write=True, url=url).close()
            try:
                result = recover_demo(url)
            except LookupError as e:
                raise CLIError(str(e)) from e
            if args.json:
                from rac.cli.logs import shown_run

                print_json(shown_run(url, result))
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
            return OK
        if args.crash_at is not None:
            from rac.demo.crash import CRASH_EXIT_CODE, CRASH_POINTS
            from rac.demo.trip import run_demo

            if args.crash_at not in CRASH_POINTS:
                raise CLIError(f"unknown crash point {args.crash_at!r}; `rac demo --crash-at "
                               "list` prints them")

            def crashing(point: str, run_id: str) -> None:
                say(f"crash point {point} reached in run {run_id}: ending the process "
                    f"hard now (exit {CRASH_EXIT_CODE}), as --crash-at asked; `rac demo "
                    f"--recover{_store_arg(args)}` finishes the run")

            run_demo(fail=args.fail, store=store_url(args), crash_at=args.crash_at,
                     on_crash=crashing)
            say(f"the demo never reached crash point {args.crash_at!r} (with --fail "
                f"{args.fail}); nothing was stopped")
            return NOT_REACHED
        return int(plain(args))

    return handler


def _store_arg(args: argparse.Namespace) -> str:
    return f" --store {args.store}" if getattr(args, "store", None) else ""
