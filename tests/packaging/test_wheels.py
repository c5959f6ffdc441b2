"""Every distribution builds a wheel that installs and works on its own, with no workspace.

The wheels are built from the checkout, then the core and one adapter are installed from them
alone into a fresh virtual environment (third-party dependencies from the index, held to the
lock's versions so that uv's cache serves them), and that adapter's quickstart from its docs
page runs there, from a scratch directory, with the repository nowhere on ``sys.path``. The
core alone runs the README's screen. An adapter next to a core outside its declared range, or
next to another project's ``rac`` module, fails its import with one line.

These install real environments (about a minute): they run once, in the suite's first pass;
``RAC_PACKAGING_TESTS=0`` (set by scripts/test.sh for its later passes) skips them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.docs.snippets import parse

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    os.environ.get("RAC_PACKAGING_TESTS", "1") == "0",
    reason="RAC_PACKAGING_TESTS=0: the wheel tests ran in the suite's first pass")

#: Seconds one uv command may take: installs fetch from the index on a cold cache.
UV_BOUND = 900
#: Seconds a quickstart may take in its environment (a first import of a framework is slow).
RUN_BOUND = 600


@dataclass(frozen=True)
class Adapter:
    folder: str  # packages/<folder>
    module: str
    page: str  # the docs page whose quickstart runs


ADAPTERS = [Adapter("rac-langgraph", "rac_langgraph", "docs/langgraph.md"),
            Adapter("rac-crewai", "rac_crewai", "docs/crewai.md"),
            Adapter("rac-llamaindex", "rac_llamaindex", "docs/llamaindex.md"),
            Adapter("rac-semantic-kernel", "rac_semantic_kernel", "docs/semantic-kernel.md")]


def uv_binary() -> str:
    for candidate in (os.environ.get("UV"), str(ROOT / ".tools" / "bin" / "uv"),
                      shutil.which("uv")):
        if candidate and Path(candidate).is_file():
            return str(Path(candidate).resolve())
    pytest.fail("no uv to build wheels with: run the suite through make test (which "
                "bootstraps .tools/bin/uv) or set UV to a uv binary")


def clean_env(home: Path | None = None) -> dict[str, str]:
    """The environment of a process that must see only its own virtual environment, with
    ``home`` as its HOME (None: the real one, where uv keeps its cache)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "UV_PROJECT_ENVIRONMENT")
           and not k.startswith("PYTEST")}
    if home is not None:
        env["HOME"] = str(home)
    env.update(RAC_STORE="memory://", CREWAI_DISABLE_TELEMETRY="true",
               OTEL_SDK_DISABLED="true", CREWAI_TRACING_ENABLED="false",
               LANGSMITH_TRACING="false", LANGCHAIN_TRACING_V2="false")
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "RAC_MODEL"):
        env.pop(key, None)
    return env


def run(args: list[str], *, cwd: Path, env: dict[str, str], bound: float,
        check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=bound)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{' '.join(args[:4])} ... did not finish in {bound:g} s (a machine "
                    "that busy, or an index that slow, needs a larger bound)")
    if check and done.returncode != 0:
        pytest.fail(f"{' '.join(args)} exited {done.returncode}:\n{done.stdout[-3000:]}\n"
                    f"{done.stderr[-3000:]}")
    return done


@dataclass(frozen=True)
class Built:
    """The wheels of the workspace and the lock's versions as constraints."""

    uv: str
    wheels: dict[str, Path]  # folder -> wheel
    constraints: Path
    scratch: Path

    def venv(self, name: str, *installs: str, no_deps: bool = False) -> Path:
        """A fresh virtual environment with ``installs`` (wheel paths) installed; its python."""
        where = self.scratch / name
        env = clean_env()
        run([self.uv, "venv", "--quiet", "--python", sys.executable, str(where)],
            cwd=self.scratch, env=env, bound=UV_BOUND)
        python = where / "bin" / "python"
        run([self.uv, "pip", "install", "--quiet", "--python", str(python), "--constraints",
             str(self.constraints), *(["--no-deps"] if no_deps else []), *installs],
            cwd=self.scratch, env=env, bound=UV_BOUND)
        return python


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    scratch = tmp_path_factory.mktemp("wheels")
    uv = uv_binary()
    out = scratch / "dist"
    env = clean_env()
    run([uv, "build", "--all-packages", "--wheel", "--quiet", "--out-dir", str(out)],
        cwd=ROOT, env=env, bound=UV_BOUND)
    constraints = scratch / "constraints.txt"
    run([uv, "export", "--frozen", "--all-packages", "--all-groups", "--no-hashes",
         "--no-emit-workspace", "--no-header", "--quiet", "--output-file", str(constraints)],
        cwd=ROOT, env=env, bound=UV_BOUND)
    wheels = {}
    for folder in ["rac-core", *(a.folder for a in ADAPTERS)]:
        name = tomllib.loads((ROOT / "packages" / folder / "pyproject.toml").read_text())[
            "project"]["name"].replace("-", "_")
        [wheel] = out.glob(f"{name}-*.whl")
        wheels[folder] = wheel
    yield Built(uv, wheels, constraints, scratch)


