"""How the commands open the log: read commands read-only (nothing created, nothing written,
a locked log waited for with the wait announced on stderr), commands that write only an
existing log (a mistyped path is an error, never a new empty log)."""

from __future__ import annotations

import argparse
import os
from typing import Any

#: Where the log lives when neither ``--store`` nor ``$RAC_STORE`` says (as rac.stores has it).
DEFAULT_STORE_URL = "sqlite:///.rac/rac.db"
#: How long a command waits for a log another process holds locked (seconds).
DEFAULT_WAIT = 10.0
STORE_HELP = "log URL: sqlite:///path.db, postgresql://... (default: $RAC_STORE or " \
             "sqlite:///.rac/rac.db)"
WAIT_HELP = f"how long to wait for a log another process holds locked (default {DEFAULT_WAIT:g})"


def add_store_options(parser: Any, *, store_help: str = STORE_HELP, wait: bool = True,
                      suppress: bool = False) -> None:
    """``--store URL`` and (``wait``) ``--wait SECONDS``; ``suppress``: a value given before a
    sub-subcommand stands."""
    default: Any = argparse.SUPPRESS if suppress else None
    parser.add_argument("--store", default=default, metavar="URL", help=store_help)
    if wait:
        parser.add_argument("--wait", type=float, default=argparse.SUPPRESS if suppress
                            else DEFAULT_WAIT, metavar="SECONDS", help=WAIT_HELP)


def store_url(args: argparse.Namespace) -> str:
    """The log URL a command was given (``--store``, else ``$RAC_STORE``, else the default)."""
    given: str | None = getattr(args, "store", None)
    return given or os.environ.get("RAC_STORE") or DEFAULT_STORE_URL


def shown_run(url: str, result: Any, pairs: Any = ()) -> dict[str, Any]:
    """What ``rac demo --json`` prints for the demo's ``result``: the ``rac show --json``
    object of the run (read from the log at ``url``; a memory log is gone once the demo ends,
    so only its records are shown) plus ``"world"``."""
    from rac.cli.render import run_json
    from rac.stores import open_store

    info = None
    if not url.startswith("memory"):
        store = open_store(url, read_only=True)
        try:
            info = store.get_run(result.run_id)
        finally:
            store.close()
    obj = run_json(result.run_id, str(result.status), result.records, pairs, info=info)
    world = result.world
    obj["world"] = world
    return obj


def open_log(args: argparse.Namespace, *, write: bool = False, url: str | None = None) -> Any:
    """The log the command names, opened read-only; ``write``: opened for writing, once the
    read-only open showed that it exists and that this RAC may write to it."""
    from rac.cli.main import say
    from rac.stores import open_store

    target = url or store_url(args)
    wait = float(getattr(args, "wait", DEFAULT_WAIT))
    store = open_store(target, read_only=True, wait=wait, on_wait=say)
    if not write or target.startswith("memory"):
        return store
    store.close()
    return open_store(target)
