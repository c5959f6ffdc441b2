"""``rac approve RUN SEQ`` and ``rac hold RUN SEQ``: a person's decision on a compensation a
rollback held for approval, written to the log with who, when and why (see
:mod:`rac.approvals`). Neither runs a tool: ``rac resume`` runs an approved undo."""

from __future__ import annotations

import argparse
from typing import Any

from rac.cli.logs import STORE_HELP, add_store_options, open_log
from rac.cli.main import OK


def register(sub: Any) -> None:
    """Add ``rac approve`` and ``rac hold`` to the parser."""
    for name, words in (("approve", "approve a held compensation: the next `rac resume` runs "
                                    "it, whatever the approval plugin would answer"),
                        ("hold", "keep a held compensation held on purpose: `rac resume` "
                                 "leaves it alone until someone approves it")):
        p = sub.add_parser(name, help=words.split(":")[0],
                           description=f"{words[0].upper()}{words[1:]}. The decision is kept "
                                       "in the log with who, when and why.")
        p.add_argument("run_id")
        p.add_argument("seq", type=int, help="the held action's seq (rac show lists it)")
        p.add_argument("--note", required=True, help="why (kept in the log)")
        p.add_argument("--by", default=None, help="who decides (default: the current user)")
        add_store_options(p, store_help=STORE_HELP)
        p.add_argument("--json", action="store_true", help="print JSON")
        p.set_defaults(handler=decide_command, decision=name)


def decide_command(args: argparse.Namespace) -> int:
    """``rac approve|hold RUN_ID SEQ --note ...``."""
    from rac.approvals import decide
    from rac.engine import RAC

    engine = RAC(store=open_log(args, write=True), load_entrypoints=False)
    info = decide(engine, args.run_id, args.seq, args.decision, note=args.note, by=args.by)
    if args.json:
        from rac.cli.main import print_json

        print_json(info.to_dict())
    elif args.decision == "approve":
        print(f"{args.run_id}#{args.seq}: undo approved; `rac resume {args.run_id} --app ...` "
              "runs it")
    else:
        print(f"{args.run_id}#{args.seq}: undo kept held; it stays live and named")
    return OK
