"""A trip-booking crew under RAC: rollback and replan, retries, alternatives, akickoff."""

from __future__ import annotations

from typing import Any

from crewai import Agent, Crew, Task

from rac.models import RecordKind, RecordStatus, RunStatus
from rac.testing import TravelWorld, assert_compensated_once, assert_rollback_order
from rac_crewai import enable_rac
from tests.adapters.crewai.support import (
    ScriptedLLM,
    engine,
    last_tool_result,
    runs_of,
    told,
    world_tools,
)

PAR = {"passenger": "ann", "origin": "SFO", "dest": "PAR"}
NCE = {"passenger": "ann", "origin": "SFO", "dest": "NCE"}


def trip_crew(world: TravelWorld, script: list[Any], **crew_kw: Any) -> tuple[Crew, ScriptedLLM]:
    llm = ScriptedLLM(script)
    agent = Agent(role="travel agent", goal="book trips", backstory="careful", llm=llm,
                  tools=world_tools(world), max_iter=10)
    task = Task(description="Book a trip for ann", expected_output="the bookings", agent=agent)
    return Crew(agents=[agent], tasks=[task], **crew_kw), llm


def replan_if_rolled_back(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    report = last_tool_result(messages)
    assert "Undone, newest first" in report, report
    return [("book_flight", NCE)]


def test_car_fails_hotel_then_flight_cancelled_and_replan_completes() -> None:
    world = TravelWorld()
    world.fail("book_car", "permanent", message="no cars left in PAR",
               when=lambda a: a["city"] == "PAR")
    crew, llm = trip_crew(world, [
        [("book_flight", PAR)],
        [("book_hotel", {"guest": "ann", "city": "PAR", "nights": 3})],
        [("book_car", {"driver": "ann", "city": "PAR"})],
        replan_if_rolled_back,
        [("book_hotel", {"guest": "ann", "city": "NCE", "nights": 3})],
        [("book_car", {"driver": "ann", "city": "NCE"})],
        "Trip booked to NCE",
    ])
    eng = engine()
    enable_rac(crew, eng)

    out = crew.kickoff()

    assert out.raw == "Trip booked to NCE"
    # The world: the PAR bookings are cancelled, the NCE trip is live.
    assert sorted((b["kind"], b["place"]) for b in world.live()) == [
        ("car", "NCE"), ("flight", "NCE"), ("hotel", "NCE")]
    assert_compensated_once(world)
    assert [e for e in world.ledger() if e[2] == "cancel"] == [
        ("cancel_hotel", "HT-102", "cancel"), ("cancel_flight", "FL-101", "cancel")]
    # What the agent was told: the recovery report, as the car's result.
    report = told(llm, "book_car")[0]
    assert "book_car failed (permanent: no cars left in PAR)" in report
    assert "book_hotel" in report and "via cancel_hotel" in report and "via cancel_flight" in report
    assert "FL-" in told(llm, "book_flight")[-1]
    # The log: one run for the kickoff, newest-first rollback, agent id = role.
    [run] = runs_of(eng)
    assert run.status is RunStatus.COMPLETED
    records = eng.store.get_records(run.run_id)
    assert_rollback_order(records, ["book_hotel", "book_flight"])
    actions = [r for r in records if r.kind is RecordKind.ACTION]
    assert [(r.tool, r.status) for r in actions] == [
        ("book_flight", RecordStatus.COMPENSATED), ("book_hotel", RecordStatus.COMPENSATED),
        ("book_car", RecordStatus.FAILED), ("book_flight", RecordStatus.COMPLETED),
        ("book_hotel", RecordStatus.COMPLETED), ("book_car", RecordStatus.COMPLETED)]
    assert {r.agent_id for r in records} == {"travel agent"}


def test_transient_failures_retried_exactly_within_max_attempts() -> None:
    world = TravelWorld()
    world.fail("book_flight", "transient", times=2, message="gateway timeout")
    world.fail("book_hotel", "transient", message="hotel system busy")
    crew, llm = trip_crew(world, [
        [("book_flight", PAR)],
        [("book_hotel", {"guest": "ann", "city": "PAR", "nights": 2})],
        "Could not book the hotel",
    ])
    eng = engine()
    enable_rac(crew, eng)

    crew.kickoff()

    # Two transient failures then success: three calls; the hotel never recovers: exactly three.
    assert world.calls["book_flight"] == 3
    assert world.calls["book_hotel"] == 3
    assert eng.clock.sleeps == [1.0, 2.0, 1.0, 2.0]  # type: ignore[attr-defined]
    assert world.live() == []
    [run] = runs_of(eng)
    records = eng.store.get_records(run.run_id)
    assert [(r.tool, r.attempts, r.status) for r in records] == [
        ("book_flight", 3, RecordStatus.COMPENSATED),
        ("book_hotel", 3, RecordStatus.FAILED),
        ("cancel_flight", 1, RecordStatus.COMPLETED)]
    assert "FL-101" in told(llm, "book_flight")[0]
    report = told(llm, "book_hotel")[0]
    assert "transient: hotel system busy) after 3 attempts" in report
    assert "book_flight" in report and "via cancel_flight" in report


def test_alternative_used_then_compensated_with_its_own_compensator() -> None:
    world = TravelWorld()
    world.fail("book_car", "permanent", message="no cars")
    world.fail("book_hotel", "permanent", message="hotel full")
    crew, llm = trip_crew(world, [
        [("book_flight", PAR)],
        [("book_car", {"driver": "ann", "city": "PAR"})],
        [("book_hotel", {"guest": "ann", "city": "PAR", "nights": 1})],
        "No hotel available",
    ])
    eng = engine(alternatives={"book_car": ["rent_car"]})
    enable_rac(crew, eng)

    crew.kickoff()

    assert "'detail': 'partner'" in told(llm, "book_car")[0]  # the rental's result
    assert world.live() == []
    assert ("return_rental", "CR-102", "cancel") in world.ledger()
    assert not any(e[0] == "cancel_car" for e in world.ledger())
    [run] = runs_of(eng)
    records = eng.store.get_records(run.run_id)
    assert_rollback_order(records, ["rent_car", "book_flight"])
    comps = [r.tool for r in records if r.kind is RecordKind.COMPENSATION]
    assert comps == ["return_rental", "cancel_flight"]
    assert "rent_car" in told(llm, "book_hotel")[0]


async def test_akickoff_rolls_back_and_reports() -> None:
    world = TravelWorld()
    world.fail("book_car", "permanent", message="no cars left")
    crew, llm = trip_crew(world, [
        [("book_flight", PAR)],
        [("book_hotel", {"guest": "ann", "city": "PAR", "nights": 3})],
        [("book_car", {"driver": "ann", "city": "PAR"})],
        "Could not book a car; nothing is booked",
    ])
    eng = engine()
    enable_rac(crew, eng)

    out = await crew.akickoff()

    assert out.raw == "Could not book a car; nothing is booked"
    assert world.live() == []
    assert "Undone, newest first" in told(llm, "book_car")[0]
    [run] = runs_of(eng)
    assert run.status is RunStatus.COMPENSATED
    assert_rollback_order(eng.store.get_records(run.run_id), ["book_hotel", "book_flight"])
