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
from rac.testing import TRAVEL_COMPENSATIONS, TravelWorld, VirtualClock
from rac_crewai import CrewAIPlugin
from rac_crewai.testing import world_tools
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
        with pytest.raises(rac.RACError, match="cannot be carried on here"):
            other.kickoff(inputs={"id": STATE})
    assert ledger(world) == []


def test_a_state_whose_crashed_run_was_recovered_tells_the_agent_first(tmp_path: Path) -> None:
    # `rac recover` at start-up undid what the crashed process booked; the Flow is then kicked
    # off on the same state: a run of its own, whose first call hears what was undone.
    world, log, saved = crash_first_process(tmp_path)
    # At start-up, before any crew: an engine on the log that RAC can call the crews' tools
    # through (offered to the engine, not to a model), as docs/crewai.md says.
    recovering = rac.RAC(compensations=TRAVEL_COMPENSATIONS, store=f"sqlite:///{log}",
                         tools=world_tools(TravelWorld(str(world))),
                         plugins=[CrewAIPlugin()], clock=VirtualClock(), load_entrypoints=False)
    [recovered] = recovering.recover()
    assert recovered.run_id == f"flow-{STATE}" and recovered.status is RunStatus.COMPENSATED
    recovering.close()
    flow, eng, f_llm, _ = build(world, log, saved, crash=False)

    flow.kickoff(inputs={"id": STATE})

    [first] = told(f_llm, "book_flight")
    assert f"run flow-{STATE} ended compensated" in first and "book_flight FL-101" in first
    assert "Not run: book_flight" in first
    assert ledger(world) == [("book_flight", "book"), ("cancel_flight", "cancel"),
                             ("book_hotel", "book")]
    assert sorted(r.run_id for r in eng.store.list_runs()) == [
        f"flow-{STATE}", f"flow-{STATE}-2"]
