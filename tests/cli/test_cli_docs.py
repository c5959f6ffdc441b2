"""docs/cli.md documents every command and every flag the parser has, and every exit code."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from rac.cli import build_parser
from rac.cli.main import (
    BROKEN_PIPE,
    INTERNAL,
    INTERRUPTED,
    NOT_REACHED,
    OK,
    UNSETTLED,
    USAGE,
)

DOC = (Path(__file__).parents[2] / "docs" / "cli.md").read_text()


def commands(parser: argparse.ArgumentParser, prefix: str = "rac") -> dict[str, argparse.ArgumentParser]:
    """Every (sub)command's full name and parser."""
    out = {prefix: parser}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out.update(commands(sub, f"{prefix} {name}"))
    return out


def test_every_command_and_flag_is_documented() -> None:
    missing = []
    for name, parser in commands(build_parser()).items():
        if name != "rac" and f"`{name}" not in DOC:
            missing.append(name)
        for action in parser._actions:
            for flag in action.option_strings:
                if flag.startswith("--") and not re.search(rf"(?<![\w-]){re.escape(flag)}\b",
                                                           DOC):
                    missing.append(f"{name} {flag}")
    assert missing == []
    for named_in_issue_26 in ("`rac resolve", "--mcp", "--limit"):
        assert named_in_issue_26 in DOC


def test_every_exit_code_is_documented() -> None:
    codes = {OK, UNSETTLED, USAGE, NOT_REACHED, INTERNAL, INTERRUPTED, BROKEN_PIPE, 86}
    table = DOC.split("## Exit codes", 1)[1]
    assert {c for c in codes if not re.search(rf"^\| {c} \|", table, re.M)} == set()
