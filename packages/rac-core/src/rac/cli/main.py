"""The ``rac`` command: ``rac demo``, ``rac runs``, ``rac show``."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Sequence
from typing import Any

Command = Callable[[argparse.Namespace], int]
#: Modules that add subcommands: each has ``register(subparsers) -> None``.
COMMAND_MODULES = ["rac.cli.demo_command", "rac.cli.inspect_commands",
                   "rac.cli.recovery_commands", "rac.cli.pairs_commands",
                   "rac.cli.prove_command", "rac.cli.ui_command"]


def _configure_logging(verbose: bool) -> None:
    import structlog

    structlog.configure(
        processors=[structlog.processors.add_log_level, structlog.processors.TimeStamper("iso"),
                    structlog.dev.ConsoleRenderer(colors=False)],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.DEBUG if verbose else logging.CRITICAL),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every ``rac`` subcommand."""
    import importlib

    parser = argparse.ArgumentParser(
        prog="rac", description="RAC: a deterministic safety net that undoes an agent's side "
                                "effects when a run fails.")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="print RAC's structured events on stderr")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def print_json(obj: Any) -> None:
    """Print ``obj`` as indented JSON on stdout."""
    print(json.dumps(obj, indent=2, default=str, ensure_ascii=False))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``rac`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    _configure_logging(args.verbose)
    handler: Command = args.handler
    try:
        return handler(args)
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # a clear message, not a traceback, for expected failures
        from rac.errors import RACError

        if isinstance(e, RACError | ValueError | KeyError | FileNotFoundError):
            print(f"rac: error: {e}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
