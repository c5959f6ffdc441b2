"""``rac undo RUN [--preview]`` (issue 31): the operator undoes yesterday's finished run with
their own engine; each effect is checked against the world first, a conflict is named and left
alone, a preview changes nothing; on SQLite and PostgreSQL logs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rac.models import RunStatus
from tests.cli.support import live, log_url, one_line_error, rac, run_status

__all__ = ["log_url"]

#: The operator's application: the flight has a lookup, the hotel has none.
APP = '''
import os
import rac
from rac.testing import TravelWorld

world = TravelWorld(os.path.join(os.path.dirname(os.path.abspath(__file__)), "world.db"))

def find_flights(who: str) -> dict:
    """Live flights of a passenger (read-only)."""
    return world.find_bookings(who, "flight")

engine = rac.RAC(
    compensations={
        "book_flight": rac.Compensation(
            "cancel_flight", args={"booking_id": "result.booking_id"},
            lookup=rac.Lookup("find_flights", args={"who": "args.passenger"},
                              items="result.bookings", match={"place": "args.dest"})),
        "book_hotel": "cancel_hotel"},
    read_only=["find_flights"], tools=[*world.tools(), find_flights],
    store=os.environ.get("OPS_LOG", "memory://"), load_entrypoints=False)
'''

TRIP = '''
import json
from opsapp import engine
with engine.run() as run:
    f = run.call("book_flight", passenger="ann", origin="SFO", dest="CDG")
    h = run.call("book_hotel", guest="ann", city="Paris", nights=2)
print(json.dumps({"run_id": run.run_id, "flight": f["booking_id"], "hotel": h["booking_id"]}))
'''


def book(cwd: Path, url: str) -> dict[str, Any]:
    (cwd / "opsapp.py").write_text(APP)
    (cwd / "trip.py").write_text(TRIP)
    out = subprocess.run([sys.executable, "trip.py"], cwd=cwd, text=True, capture_output=True,
                         env={**os.environ, "OPS_LOG": url}, timeout=180)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_preview_then_undo_with_a_conflict_named(tmp_path: Path, log_url: str) -> None:
    trip = book(tmp_path, log_url)
    run_id = trip["run_id"]

    seen = rac("undo", run_id, "--preview", "--app", "opsapp:engine", "--store", log_url,
               "--json", cwd=tmp_path)
    assert seen.returncode == 1, seen.stderr  # the hotel cannot be checked
    preview = json.loads(seen.stdout)
    assert preview["preview"] and [(i["tool"], i["verdict"]) for i in preview["items"]] == [
        ("book_hotel", "unchecked"), ("book_flight", "undo")]
    assert live(tmp_path) == sorted([trip["flight"], trip["hotel"]])
    assert run_status(log_url, run_id) is RunStatus.COMPLETED

    out = rac("undo", run_id, "--app", "opsapp:engine", "--store", log_url, "--why",
              "wrong trip", "--by", "ann", cwd=tmp_path)
    assert out.returncode == 1, out.stderr
    assert f"run {run_id}: now needs_attention" in out.stdout
    assert "#2 book_hotel: unchecked, left alone" in out.stdout
    assert "#1 book_flight: undo (find_flights shows it unchanged since the run)" in out.stdout
    assert "STILL LIVE" in out.stdout and "world is back" not in out.stdout
    assert live(tmp_path) == [trip["hotel"]]
    assert run_status(log_url, run_id) is RunStatus.NEEDS_ATTENTION


def test_unchecked_undoes_everything_and_the_run_is_compensated(tmp_path: Path,
                                                                log_url: str) -> None:
    trip = book(tmp_path, log_url)
    out = rac("undo", trip["run_id"], "--app", "opsapp:engine", "--store", log_url, "--why",
              "wrong trip", "--unchecked", "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    done = json.loads(out.stdout)
    assert done["status"] == "compensated" and done["undone"] == [2, 1]
    assert live(tmp_path) == []


@pytest.mark.parametrize("extra, says", [
    ([], "needs a reason"),
    (["--why", "x", "--unchecked"], None),
])
def test_refusals_are_one_line_and_change_nothing(tmp_path: Path, log_url: str,
                                                  extra: list[str], says: str | None) -> None:
    trip = book(tmp_path, log_url)
    if says is None:  # an undone run cannot be undone again
        assert rac("undo", trip["run_id"], "--app", "opsapp:engine", "--store", log_url,
                   *extra, cwd=tmp_path).returncode == 0
        says = "only a completed run can be undone"
    before = live(tmp_path)
    out = rac("undo", trip["run_id"], "--app", "opsapp:engine", "--store", log_url, *extra,
              cwd=tmp_path)
    assert says in one_line_error(out)
    assert live(tmp_path) == before


def test_without_an_app_it_says_what_it_needs(tmp_path: Path, log_url: str) -> None:
    trip = book(tmp_path, log_url)
    out = rac("undo", trip["run_id"], "--store", log_url, "--why", "x", cwd=tmp_path)
    assert "needs --app" in one_line_error(out)
    assert len(live(tmp_path)) == 2