def quickstart(page: str) -> str:
    """The snippets of ``page``'s sections titled "Quickstart...", as one script (the page's
    own hidden setup fences among them), run the way tests/docs runs pages."""
    text = (ROOT / page).read_text()
    sections = re.split(r"(?m)^## ", text)
    wanted = "\n".join("## " + s for s in sections[1:] if s.startswith("Quickstart"))
    snippets = [s for s in parse(wanted, page) if s.kind != "partial"]
    assert snippets, f"{page} has no quickstart snippet"
    return "\n\n".join(s.code for s in snippets)


RUNNER = """\
import ast, asyncio, inspect, sys
source = open(sys.argv[1]).read()
code = compile(source, sys.argv[2], "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
result = eval(code, {"__name__": "__main__"})
if inspect.iscoroutine(result):
    asyncio.run(result)
"""


def run_script(python: Path, code: str, name: str, scratch: Path) -> str:
    """Run ``code`` with ``python`` in an empty directory of ``scratch``; its stdout."""
    where = scratch / ("run-" + re.sub(r"\W", "-", name))
    where.mkdir()
    (where / "snippet.py").write_text(code)
    (where / "runner.py").write_text(RUNNER)
    done = run([str(python), "runner.py", "snippet.py", name], cwd=where,
               env=clean_env(where), bound=RUN_BOUND)
    return done.stdout


def assert_from_wheels(python: Path, modules: list[str]) -> None:
    """Every module of ``modules`` imports from ``python``'s own site-packages."""
    probe = ("import importlib, sys\n"
             "for m in sys.argv[1:]:\n"
             "    print(m, importlib.import_module(m).__file__)\n")
    done = run([str(python), "-c", probe, *modules], cwd=python.parents[2],
               env=clean_env(python.parents[2]), bound=RUN_BOUND)
    for line in done.stdout.splitlines():
        module, path = line.split(" ", 1)
        assert "site-packages" in path and str(ROOT) not in path, (module, path)


def test_the_core_alone_runs_the_readme(built: Built) -> None:
    python = built.venv("core", str(built.wheels["rac-core"]))
    readme = [s for s in parse((ROOT / "README.md").read_text(), "README.md")
              if s.kind != "partial"]
    out = run_script(python, "\n\n".join(s.code for s in readme), "README.md", built.scratch)
    assert "The world is back to how it was before these steps" in out
    assert_from_wheels(python, ["rac"])
    # The core installs no agent framework.
    frameworks = run([str(python), "-c", "import importlib.util as u; print([m for m in "
                      "('langgraph', 'crewai', 'llama_index', 'semantic_kernel') "
                      "if u.find_spec(m)])"], cwd=built.scratch, env=clean_env(built.scratch),
                     bound=RUN_BOUND)
    assert frameworks.stdout.strip() == "[]"


@pytest.mark.parametrize("adapter", ADAPTERS, ids=[a.folder for a in ADAPTERS])
def test_core_and_one_adapter_from_wheels_run_its_quickstart(built: Built,
                                                             adapter: Adapter) -> None:
    python = built.venv(adapter.folder, str(built.wheels["rac-core"]),
                        str(built.wheels[adapter.folder]))
    run_script(python, quickstart(adapter.page), adapter.page, built.scratch)
    assert_from_wheels(python, ["rac", adapter.module])


def test_an_adapter_on_a_core_outside_its_range_fails_in_one_line(built: Built) -> None:
    # A core of another minor version, built from a copy of the checkout's.
    copy = built.scratch / "core-0.2"
    shutil.copytree(ROOT / "packages" / "rac-core", copy,
                    ignore=shutil.ignore_patterns("__pycache__"))
    project = copy / "pyproject.toml"
    project.write_text(re.sub(r'(?m)^version = "[^"]+"', 'version = "0.2.0"',
                              project.read_text()))
    env = clean_env()
    run([built.uv, "build", "--wheel", "--quiet", "--out-dir", str(copy / "dist"), str(copy)],
        cwd=built.scratch, env=env, bound=UV_BOUND)
    [newer] = (copy / "dist").glob("*.whl")
    python = built.venv("mismatch", str(newer))
    built_adapter = str(built.wheels["rac-langgraph"])
    run([built.uv, "pip", "install", "--quiet", "--python", str(python), "--no-deps",
         built_adapter], cwd=built.scratch, env=clean_env(), bound=UV_BOUND)

    done = run([str(python), "-c", "import rac_langgraph"], cwd=built.scratch,
               env=clean_env(built.scratch), bound=RUN_BOUND, check=False)

    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "rac.adapters.compat.CoreMismatch: robust-agent-compensation-langgraph 0.1.0 works "
        "with robust-agent-compensation>=0.1.0,<0.2, but robust-agent-compensation 0.2.0 is "
        "installed; install both from the same checkout or release")

    # Another project's `rac` module (PyPI's rac-core is one) in front of the core.
    stranger = built.scratch / "stranger"
    (stranger / "rac").mkdir(parents=True)
    (stranger / "rac" / "__init__.py").write_text("'''lint and diff product requirements'''\n")
    env = clean_env(built.scratch)
    env["PYTHONPATH"] = str(stranger)
    done = run([str(python), "-c", "import rac_langgraph"], cwd=built.scratch, env=env,
               bound=RUN_BOUND, check=False)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "ImportError: rac_langgraph needs RAC's core, robust-agent-compensation: No module "
        "named 'rac.adapters'")
