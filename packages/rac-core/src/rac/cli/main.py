"""The ``rac`` command: its parser, and how every command ends (exit codes, one-line errors).

Exit codes (docs/cli.md lists them too):

====  =============================================================================
0     done
1     done, but something is not settled: a run recovered or resumed still needs a person
2     an error the user can act on: bad usage, a missing, corrupt, locked or newer log, a
      bad ``--app``, an unknown run, a refused operation
3     ``rac demo --crash-at``: the demo never reached the crash point
70    an internal error (a bug in RAC or in the application's engine)
86    ``rac demo --crash-at``: the process ended hard at the crash point, as asked
130   interrupted (Ctrl-C)
141   standard output was closed early (``rac runs | head``): the command stops quietly
====  =============================================================================

Errors are one line on stderr (``rac: error: ...``); ``--debug`` adds the traceback.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

Command = Callable[[argparse.Namespace], int]
#: Modules that add subcommands: each has ``register(subparsers) -> None`` and imports
#: nothing heavy at module level (``rac runs`` must start fast).
COMMAND_MODULES = ["rac.cli.demo_command", "rac.cli.inspect_commands",
                   "rac.cli.recovery_commands", "rac.cli.pairs_commands",
                   "rac.cli.prove_command", "rac.cli.ui_command", "rac.cli.undo_command",
                   "rac.cli.approval_commands"]

OK, UNSETTLED, USAGE, NOT_REACHED, INTERNAL, INTERRUPTED, BROKEN_PIPE = 0, 1, 2, 3, 70, 130, 141


class CLIError(Exception):
    """An error the user can act on: printed as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors on one line."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE, f"rac: error: {message} (see `{self.prog} --help`)\n")


def _configure_logging(verbose: bool) -> None:
    if not verbose:
        # RAC's events go to the standard library's logging when structlog is not configured
        # (see rac.events): silenced there, and structlog (which imports rich: most of a
        # read command's start-up) is never imported
        rac_logger = logging.getLogger("rac")
        rac_logger.setLevel(logging.CRITICAL + 1)
        rac_logger.propagate = False
        return
    import structlog

    structlog.configure(
        processors=[structlog.processors.add_log_level, structlog.processors.TimeStamper("iso"),
                    structlog.dev.ConsoleRenderer(colors=False)],
        wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every ``rac`` subcommand."""
    import importlib

    parser = _Parser(
        prog="rac", description="RAC: a deterministic safety net that undoes an agent's side "
                                "effects when a run fails.")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="print RAC's structured events on stderr")
    parser.add_argument("--debug", action="store_true",
                        help="print the traceback of an error (with the one-line message)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                parser_class=_Parser)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def print_json(obj: Any) -> None:
    """Print ``obj`` as indented JSON on stdout."""
    print(json.dumps(obj, indent=2, default=str, ensure_ascii=False))


def say(text: str) -> None:
    """One line for the person at the terminal, on stderr (stdout is for results)."""
    print(f"rac: {text}", file=sys.stderr, flush=True)


def one_line(error: BaseException) -> str:
    """An error's message on one line."""
    text = error.args[0] if isinstance(error, KeyError) and error.args else str(error)
    text = str(text) or type(error).__name__
    return "; ".join(part.strip() for part in text.splitlines() if part.strip())


def _expected(error: BaseException) -> bool:
    from rac.errors import RACError

    return isinstance(error, CLIError | RACError | ValueError | KeyError | LookupError |
                      FileNotFoundError | PermissionError)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``rac`` console script: runs one command, returns its exit code."""
    try:
        args = build_parser().parse_args(argv)
    except BrokenPipeError:  # help printed into a closed pipe
        return _broken_pipe()
    _configure_logging(args.verbose)
    handler: Command = args.handler
    try:
        code = handler(args)
        sys.stdout.flush()
        return code
    except KeyboardInterrupt:
        return INTERRUPTED
    except BrokenPipeError:
        return _broken_pipe()
    except Exception as e:
        if args.debug:
            import traceback

            traceback.print_exc()
        if _expected(e):
            say(f"error: {one_line(e)}")
            return USAGE
        say(f"internal error: {type(e).__name__}: {one_line(e)}"
            + ("" if args.debug else " (run with --debug for the traceback)"))
        return INTERNAL


def _broken_pipe() -> int:
    """Standard output was closed (``| head``): stop without a word. Python would complain
    again when it flushes stdout at exit, so stdout is pointed at /dev/null first."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:
        pass
    return BROKEN_PIPE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
