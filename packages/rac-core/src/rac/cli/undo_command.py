"""``rac undo RUN [--preview]``: undo a finished run later, on request (see :mod:`rac.undo`).

It runs tools (the lookups and before-image reads that check each effect, then the
compensators), so it needs the operator's engine (``--app`` or ``$RAC_APP``)."""

from __future__ import annotations

import argparse
from typing import Any

from rac.cli.apps import add_app_option, app_spec, load_engine, missing_app
from rac.cli.logs import add_store_options, open_log
from rac.cli.main import OK, UNSETTLED

_STORE_HELP = "log URL (default: the --app engine's store)"


def register(sub: Any) -> None:
    """Add ``rac undo`` to the parser."""
    u = sub.add_parser(
        "undo", help="undo a completed run later, each effect checked against the world first",
        description="Undo the effects of a completed run, newest first. Each is checked first "
                    "against the live world (its lookup, or its before-image's read): one that "
                    "changed or is gone since the run is a conflict, named and not touched; "
                    "one nothing can check is left alone unless --unchecked. --preview says "
                    "what would be undone and changes nothing. The undo is a new rollback in "
                    "the run's log, with who and why.")
    u.add_argument("run_id")
    add_app_option(u)
    add_store_options(u, store_help=_STORE_HELP)
    u.add_argument("--preview", action="store_true",
                   help="check and list what would be undone and what conflicts; change nothing")
    u.add_argument("--why", default="", help="why the run is undone (kept in the log; "
                                              "required unless --preview)")
    u.add_argument("--by", default=None, help="who asks (default: the current user)")
    u.add_argument("--unchecked", action="store_true",
                   help="also undo effects RAC has no way to check (no lookup, no before-image)")
    u.add_argument("--json", action="store_true", help="print JSON")
    u.set_defaults(handler=undo_command)


_SAYS = {"undo": "undo", "conflict": "CONFLICT, left alone", "unchecked": "unchecked, left alone",
         "not_undoable": "cannot be undone"}


def undo_command(args: argparse.Namespace) -> int:
    """``rac undo``: exit 0 when every effect of the run was undone (or, with --preview,
    would be), 1 when something is left."""
    spec = app_spec(args)
    if spec is None:
        raise missing_app("undo", "its lookups check the world and its compensators undo it")
    store = open_log(args, write=not args.preview) if getattr(args, "store", None) else None
    engine = load_engine(spec, store)
    done = engine.undo(args.run_id, why=args.why, by=args.by, preview=args.preview,
                       unchecked=args.unchecked)
    if args.json:
        from rac.cli.main import print_json

        print_json(done.to_dict())
    else:
        head = "would be undone" if done.preview else f"now {done.status}"
        print(f"run {done.run_id}: {head}")
        for item in done.items:
            print(f"  #{item.seq} {item.tool}: {_SAYS[item.verdict]} ({item.reason})")
        if not done.items:
            print("  nothing of it had an effect")
        if done.report is not None:
            print(done.report.render())
    return OK if not done.conflicts else UNSETTLED
