"""``--app MODULE:ATTR``: the operator's own engine, which knows the tools that undo a run.

Commands that run tools (``rac resume``, ``rac recover``) refuse to run without it (or
``$RAC_APP``), except on runs the demo wrote, which the demo's own engine undoes in the demo's
own world. Every way an ``--app`` can be wrong is one line naming it."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Any

from rac.cli.main import CLIError

#: The environment variable that names the engine when ``--app`` is not given.
APP_ENV = "RAC_APP"
APP_HELP = ("your rac.RAC engine, MODULE:ATTR (e.g. myagent.tools:engine; default $RAC_APP): "
            "RAC imports it to call the tools that undo this log's actions")


def add_app_option(parser: Any, help_text: str = APP_HELP) -> None:
    """``--app MODULE:ATTR``."""
    parser.add_argument("--app", default=None, metavar="MODULE:ATTR", help=help_text)


def app_spec(args: argparse.Namespace) -> str | None:
    """The engine the command names: ``--app``, else ``$RAC_APP``, else None."""
    given: str | None = getattr(args, "app", None)
    return given or os.environ.get(APP_ENV) or None


def missing_app(command: str, why: str) -> CLIError:
    """The refusal of a command that would run tools without the operator's engine."""
    return CLIError(f"`rac {command}` needs --app MODULE:ATTR (or ${APP_ENV}): the import path "
                    f"of your rac.RAC engine (e.g. myagent.tools:engine), whose tools undo the "
                    f"run's actions; {why}")


def load_engine(spec: str, store: Any = None) -> Any:
    """The ``rac.RAC`` named by ``MODULE:ATTR`` (a factory is called), its store replaced by
    ``store`` when one is given."""
    from rac.engine import RAC

    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise CLIError(f"--app must be MODULE:ATTR (e.g. myagent.tools:engine), got {spec!r}")
    if "" not in sys.path:
        sys.path.insert(0, "")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as e:
        raise CLIError(f"--app {spec}: cannot import {module_name} ({e})") from e
    except Exception as e:
        raise CLIError(f"--app {spec}: importing {module_name} raised "
                       f"{type(e).__name__}: {e}") from e
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise CLIError(f"--app {spec}: {module_name} has no attribute {part!r}")
        obj = getattr(obj, part)
    if callable(obj) and not isinstance(obj, RAC) and _takes_no_arguments(obj):
        try:
            obj = obj()
        except Exception as e:
            raise CLIError(f"--app {spec}: calling it raised {type(e).__name__}: {e}") from e
    if not isinstance(obj, RAC):
        raise CLIError(f"--app {spec} is a {type(obj).__name__}, not a rac.RAC engine (nor a "
                       "function that takes no arguments and returns one)")
    if store is not None:
        obj.store = store
    return obj


def _takes_no_arguments(fn: Any) -> bool:
    import inspect

    try:
        inspect.signature(fn).bind()
    except (TypeError, ValueError):
        return False
    return True
