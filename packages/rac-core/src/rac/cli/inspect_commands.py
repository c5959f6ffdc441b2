"""``rac runs`` and ``rac show``: read the transaction log."""

from __future__ import annotations

import argparse
from typing import Any

from rac.cli.render import records_table, run_json, runs_table
from rac.models import RunStatus


def register(sub: Any) -> None:
    """Add ``rac runs`` and ``rac show`` to the parser."""
    p = sub.add_parser("runs", help="list runs in the log, newest first")
    p.add_argument("--store", default=None, help="log URL (default: $RAC_STORE or .rac/rac.db)")
    p.add_argument("--status", choices=[s.value for s in RunStatus], default=None,
                   help="only runs with this status (e.g. needs_attention)")
    p.add_argument("--limit", type=int, default=50, help="at most this many runs (default 50)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=runs)

    s = sub.add_parser("show", help="show one run's records")
    s.add_argument("run_id")
    s.add_argument("--store", default=None, help="log URL (default: $RAC_STORE or .rac/rac.db)")
    s.add_argument("--json", action="store_true", help="print JSON")
    s.set_defaults(handler=show)


def runs(args: argparse.Namespace) -> int:
    """List runs."""
    from rac.cli.main import print_json
    from rac.stores import open_store

    store = open_store(args.store)
    found = store.list_runs(status=RunStatus(args.status) if args.status else None,
                            limit=args.limit)
    if args.json:
        print_json([r.to_dict() for r in found])
    else:
        print(runs_table(found) if found else "no runs")
    return 0


def show(args: argparse.Namespace) -> int:
    """Show one run."""
    from rac.cli.main import print_json
    from rac.stores import open_store

    store = open_store(args.store)
    info = store.get_run(args.run_id)
    if info is None:
        raise KeyError(f"no run {args.run_id!r} in {store.url}")
    records = store.get_records(args.run_id)
    if args.json:
        print_json(run_json(info.run_id, str(info.status), records))
    else:
        print(f"run {info.run_id}: {info.status} (agent {info.agent_id})")
        print(records_table(records))
    return 0
