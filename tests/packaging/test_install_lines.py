"""Every install line of the README, the docs and the packages' READMEs installs what it says.

Until the distributions are published, an install line names RAC's packages by their folder in
the checkout (``pip install ./packages/rac-core ./packages/rac-langgraph``), never by a name on
PyPI (where ``rac-core`` is another project's), never editable (the environment would break when
the checkout moves), and says near the line that they are not on PyPI yet. Any other name must
be a third-party package the workspace locks (uv.lock) or one named below.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Third-party packages the docs may tell a reader to install that the workspace does not lock:
#: the providers of a real model for ``rac demo --llm`` (the suite runs no real model).
UNLOCKED_THIRD_PARTY = {"langchain-openai", "langchain-anthropic"}

#: Words one of which an install line by path, or the lines just above it, must hold.
NOT_PUBLISHED = ("not on pypi yet", "not published")

_INSTALL = re.compile(r"\b(?:uv\s+)?pip3?\s+install\s+(?P<args>[^`#\n]*)|\buv\s+add\s+(?P<uv>[^`#\n]*)")


@dataclass(frozen=True)
class InstallLine:
    """One install command of a page: where it is, and what follows ``pip install``."""

    page: str
    line: int
    args: list[str]
    context: str  # the line, the few above it and the one after, lower case

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def workspace() -> dict[str, dict[str, object]]:
    """Each workspace package's folder -> its ``[project]`` table."""
    return {p.parent.name: tomllib.loads(p.read_text())["project"]
            for p in sorted((ROOT / "packages").glob("*/pyproject.toml"))}


def locked_names() -> set[str]:
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    return {normalize(p["name"]) for p in lock["package"]}


def doc_pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
            *sorted((ROOT / "packages").glob("*/README.md"))]


def install_lines(text: str, page: str) -> list[InstallLine]:
    lines = text.splitlines()
    found = []
    for number, line in enumerate(lines, start=1):
        for match in _INSTALL.finditer(line):
            raw = (match["args"] if match["args"] is not None else match["uv"]).strip()
            context = "\n".join(lines[max(0, number - 6):number + 1]).lower()
            found.append(InstallLine(page, number, shlex.split(raw), context))
    return found


ALL_LINES = [found for path in doc_pages()
             for found in install_lines(path.read_text(), path.relative_to(ROOT).as_posix())]


def problems(found: InstallLine, packages: dict[str, dict[str, object]],
             locked: set[str]) -> list[str]:
    """What is wrong with one install line (nothing: an empty list)."""
    names = {normalize(str(project["name"])): folder for folder, project in packages.items()}
    wrong = []
    by_path = False
    for arg in found.args:
        if arg in ("-e", "--editable") or arg.startswith("--editable="):
            wrong.append(f"{arg!r}: install from the checkout without -e (an editable install "
                         "breaks when the checkout moves)")
            continue
        if arg.startswith("-"):
            continue
        spec = re.match(r"^(?P<target>[^\[<>=!~;]+)(?:\[(?P<extras>[^\]]*)\])?", arg)
        assert spec is not None, arg
        target, extras = spec["target"], spec["extras"]
        if "/" in target or target.startswith("."):
            by_path = True
            folder = Path(target).as_posix().removeprefix("./")
            match = re.fullmatch(r"packages/(?P<name>[^/]+)/?", folder)
            if match is None or match["name"] not in packages:
                wrong.append(f"{arg!r} is no package folder of the workspace "
                             f"(packages/{', packages/'.join(sorted(packages))})")
                continue
            declared = packages[match["name"]].get("optional-dependencies", {})
            assert isinstance(declared, dict)
            for extra in filter(None, (e.strip() for e in (extras or "").split(","))):
                if extra not in declared:
                    wrong.append(f"{arg!r}: packages/{match['name']} has no extra {extra!r} "
                                 f"(it has {sorted(declared)})")
        elif normalize(target) in names:
            wrong.append(f"{arg!r} installs by name what is not on PyPI yet: install "
                         f"./packages/{names[normalize(target)]} from the checkout")
        elif normalize(target) not in locked and normalize(target) not in UNLOCKED_THIRD_PARTY:
            wrong.append(f"{arg!r} is neither a workspace package nor a third-party dependency "
                         "the workspace locks (uv.lock) or names (UNLOCKED_THIRD_PARTY); a "
                         "stranger's package, or a typo")
    if by_path and not any(words in found.context for words in NOT_PUBLISHED):
        wrong.append("installs from the checkout without saying, on the line or next to it, "
                     "that the distributions are not on PyPI yet")
    return wrong


