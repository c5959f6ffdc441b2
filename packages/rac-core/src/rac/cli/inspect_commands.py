"""``rac runs`` and ``rac show``: read the transaction log (read-only: nothing is ever written).

A run whose stored status its records contradict (``compensated`` while an action of it may
still be live, say) is flagged, in the table, in the JSON (``"contradicted"``) and on stderr."""

from __future__ import annotations

import argparse
from typing import Any

from rac.cli.logs import add_store_options, open_log

RUN_STATUSES = ["running", "completed", "compensating", "compensated", "needs_attention",
                "resolved"]


def register(sub: Any) -> None:
    """Add ``rac runs`` and ``rac show`` to the parser."""
    p = sub.add_parser("runs", help="list runs in the log, newest first",
                       description="List the runs of the log, newest first (read-only). A run "
                                   "whose records contradict its stored status is flagged.")
    add_store_options(p)
    p.add_argument("--status", choices=RUN_STATUSES, default=None,
                   help="only runs with this status (e.g. needs_attention)")
    p.add_argument("--limit", type=int, default=50, metavar="N",
                   help="at most this many runs (default 50; 0: all)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=runs)

    s = sub.add_parser("show", help="show one run's records",
                       description="Show one run: its status and its records (what happened "
                                   "to each action, what undid it); read-only, and undo data "
                                   "is never shown.")
    s.add_argument("run_id")
    add_store_options(s)
    out = s.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print JSON")
    out.add_argument("--html", action="store_true",
                     help="print the run as one self-contained HTML file (the timeline rac ui "
                          "draws), to attach to a ticket: rac show RUN --html > run.html")
    s.set_defaults(handler=show)


def runs(args: argparse.Namespace) -> int:
    """List runs."""
    from rac.cli.main import print_json
    from rac.cli.render import contradiction, runs_table
    from rac.models import RunStatus

    store = open_log(args)
    found = store.list_runs(status=RunStatus(args.status) if args.status else None,
                            limit=args.limit or None)
    flags = {r.run_id: contradiction(r, store.get_records(r.run_id)) for r in found}
    if args.json:
        print_json([{**r.to_dict(), "contradicted": flags[r.run_id]} for r in found])
    else:
        print(runs_table(found, flags) if found else "no runs")
    _warn(flags)
    return 0


def show(args: argparse.Namespace) -> int:
    """Show one run."""
    from rac.cli.main import print_json
    from rac.cli.render import contradiction, next_step, records_table, run_json, unreviewed_undos

    store = open_log(args)
    info = store.get_run(args.run_id)
    if info is None:
        raise KeyError(f"no run {args.run_id!r} in {store.url}")
    records = store.get_records(args.run_id)
    flag = contradiction(info, records)
    from rac.models import RecordKind
    from rac.stores import supports

    pairs = store.list_pairs() if supports(store, "pairs") and any(
        r.kind is RecordKind.COMPENSATION for r in records) else []
    unreviewed = unreviewed_undos(records, pairs)
    if args.json:
        print_json(run_json(info.run_id, str(info.status), records, pairs, info=info))
    elif args.html:
        from rac.ui.static import run_document

        print(run_document(info, records))
    else:
        import datetime as dt

        started = dt.datetime.fromtimestamp(info.created_at).strftime("%Y-%m-%d %H:%M:%S")
        print(f"run {info.run_id}: {info.status} (agent {info.agent_id}, started {started})")
        if info.summary:
            print(f"  {info.summary}")
        if flag:
            print(f"THE RECORDS CONTRADICT THIS STATUS: {flag}")
        print(records_table(records))
        for u in unreviewed:
            print(f"#{u['seq']} {u['tool']} was undone by a model-proposed pair, not reviewed "
                  f"(via {u['compensator']}; `rac pairs` lists it for a verdict)")
        if info.report:
            print("\nwhat the agent was told:")
            print("\n".join(f"  {line}" for line in info.report.splitlines()))
        print(f"\nnext step: {next_step(info, records)}")
    _warn({info.run_id: flag})
    return 0


def _warn(flags: dict[str, str | None]) -> None:
    from rac.cli.main import say

    for run_id, flag in flags.items():
        if flag:
            say(f"warning: run {run_id}: the records contradict its stored status: {flag}")
