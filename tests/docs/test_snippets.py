"""Every Python snippet of README.md and docs/*.md runs (see ``tests/docs/snippets.py``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.docs.snippets import PARTIAL, SnippetFailed, page_name, pages, parse, run_page

PAGES = [p for p in pages() if parse(p.read_text(), page_name(p))]


@pytest.mark.usefixtures("docs_sandbox")
@pytest.mark.parametrize("path", PAGES, ids=[page_name(p) for p in PAGES])
def test_page_snippets_run(path: Path) -> None:
    snippets = parse(path.read_text(), page_name(path))
    module = "docs_snippets_" + re.sub(r"\W", "_", page_name(path))
    ran = run_page(snippets, module)
    assert ran or all(s.kind == "partial" for s in snippets)


def test_every_page_is_collected() -> None:
    names = {page_name(p) for p in pages()}
    assert {"README.md", "docs/index.md", "docs/api.md"} <= names


PAGE = """\
Intro.

```python
x = 1
```

<!-- rac: setup
```python
y = x + 1
```
-->

<!-- rac: partial -->
```python
rac.RAC(*, compensations=None)
```

```bash
echo not python
```

```python
assert (x, y) == (1, 2)
z = y / 0
```
"""


def test_parser_reads_kinds_and_lines() -> None:
    got = [(s.line, s.kind, s.code.strip()) for s in parse(PAGE, "docs/x.md")]
    assert got == [(4, "run", "x = 1"), (9, "setup", "y = x + 1"),
                   (15, "partial", "rac.RAC(*, compensations=None)"),
                   (23, "run", "assert (x, y) == (1, 2)\nz = y / 0")]


def test_a_failing_snippet_names_page_and_line(tmp_path: Path) -> None:
    with pytest.raises(SnippetFailed, match=r"^docs/x\.md:24 \(snippet at line 23\) raised "
                                            r"ZeroDivisionError"):
        run_page(parse(PAGE, "docs/x.md"), "docs_snippets_selftest")


def test_partial_marker_is_documented() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "index.md").read_text()
    assert PARTIAL in text and "<!-- rac: setup" in text


AWAITING = """\
```python
import asyncio

async def ready() -> int:
    return 1
```

```python
n = await ready()
```
"""
STATED = "The snippets use top-level `await` (run them in `python -m asyncio`).\n\n"


def test_top_level_await_fails_where_the_page_does_not_say_so() -> None:
    with pytest.raises(SnippetFailed, match=r"^docs/x\.md:9: snippet uses top-level await"):
        run_page(parse(AWAITING, "docs/x.md"), "docs_snippets_await_unstated")


def test_top_level_await_runs_after_the_page_says_so() -> None:
    ns_page = STATED + AWAITING + "\n```python\nassert n == 1\n```\n"
    assert run_page(parse(ns_page, "docs/x.md"), "docs_snippets_await_stated") == 3
