"""`rac demo --mcp`: the demo's trip against the example MCP server over stdio, offline."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.mcp.demo_checks import assert_trip_undone

pytest.importorskip("mcp")


def rac_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rac.cli.main", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_demo_mcp_undoes_the_trip_through_the_server(tmp_path: Path) -> None:
    out = rac_cli("demo", "--mcp", "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert_trip_undone(data, hotel_undo="cancel_hotel")
    # The server's own world file: each booking was made once and cancelled once, by the
    # server's cancel tools.
    db = sqlite3.connect(tmp_path / ".rac" / "demo-mcp-world.db")
    assert db.execute("SELECT tool, event FROM ledger ORDER BY n").fetchall() == [
        ("book_flight", "book"), ("book_hotel", "book"),
        ("cancel_hotel", "cancel"), ("cancel_flight", "cancel")]


def test_demo_mcp_text_says_what_it_read_from_the_server(tmp_path: Path) -> None:
    out = rac_cli("demo", "--mcp", "--fail", "none", "--store", "memory://", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "book_flight: undone by cancel_flight, looked up with find_flights" in out.stdout
    assert "search_flights: claims read-only; protected (server not trusted)" in out.stdout
    assert "run-" in out.stdout and ": completed" in out.stdout
