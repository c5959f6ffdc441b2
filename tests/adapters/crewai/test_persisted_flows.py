"""A ``@persist`` Flow whose process died, kicked off again on its saved state in another
process: it continues the crashed run (one run, nothing booked twice), and a later failure
undoes what both processes did."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import rac
from rac.models import RecordKind, RunStatus
from rac.testing import TravelWorld
from tests.adapters.crewai.persisted_flow import CRASHED, STATE, build
from tests.adapters.crewai.support import ledger, told

ROOT = Path(__file__).resolve().parents[3]


def crash_first_process(tmp_path: Path) -> tuple[Path, Path, Path]:
    """Run the Flow in a child process that dies between its two crews."""
    world, log, saved = tmp_path / "world.db", tmp_path / "rac.db", tmp_path / "flows.db"
    TravelWorld(str(world)).close()
    child = subprocess.run(
        [sys.executable, "-m", "tests.adapters.crewai.persisted_flow", str(world), str(log),
         str(saved)], cwd=ROOT, env=dict(os.environ), capture_output=True, text=True,
        timeout=600)
    assert child.returncode == CRASHED, child.stderr[-3000:]
    assert ledger(world) == [("book_flight", "book")]
    return world, log, saved


def test_a_resumed_flow_continues_the_crashed_run_and_books_nothing_twice(
        tmp_path: Path) -> None:
    world, log, saved = crash_first_process(tmp_path)
    flow, eng, f_llm, h_llm = build(world, log, saved, crash=False)

    flow.kickoff(inputs={"id": STATE})

    assert ledger(world) == [("book_flight", "book"), ("book_hotel", "book")]
    [run] = eng.store.list_runs()  # no second run: the crashed one went on
    assert run.run_id == f"flow-{STATE}" and run.status is RunStatus.COMPLETED
    assert [(r.tool, r.kind) for r in eng.store.get_records(run.run_id)] == [
        ("book_flight", RecordKind.ACTION), ("book_hotel", RecordKind.ACTION)]
    assert "FL-101" in told(f_llm, "book_flight")[0]  # the booking the first process made


def test_a_failure_after_the_resume_undoes_what_the_crashed_process_booked(
        tmp_path: Path) -> None:
    world, log, saved = crash_first_process(tmp_path)
    flow, eng, _, h_llm = build(world, log, saved, crash=False, hotel_fails=True)

    flow.kickoff(inputs={"id": STATE})

    assert ledger(world) == [("book_flight", "book"), ("cancel_flight", "cancel")]
    [report] = told(h_llm, "book_hotel")
    assert "via cancel_flight" in report and "world is back" in report
    [run] = eng.store.list_runs()
    assert run.status is RunStatus.COMPENSATED


def test_a_finished_states_next_kickoff_is_a_run_of_its_own(tmp_path: Path) -> None:
    world, log, saved = crash_first_process(tmp_path)
    flow, eng, _, _ = build(world, log, saved, crash=False)
    flow.kickoff(inputs={"id": STATE})
    again, eng2, _, _ = build(world, log, saved, crash=False)

    again.kickoff(inputs={"id": STATE})

    assert sorted(r.run_id for r in eng2.store.list_runs()) == [
        f"flow-{STATE}", f"flow-{STATE}-2"]


def test_a_state_whose_run_a_live_engine_holds_is_not_kicked_off_beside_it(
        tmp_path: Path) -> None:
    world, log, saved = tmp_path / "world.db", tmp_path / "rac.db", tmp_path / "flows.db"
    TravelWorld(str(world)).close()
    flow, eng, _, _ = build(world, log, saved, crash=False)
    with eng.run(run_id=f"flow-{STATE}"):  # another kickoff of the state, under way
        other, _, _, _ = build(world, log, saved, crash=False)
        with pytest.raises(rac.RACError, match="being worked on"):
            other.kickoff(inputs={"id": STATE})
    assert ledger(world) == []
