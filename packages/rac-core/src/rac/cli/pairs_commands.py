"""``rac pairs``: the compensation pairs the log's store knows, and the operator's verdict on
the ones a model proposed (``rac pairs approve|reject KEY``)."""

from __future__ import annotations

import argparse
from typing import Any

_STORE_HELP = "log URL (default: $RAC_STORE or .rac/rac.db)"


def register(sub: Any) -> None:
    """Add ``rac pairs`` (list), ``rac pairs approve`` and ``rac pairs reject``."""
    p = sub.add_parser(
        "pairs", help="list compensation pairs and approve or reject proposed ones",
        description="List every compensation pair the log's store knows, with its source "
                    "(code, an MCP server, or llm: proposed by a model) and status. Pairs "
                    "proposed by a model wait as 'proposed' until approved or rejected.")
    p.add_argument("--store", default=None, help=_STORE_HELP)
    p.add_argument("--app", default=None, metavar="MODULE:ATTR",
                   help="also list the pairs your rac.RAC engine declares")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=list_pairs)
    verdicts = p.add_subparsers(dest="verdict", metavar="{approve,reject}")
    for verdict, help_text in (("approve", "use a proposed pair from now on"),
                               ("reject", "never use a proposed pair")):
        v = verdicts.add_parser(verdict, help=help_text, description=help_text.capitalize() +
                                ". KEY is the pair's key as `rac pairs` lists it.")
        v.add_argument("key", metavar="KEY")
        # SUPPRESS: a value given before the verdict (`rac pairs --store X approve K`) stands
        v.add_argument("--store", default=argparse.SUPPRESS, help=_STORE_HELP)
        v.add_argument("--by", default=None, help="who decided (kept in the pair's note)")
        v.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                       help="print JSON")
        v.set_defaults(handler=decide, verdict=verdict)


def _book(url: str | None) -> Any:
    from rac.resolver.book import PairStore
    from rac.stores import open_store

    store = open_store(url)
    if not isinstance(store, PairStore):
        raise ValueError(f"the store {store.url} keeps no compensation pairs (it has no "
                         "put_pair/get_pair/list_pairs)")
    return store


def list_pairs(args: argparse.Namespace) -> int:
    """``rac pairs``: every known pair, proposed ones first."""
    from rac.cli.main import print_json
    from rac.cli.render import table

    pairs = list(_book(args.store).list_pairs())
    if args.app:
        from rac.cli.recovery_commands import load_engine
        from rac.resolver import declared_pairs

        known = {p.key for p in pairs}
        pairs += [p for p in declared_pairs(load_engine(args.app, args.store))
                  if p.key not in known]
    order = {"proposed": 0, "approved": 1, "recorded": 2, "rejected": 3}
    pairs.sort(key=lambda p: (order.get(p.status, 4), p.tool, p.compensator))
    if args.json:
        print_json([p.to_dict() for p in pairs])
        return 0
    if not pairs:
        print("no compensation pairs")
        return 0
    rows = [(p.key, p.source, p.status, p.tool, p.compensator,
             ", ".join(f"{k}={v}" for k, v in sorted(p.args.items())) or "-")
            for p in pairs]
    print(table(["key", "source", "status", "tool", "undone by", "args"], rows))
    return 0


def decide(args: argparse.Namespace) -> int:
    """``rac pairs approve|reject KEY``: record the operator's verdict on a proposed pair."""
    from rac.cli.main import print_json
    from rac.events import emit
    from rac.resolver.book import APPROVED, LLM, REJECTED
    from rac.serialize import to_jsonable

    book = _book(args.store)
    pair = book.get_pair(args.key)
    if pair is None:
        raise KeyError(f"no pair {args.key!r} in {book.url}; `rac pairs` lists the keys")
    if pair.source != LLM:
        raise ValueError(f"pair {args.key!r} comes from {pair.source}, not a model: change it "
                         "where it is declared")
    import time

    previous = pair.status
    pair.status = APPROVED if args.verdict == "approve" else REJECTED
    pair.updated_at = time.time()
    pair.note = f"{pair.status} by {args.by}" if args.by else f"{pair.status} by an operator"
    book.put_pair(pair)
    emit(f"rac.pair_{pair.status}", key=pair.key, tool=pair.tool,
         compensator=pair.compensator, status=pair.status, previous=previous,
         by=to_jsonable(args.by))
    if args.json:
        print_json(pair.to_dict())
    else:
        print(f"{pair.key}: {pair.status} (was {previous})")
    return 0
