"""A Flow paused for a person's feedback (CrewAI's ``@human_feedback`` with a provider that
raises ``HumanFeedbackPending``), restored with ``Flow.from_pending`` and resumed: the resumed
methods' crews carry on the paused kickoff's run, and when that run was undone meanwhile, the
agent hears it before anything runs."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from crewai import Agent, Crew, Task
from crewai.flow.async_feedback import HumanFeedbackPending
from crewai.flow.flow import Flow, listen, start
from crewai.flow.human_feedback import human_feedback
from crewai.flow.persistence import SQLiteFlowPersistence, persist

import rac
from rac.models import RecordKind, RecordStatus, RunStatus
from rac.testing import TRAVEL_COMPENSATIONS, TravelWorld
from rac_crewai import enable_rac
from rac_crewai.testing import WaitForApproval
from tests.adapters.crewai.support import ScriptedLLM, engine, told, world_tools

STATE = "trip-ann"
PAR = {"passenger": "ann", "origin": "SFO", "dest": "PAR"}
CAR = {"driver": "ann", "city": "PAR", "days": 2}
HOTEL = {"guest": "ann", "city": "PAR", "nights": 2}


def paused_flow(world: TravelWorld, saved: Path, first: ScriptedLLM, later: ScriptedLLM
                ) -> tuple[type[Flow[Any]], SQLiteFlowPersistence]:
    """A Flow whose first method books the flight and waits for the trip's approval; the
    method after the pause books the rest. Its crews are not enabled: the Flow's run adopts
    them."""
    def crew(llm: ScriptedLLM) -> Crew:
        agent = Agent(role="travel agent", goal="g", backstory="b", llm=llm,
                      tools=world_tools(world), max_iter=10)
        return Crew(agents=[agent], tasks=[Task(description="trip", expected_output="x",
                                                agent=agent)])

    persistence = SQLiteFlowPersistence(str(saved))

    @persist(persistence)
    class TripFlow(Flow):  # type: ignore[type-arg]
        @start()
        @human_feedback(message="Go on with the trip?", provider=WaitForApproval())
        def flight(self) -> str:
            return str(crew(first).kickoff().raw)

        @listen(flight)
        def rest(self) -> str:
            return str(crew(later).kickoff().raw)

    return TripFlow, persistence


def resume(flow: Flow[Any], how: str) -> Any:
    return flow.resume("go on") if how == "resume" else asyncio.run(flow.resume_async("go on"))


@pytest.mark.parametrize("how", ["resume", "resume_async"])
def test_the_resumed_methods_carry_on_the_paused_kickoffs_run(how: str, tmp_path: Path) -> None:
    world = TravelWorld()
    world.fail("book_hotel", "permanent", message="hotel full")
    first = ScriptedLLM([[("book_flight", PAR)], "flight booked; waiting"])
    later = ScriptedLLM([[("book_flight", PAR)], [("book_car", CAR)], [("book_hotel", HOTEL)],
                         "no hotel"])
    TripFlow, persistence = paused_flow(world, tmp_path / "flows.db", first, later)
    eng = engine()

    paused = enable_rac(TripFlow(), eng).kickoff(inputs={"id": STATE})
    assert isinstance(paused, HumanFeedbackPending)
    assert eng.store.get_run(f"flow-{STATE}").status is RunStatus.COMPLETED  # at the pause
    resume(enable_rac(TripFlow.from_pending(STATE, persistence), eng), how)

    # Before, the resumed crew ran in no run at all (the car stayed booked, unlogged), and
    # then in a run of its own, whose rollback said "the world is back" with the flight of
    # the paused kickoff live. One run now: the failure undoes both methods' bookings, and
    # the second flight, asked for after the pause, was booked (not answered from the log).
    [run] = eng.store.list_runs()
    assert run.run_id == f"flow-{STATE}" and run.status is RunStatus.COMPENSATED
    assert [(r.tool, r.kind, r.status) for r in eng.store.get_records(run.run_id)] == [
        ("book_flight", RecordKind.ACTION, RecordStatus.COMPENSATED),
        ("book_flight", RecordKind.ACTION, RecordStatus.COMPENSATED),
        ("book_car", RecordKind.ACTION, RecordStatus.COMPENSATED),
        ("book_hotel", RecordKind.ACTION, RecordStatus.FAILED),
        ("cancel_car", RecordKind.COMPENSATION, RecordStatus.COMPLETED),
        ("cancel_flight", RecordKind.COMPENSATION, RecordStatus.COMPLETED),
        ("cancel_flight", RecordKind.COMPENSATION, RecordStatus.COMPLETED)]
    assert world.calls["book_flight"] == 2 and world.live() == []
    [report] = told(later, "book_hotel")
    assert "book_flight FL-101" in report and "book_flight FL-102" in report, report
    assert "world is back" in report


@pytest.mark.parametrize("how", ["resume", "resume_async"])
def test_a_flow_resumed_after_its_run_was_undone_tells_the_agent_first(
        how: str, tmp_path: Path) -> None:
    world = TravelWorld()
    first = ScriptedLLM([[("book_flight", PAR)], "flight booked; waiting"])
    later = ScriptedLLM([[("book_car", CAR)], [("book_flight", PAR)], "booked again"])
    TripFlow, persistence = paused_flow(world, tmp_path / "flows.db", first, later)
    eng = engine()
    enable_rac(TripFlow(), eng).kickoff(inputs={"id": STATE})
    operator = rac.RAC(store=eng.store, compensations=TRAVEL_COMPENSATIONS,
                       tools=world.tools(), load_entrypoints=False)
    operator.undo(f"flow-{STATE}", why="trip called off", by="ops", unchecked=True)

    resume(enable_rac(TripFlow.from_pending(STATE, persistence), eng), how)

    [car] = told(later, "book_car")  # refused, with what the undo did
    assert "ended compensated" in car and "book_flight FL-101" in car, car
    assert world.calls.get("book_car", 0) == 0
    assert [(b["booking_id"], b["status"]) for b in world.bookings()] == [
        ("FL-101", "cancelled"), ("FL-102", "live")]  # booked again, knowingly
    assert eng.store.get_run(f"flow-{STATE}-2").status is RunStatus.COMPLETED
