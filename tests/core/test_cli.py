"""The demo and the log commands, run as a user would."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest


def rac_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rac.cli.main", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_demo_default_undoes_hotel_then_flight(tmp_path: Path) -> None:
    out = rac_cli("demo", "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["status"] == "compensated"
    assert data["world"] == {"flights": [], "hotels": [], "cars": []}
    recs = data["records"]
    assert [(r["seq"], r["tool"], r["kind"], r["status"], r["compensates"]) for r in recs] == [
        (1, "book_flight", "action", "compensated", None),
        (2, "book_hotel", "action", "compensated", None),
        (3, "book_car", "action", "failed", None),
        (4, "cancel_hotel", "compensation", "completed", 2),
        (5, "cancel_flight", "compensation", "completed", 1)]
    assert set(recs[0]) >= {"seq", "tool", "kind", "status", "args", "result", "error",
                            "attempts", "compensates"}
    assert (tmp_path / ".rac" / "rac.db").exists() and (tmp_path / ".rac" / "demo-world.db").exists()

    shown = rac_cli("show", data["run_id"], "--json", cwd=tmp_path)
    assert json.loads(shown.stdout) == {k: v for k, v in data.items() if k != "world"}
    runs = rac_cli("runs", "--json", cwd=tmp_path)
    assert [r["run_id"] for r in json.loads(runs.stdout)] == [data["run_id"]]


@pytest.mark.parametrize(("fail", "status", "live"), [
    ("none", "completed", {"flights": 1, "hotels": 1, "cars": 1}),
    ("flight", "compensated", {"flights": 0, "hotels": 0, "cars": 0}),
    ("hotel", "compensated", {"flights": 0, "hotels": 0, "cars": 0}),
])
def test_demo_fail_choices(tmp_path: Path, fail: str, status: str, live: dict[str, Any]) -> None:
    out = rac_cli("demo", "--fail", fail, "--store", "memory://", "--json", cwd=tmp_path)
    data = json.loads(out.stdout)
    assert data["status"] == status
    assert {k: len(v) for k, v in data["world"].items()} == live


def test_demo_text_output(tmp_path: Path) -> None:
    out = rac_cli("demo", "--store", f"sqlite:///{tmp_path}/x/log.db", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "Undone, newest first: book_hotel HT-102 (via cancel_hotel)" in out.stdout
    assert "Transaction log:" in out.stdout and "(none)" in out.stdout
    assert (tmp_path / "x" / "demo-world.db").exists()


def test_show_unknown_run_is_a_clear_error(tmp_path: Path) -> None:
    out = rac_cli("show", "nope", "--store", "memory://", cwd=tmp_path)
    assert out.returncode == 2 and "no run 'nope'" in out.stderr
    bad = rac_cli("runs", "--store", "mysql://x", cwd=tmp_path)
    assert bad.returncode == 2 and "unknown store URL" in bad.stderr
