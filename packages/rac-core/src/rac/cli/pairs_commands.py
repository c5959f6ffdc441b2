"""``rac pairs``: the compensation pairs the log's store knows, and the operator's verdict on
the ones a model proposed (``rac pairs approve|reject KEY``)."""

from __future__ import annotations

import argparse
from typing import Any

from rac.cli.apps import add_app_option
from rac.cli.logs import add_store_options, open_log


def register(sub: Any) -> None:
    """Add ``rac pairs`` (list), ``rac pairs approve`` and ``rac pairs reject``."""
    p = sub.add_parser(
        "pairs", help="list compensation pairs and approve or reject proposed ones",
        description="List every compensation pair the log's store knows, with its source "
                    "(code, an MCP server, or llm: proposed by a model) and status. Pairs "
                    "proposed by a model wait as 'proposed' until approved or rejected.")
    add_store_options(p)
    add_app_option(p, "also list the pairs your rac.RAC engine (MODULE:ATTR) declares")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=list_pairs)
    verdicts = p.add_subparsers(dest="verdict", metavar="{approve,reject}")
    for verdict, help_text in (("approve", "use a proposed pair from now on"),
                               ("reject", "never use a proposed pair")):
        v = verdicts.add_parser(verdict, help=help_text, description=help_text.capitalize() +
                                ". KEY is the pair's key as `rac pairs` lists it.")
        v.add_argument("key", metavar="KEY")
        # SUPPRESS: a value given before the verdict (`rac pairs --store X approve K`) stands
        add_store_options(v, suppress=True)
        v.add_argument("--by", default=None, help="who decided (kept in the pair's note)")
        v.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                       help="print JSON")
        v.set_defaults(handler=decide, verdict=verdict)


    demo = sub.choices.get("demo")
    if demo is not None:
        demo.add_argument("--llm", choices=["scripted", "model"], default=None,
                          help="leave the hotel's pair undeclared and let a model find it: "
                               "'scripted' (offline) or 'model' (the LangChain model named by "
                               "$RAC_MODEL, with its API key)")
        demo.set_defaults(handler=_demo_with_llm(demo.get_default("handler")))


def _demo_with_llm(plain: Any) -> Any:
    """``rac demo``'s handler, running the model-resolved trip when ``--llm`` is given."""

    def handler(args: argparse.Namespace) -> int:
        if getattr(args, "llm", None) is None:
            return int(plain(args))
        if getattr(args, "crash_at", None) or getattr(args, "recover", False):
            raise ValueError("--llm cannot be combined with --crash-at or --recover")
        from rac.cli.logs import store_url
        from rac.cli.main import print_json
        from rac.cli.render import records_table, table
        from rac.resolver.demo import run_llm_demo

        result, pairs = run_llm_demo(args.llm, fail=args.fail, store=store_url(args))
        if args.json:
            from rac.cli.logs import shown_run

            obj = shown_run(store_url(args), result, pairs)
            obj["pairs"] = [p.to_dict() for p in pairs]
            print_json(obj)
            return 0
        print(f"run {result.run_id}: {result.status}\n")
        print("Pairs the model proposed (checked, stored in the log):")
        rows = [(p.tool, p.compensator, ", ".join(f"{k}={v}" for k, v in p.args.items()) or "-",
                 p.status) for p in pairs]
        print(table(["tool", "undone by", "args", "status"], rows) if rows else "  (none)")
        print("\nWhat the agent was told:")
        for line in result.agent_saw:
            print("  " + line.replace("\n", "\n  "))
        print("\nTransaction log:")
        print(records_table(result.records))
        live = [(b["booking_id"], b["kind"], b["who"], b["place"])
                for kind in ("flights", "hotels", "cars") for b in result.world[kind]]
        print("\nLive bookings in the world:")
        print(table(["booking", "kind", "who", "place"], live) if live else "  (none)")
        return 0

    return handler


def _book(args: argparse.Namespace, *, write: bool = False) -> Any:
    from rac.stores import supports

    store = open_log(args, write=write)
    if not supports(store, "pairs"):
        raise ValueError(f"the store {store.url} keeps no compensation pairs (it has no "
                         "put_pair/get_pair/list_pairs)")
    return store


def list_pairs(args: argparse.Namespace) -> int:
    """``rac pairs``: every known pair, proposed ones first."""
    from rac.cli.main import print_json
    from rac.cli.render import table

    book = _book(args)
    pairs = list(book.list_pairs())
    if args.app:
        from rac.cli.apps import load_engine
        from rac.resolver import declared_pairs

        known = {p.key for p in pairs}
        pairs += [p for p in declared_pairs(load_engine(args.app, book))
                  if p.key not in known]
    order = {"proposed": 0, "auto": 1, "approved": 2, "recorded": 3, "rejected": 4}
    pairs.sort(key=lambda p: (order.get(p.status, 5), p.tool, p.compensator))
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
    from rac.resolver.book import decide_pair

    pair, previous = decide_pair(_book(args, write=True), args.key, args.verdict, by=args.by)
    if args.json:
        print_json(pair.to_dict())
    else:
        print(f"{pair.key}: {pair.status} (was {previous})")
    return 0
