"""`rac demo` as a first-hour user meets it (issue #26): `--mcp` without the mcp package is one
line naming the extra, and `--crash-at` says what it does before the process ends."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.support import one_line_error, rac


def test_demo_mcp_without_mcp_is_one_line_naming_the_extra(tmp_path: Path) -> None:
    hide = tmp_path / "hide"
    hide.mkdir()
    # as if the mcp package were not installed: `import mcp` fails in the real `rac` process
    (hide / "sitecustomize.py").write_text("import sys\nsys.modules['mcp'] = None\n")
    out = rac("demo", "--mcp", "--store", f"sqlite:///{tmp_path / 'log.db'}", cwd=tmp_path,
              env={"PYTHONPATH": str(hide)})
    line = one_line_error(out)
    assert "mcp" in line and "[mcp]" in line and "pip install" in line
    assert not (tmp_path / "log.db").exists() and not (tmp_path / "demo-mcp-world.db").exists()


def test_crash_at_says_what_it_does(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'log.db'}"
    out = rac("demo", "--crash-at", "book_hotel:after_effect", "--store", url, cwd=tmp_path)
    assert out.returncode == 86 and out.stdout == ""
    (line,) = out.stderr.strip().splitlines()
    run_id = json.loads(rac("runs", "--store", url, "--json", cwd=tmp_path).stdout)[0]["run_id"]
    assert line.startswith("rac: crash point book_hotel:after_effect reached in run " + run_id)
    assert "exit 86" in line and f"rac demo --recover --store {url}" in line
    never = rac("demo", "--fail", "flight", "--crash-at", "book_car:after_intent",
                "--store", url, cwd=tmp_path)
    assert never.returncode == 3 and "never reached crash point" in never.stderr
