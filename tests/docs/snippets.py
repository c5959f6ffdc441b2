"""The docs snippet runner: finds the Python fences of a markdown page and runs them in order.

Every fence opened with three backticks and ``python`` in ``docs/*.md`` and ``README.md`` is a
snippet. A page's snippets run in page order in one namespace (a snippet may use what an
earlier one defined), as one module, in a scratch working directory, with ``RAC_STORE`` set to
``memory://`` for engines that choose no store. Two HTML comments, invisible in the built
site, mark the exceptions:

* ``<!-- rac: partial -->`` on the line before a fence: the snippet is a fragment (a signature,
  an excerpt of a larger file) and is not run.
* ``<!-- rac: setup`` opening a comment that holds a python fence and ends with ``-->``: the
  fence is run where it stands but is not shown, for what the page says comes from the reader
  (a model, the reader's own tools). Keep it short; quickstarts should not need it.

Snippets are compiled with the page as their file name and their real line numbers, so a
traceback points at the markdown line. A reader pastes them into a fresh interpreter, where
top-level ``await`` is a syntax error: a page may use it only after it says so, in a sentence
holding :data:`TOP_LEVEL_AWAIT` (and how to run them, e.g. ``python -m asyncio``).
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import re
import sys
import textwrap
import traceback
import types
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PARTIAL = "<!-- rac: partial -->"
SETUP = "<!-- rac: setup"
#: What a page says, before its first snippet with top-level ``await``, to allow it.
TOP_LEVEL_AWAIT = "top-level `await`"
_FENCE = re.compile(r"^(?P<indent>\s*)(?P<ticks>`{3,}|~{3,})\s*(?P<info>[^\s`]*)(?P<rest>.*)$")


@dataclass(frozen=True)
class Snippet:
    """One fence of a page: its code, the line of its first code line, and how it is run."""

    page: str
    line: int
    code: str
    kind: str  # "run", "setup" (run, hidden in the site) or "partial" (not run)
    await_stated: bool = False  # the page said it uses top-level ``await`` before this fence

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[Path]:
    """The markdown pages whose snippets run: README.md and every page of docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def page_name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def parse(text: str, page: str) -> list[Snippet]:
    """Every Python fence of a markdown text, in order, with how it is to be run."""
    lines = text.splitlines()
    snippets: list[Snippet] = []
    in_setup = False
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith(SETUP):
            if "-->" in stripped:
                raise ValueError(f"{page}:{i + 1}: {SETUP!r} opens a comment that holds the "
                                 "setup fence and closes after it with '-->'")
            in_setup = True
        elif in_setup and "-->" in stripped and not _FENCE.match(line):
            in_setup = False
        match = _FENCE.match(line)
        if not match:
            i += 1
            continue
        indent, ticks, info = match["indent"], match["ticks"], match["info"].lower()
        end = i + 1
        while end < len(lines) and not (lines[end].strip().startswith(ticks)
                                        and lines[end].strip().strip(ticks[0]) == ""):
            end += 1
        if end == len(lines):
            raise ValueError(f"{page}:{i + 1}: fence opened here is never closed")
        if info in ("python", "py", "python3"):
            body = "\n".join(ln[len(indent):] if ln.startswith(indent) else ln.lstrip()
                             for ln in lines[i + 1:end])
            before = next((ln.strip() for ln in reversed(lines[:i]) if ln.strip()), "")
            kind = "setup" if in_setup else "partial" if before == PARTIAL else "run"
            stated = TOP_LEVEL_AWAIT in "\n".join(lines[:i])
            snippets.append(Snippet(page, i + 2, textwrap.dedent(body), kind, stated))
        i = end + 1
    return snippets


class SnippetFailed(AssertionError):
    """A snippet of a page raised; the message names the page and line."""


def run_page(snippets: list[Snippet], module_name: str) -> int:
    """Run a page's snippets (setup and run kinds) in order in one module; returns how many ran.

    Raises :class:`SnippetFailed` naming the page and line of the first snippet that fails.
    """
    __tracebackhide__ = True
    module = types.ModuleType(module_name)
    sys.modules[module_name] = module
    ran = 0
    try:
        for snippet in snippets:
            if snippet.kind == "partial":
                continue
            _run_one(snippet, module)
            ran += 1
    finally:
        sys.modules.pop(module_name, None)
    return ran


def _run_one(snippet: Snippet, module: types.ModuleType) -> None:
    __tracebackhide__ = True
    filename = str(ROOT / snippet.page)
    source = "\n" * (snippet.line - 1) + snippet.code
    try:
        code = compile(source, filename, "exec", dont_inherit=True)
    except SyntaxError as exc:
        try:
            code = compile(source, filename, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
                           dont_inherit=True)
        except SyntaxError:
            raise SnippetFailed(f"{snippet.where}: snippet is not valid Python ({exc.msg}, "
                                f"line {exc.lineno}); fix it, or mark it {PARTIAL!r}") from None
        if not snippet.await_stated:
            raise SnippetFailed(
                f"{snippet.where}: snippet uses top-level await ({exc.msg}, line {exc.lineno}), "
                "which a fresh interpreter rejects; wrap it in asyncio.run(...), or say before "
                f"it that the page's snippets use {TOP_LEVEL_AWAIT} (and how to run them)"
            ) from None
    try:
        result = eval(code, module.__dict__)  # noqa: S307 - running the docs is the point
        if inspect.iscoroutine(result):
            asyncio.run(result)
    except BaseException as exc:  # noqa: BLE001 - any failure of a snippet is reported
        if isinstance(exc, KeyboardInterrupt):
            raise
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename]
        line = frames[-1].lineno if frames else snippet.line
        detail = "".join(traceback.format_exception(exc)[-12:])
        raise SnippetFailed(f"{snippet.page}:{line} (snippet at line {snippet.line}) raised "
                            f"{type(exc).__name__}: {exc}\n{detail}") from None
