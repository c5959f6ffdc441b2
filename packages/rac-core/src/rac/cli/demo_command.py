"""``rac demo``: the offline trip booking that shows RAC undoing side effects."""

from __future__ import annotations

import argparse
from typing import Any

from rac.cli.logs import add_store_options


def register(sub: Any) -> None:
    """Add ``rac demo`` to the parser."""
    p = sub.add_parser("demo", help="book a trip offline and watch RAC undo it when a step fails",
                       description="A scripted agent books a flight, a hotel, then a car in a "
                                   "world with real state (a SQLite file beside the log). The "
                                   "step named by --fail fails for good; RAC undoes the others, "
                                   "newest first.")
    p.add_argument("--fail", choices=["none", "flight", "hotel", "car"], default="car",
                   help="which booking fails permanently (default: car)")
    add_store_options(p, store_help="log URL: memory://, sqlite:///path.db, postgresql://... "
                                    "(default: $RAC_STORE or sqlite:///.rac/rac.db); the demo's "
                                    "world is a SQLite file beside it", wait=False)
    p.add_argument("--json", action="store_true", help="print the run as JSON")
    p.add_argument("--mcp", action="store_true",
                   help="book through the example MCP server (a subprocess over stdio): RAC "
                        "reads the compensation pairs from its tool metadata (needs the mcp "
                        "extra)")
    p.set_defaults(handler=demo)


def demo(args: argparse.Namespace) -> int:
    """Run the demo and print the log and the world."""
    from rac.cli.logs import store_url
    from rac.cli.main import print_json
    from rac.cli.render import records_table, table

    if args.mcp:
        _need_mcp()
        from rac.demo.mcp_trip import run_mcp_demo

        result = run_mcp_demo(fail=args.fail, store=store_url(args))
    else:
        from rac.demo import run_demo

        result = run_demo(fail=args.fail, store=store_url(args))
    if args.json:
        from rac.cli.logs import shown_run

        print_json(shown_run(store_url(args), result))
        return 0
    print(f"run {result.run_id}: {result.status}\n")
    if result.learned:
        print("What RAC read from the MCP server's tool metadata:")
        for line in result.learned:
            print("  " + line)
        print()
    print("What the agent was told:")
    for line in result.agent_saw:
        print("  " + line.replace("\n", "\n  "))
    print("\nTransaction log:")
    print(records_table(result.records))
    print("\nLive bookings in the world:")
    rows = [(b["booking_id"], b["kind"], b["who"], b["place"], b["detail"])
            for kind in ("flights", "hotels", "cars") for b in result.world[kind]]
    print(table(["booking", "kind", "who", "place", "detail"], rows) if rows else "  (none)")
    return 0


def _need_mcp() -> None:
    """One line naming the extra when the mcp package is missing."""
    from rac.cli.main import CLIError

    try:
        import mcp  # noqa: F401
    except ImportError:
        raise CLIError("`rac demo --mcp` needs the mcp package: install the mcp extra (from a "
                       "checkout: pip install './packages/rac-core[mcp]'), or pip install mcp"
                       ) from None

