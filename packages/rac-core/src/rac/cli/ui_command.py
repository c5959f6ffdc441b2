"""``rac ui``: serve the operator's view of the log in a browser."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def register(sub: Any) -> None:
    """Add ``rac ui`` to the parser."""
    p = sub.add_parser(
        "ui", help="the operator's view in a browser: runs, timelines, the needs-attention "
                   "queue, pairs; resolve, resume, approve",
        description="Serve runs, a run's timeline, the needs-attention queue and the "
                    "compensation pairs of a log, with the operator's actions (resolve a live "
                    "effect with a note, resume a run, approve or reject a model's pair). "
                    "Listens on 127.0.0.1 by default; actions need the token printed at start "
                    "(or $RAC_UI_TOKEN); a non-loopback --host needs a token given. Needs the "
                    "ui extra: pip install './packages/rac-core[ui]'.")
    p.add_argument("--store", default=None,
                   help="log URL (default: the engine's store, else $RAC_STORE or .rac/rac.db)")
    p.add_argument("--app", default=None, metavar="MODULE:ATTR",
                   help="your rac.RAC engine: needed to resume runs (it runs compensators)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8765, help="port (default 8765)")
    p.add_argument("--token", default=None,
                   help="the operator token (default: $RAC_UI_TOKEN, else a new one, printed)")
    p.add_argument("--read-only", action="store_true",
                   help="serve the pages only: no action exists")
    p.set_defaults(handler=ui_command)


def ui_command(args: argparse.Namespace) -> int:
    """Start the server (runs until interrupted)."""
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as e:
        raise ValueError(f"rac ui needs the ui extra: pip install './packages/rac-core[ui]' "
                         f"({e.name} is missing)") from None
    from rac.cli.logs import open_log
    from rac.ui import serve
    from rac.ui.security import Guard, UIConfigError

    try:
        guard = Guard.for_server(args.host, token=args.token, read_only=args.read_only)
    except UIConfigError as e:
        raise ValueError(str(e)) from None
    engine = None
    if args.app:
        from rac.cli.apps import load_engine

        engine = load_engine(args.app, open_log(args, write=True) if args.store else None)
    store = engine.store if engine is not None else open_log(args, write=not args.read_only)
    where = f"http://{args.host if ':' not in args.host else f'[{args.host}]'}:{args.port}"
    if guard.read_only:
        print(f"rac ui (read-only) on {where}/ over {store.url}", file=sys.stderr)
    else:
        shown = guard.token if guard.generated else "<your token>"
        print(f"rac ui on {where}/ over {store.url}\n  sign in to act: {where}/login?token="
              f"{shown}", file=sys.stderr)
    serve(store, engine=engine, guard=guard, port=args.port)
    return 0