def test_the_docs_install_lines_are_read() -> None:
    pages = {found.page for found in ALL_LINES}
    assert {"README.md", "docs/index.md", "docs/crewai.md", "docs/llamaindex.md",
            "docs/semantic-kernel.md"} <= pages
    readme = [found.args for found in ALL_LINES if found.page == "README.md"]
    assert ["./packages/rac-core", "./packages/rac-langgraph"] in readme


@pytest.mark.parametrize("found", ALL_LINES, ids=[f.where for f in ALL_LINES])
def test_an_install_line_installs_workspace_packages_by_path_or_known_third_party(
        found: InstallLine) -> None:
    assert problems(found, workspace(), locked_names()) == [], found.where


def test_the_checker_names_what_is_wrong() -> None:
    packages, locked = workspace(), locked_names()
    text = ("```bash\n"
            "pip install rac-core robust-agent-compensation-crewai\n"
            "pip install -e ./packages/rac-core './packages/rac-core[nope]' ./packages/rac-x\n"
            "pip install crewai-tools left-padd\n"
            "```\n")
    got = [problems(found, packages, locked) for found in install_lines(text, "docs/x.md")]
    assert got[0] == ["'rac-core' is neither a workspace package nor a third-party dependency "
                      "the workspace locks (uv.lock) or names (UNLOCKED_THIRD_PARTY); a "
                      "stranger's package, or a typo",
                      "'robust-agent-compensation-crewai' installs by name what is not on PyPI "
                      "yet: install ./packages/rac-crewai from the checkout"]
    assert got[1][0].startswith("'-e': install from the checkout without -e")
    assert "packages/rac-core has no extra 'nope'" in got[1][1]
    assert got[1][2].startswith("'./packages/rac-x' is no package folder of the workspace")
    assert got[1][3].startswith("installs from the checkout without saying")
    assert got[2] == ["'left-padd' is neither a workspace package nor a third-party dependency "
                      "the workspace locks (uv.lock) or names (UNLOCKED_THIRD_PARTY); a "
                      "stranger's package, or a typo"]


def test_the_adapters_declare_the_range_of_the_core_they_work_with() -> None:
    from rac.adapters.compat import CORE, satisfies

    packages = workspace()
    core = packages["rac-core"]
    assert core["name"] == CORE
    for folder, project in packages.items():
        if folder == "rac-core":
            continue
        deps = project["dependencies"]
        assert isinstance(deps, list)
        [requirement] = [d for d in deps if normalize(re.split(r"[<>=!~\[ ;]", d)[0]) == CORE]
        spec = requirement[len(CORE):]
        assert "<" in spec and ">=" in spec, f"{folder}: {requirement!r} is not a bounded range"
        assert satisfies(str(core["version"]), spec), f"{folder}: {requirement!r}"


@pytest.mark.parametrize(("version", "spec", "expected"), [
    ("0.1.0", ">=0.1.0,<0.2", True), ("0.1.7", ">=0.1.0,<0.2", True),
    ("0.2.0", ">=0.1.0,<0.2", False), ("0.0.9", ">=0.1.0,<0.2", False),
    ("0.1.0rc1", ">=0.1.0,<0.2", True), ("1.2", "~=1.1", True), ("2.0", "~=1.1", False),
    ("0.1.3", "==0.1.*", True), ("0.2.0", "==0.1.*", False), ("0.1", "==0.1.0", True),
    ("0.1.0", "!=0.1.0", False), ("0.3", ">0.2,<=0.3", True),
])
def test_a_core_version_is_checked_against_a_range(version: str, spec: str,
                                                   expected: bool) -> None:
    from rac.adapters.compat import satisfies

    assert satisfies(version, spec) is expected


def test_an_unreadable_range_is_an_error_naming_it() -> None:
    from rac.adapters.compat import satisfies

    with pytest.raises(ValueError, match="cannot read the version clause 'about 0.1'"):
        satisfies("0.1.0", ">=0.1.0,about 0.1")
