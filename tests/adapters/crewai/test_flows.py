"""Flows: the crews of a Flow kicked off inside one RAC run are one transaction."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from crewai import Agent, Crew, Task
from crewai.flow.flow import Flow, listen, start

import rac
from rac.models import RecordStatus, RunStatus
from rac.testing import TravelWorld, assert_compensated_once
from rac_crewai import CrewRefused, enable_rac
from tests.adapters.crewai.support import ScriptedLLM, engine, runs_of, told, world_tools

PAR = {"passenger": "ann", "origin": "SFO", "dest": "PAR"}
HOTEL = {"guest": "ann", "city": "PAR", "nights": 2}


def crew_of(world: TravelWorld, eng: rac.RAC | None, llm: ScriptedLLM, role: str,
            *names: str) -> Crew:
    agent = Agent(role=role, goal="g", backstory="b", llm=llm,
                  tools=world_tools(world, *names))
    crew = Crew(agents=[agent], tasks=[Task(description=f"{role}: book", expected_output="x",
                                            agent=agent)])
    return enable_rac(crew, eng) if eng is not None else crew


class TripFlow(Flow):  # type: ignore[type-arg]
    """Flights first, then the hotel: two crews, each with its own tools."""

    def __init__(self, flights: Crew, hotels: Crew, **kw: Any) -> None:
        super().__init__(**kw)
        self.flights_crew = flights
        self.hotels_crew = hotels

    @start()
    def flights(self) -> str:
        return str(self.flights_crew.kickoff().raw)

    @listen(flights)
    def hotels(self, flight: str) -> str:
        return str(self.hotels_crew.kickoff().raw)


def trip(world: TravelWorld, eng: rac.RAC) -> tuple[TripFlow, ScriptedLLM, ScriptedLLM]:
    f_llm = ScriptedLLM([[("book_flight", PAR)], "flight booked"])
    h_llm = ScriptedLLM([[("book_hotel", HOTEL)], "no hotel; the flight was cancelled"])
    flow = TripFlow(crew_of(world, eng, f_llm, "flights agent", "book_flight", "cancel_flight"),
                    crew_of(world, eng, h_llm, "hotels agent", "book_hotel", "cancel_hotel"))
    return flow, f_llm, h_llm


def check_hotel_failure_undid_the_flight(world: TravelWorld, eng: rac.RAC,
                                         h_llm: ScriptedLLM) -> None:
    assert world.live() == []
    assert_compensated_once(world)
    report = told(h_llm, "book_hotel")[0]
    assert "hotel full" in report and "via cancel_flight" in report
    assert "STILL LIVE" not in report
    [run] = runs_of(eng)  # both crews in the one run
    records = eng.store.get_records(run.run_id)
    assert [(r.tool, r.agent_id) for r in records] == [
        ("book_flight", "flights agent"), ("book_hotel", "hotels agent"),
        ("cancel_flight", "flights agent")]
    assert records[0].status is RecordStatus.COMPENSATED
    assert run.status is RunStatus.COMPENSATED


def test_flow_in_one_run_a_later_crews_failure_undoes_the_earlier_crews_booking() -> None:
    world = TravelWorld()
    world.fail("book_hotel", "permanent", message="hotel full")
    eng = engine()
    flow, _, h_llm = trip(world, eng)

    with eng.run(agent_id="trip"):
        flow.kickoff()

    check_hotel_failure_undid_the_flight(world, eng, h_llm)


def test_async_flow_in_one_run_a_later_crews_failure_undoes_the_earlier_crews_booking(
) -> None:
    world = TravelWorld()
    world.fail("book_hotel", "permanent", message="hotel full")
    eng = engine()
    flow, _, h_llm = trip(world, eng)

    async def main() -> None:
        async with eng.run(agent_id="trip"):
            await flow.kickoff_async()

    asyncio.run(main())

    check_hotel_failure_undid_the_flight(world, eng, h_llm)


def test_flow_that_raises_after_both_crews_undoes_both() -> None:
    world = TravelWorld()
    eng = engine()
    f_llm = ScriptedLLM([[("book_flight", PAR)], "flight booked"])
    h_llm = ScriptedLLM([[("book_hotel", HOTEL)], "hotel booked"])

    class PaymentFlow(Flow):  # type: ignore[type-arg]
        @start()
        def flights(self) -> str:
            return str(flights_crew.kickoff().raw)

        @listen(flights)
        def hotels(self, flight: str) -> str:
            return str(hotels_crew.kickoff().raw)

        @listen(hotels)
        def pay(self, hotel: str) -> str:
            raise RuntimeError("card declined")

    flights_crew = crew_of(world, eng, f_llm, "flights agent", "book_flight", "cancel_flight")
    hotels_crew = crew_of(world, eng, h_llm, "hotels agent", "book_hotel", "cancel_hotel")
    flow = PaymentFlow()

    with pytest.raises(RuntimeError, match="card declined"), eng.run(agent_id="trip"):
        flow.kickoff()

    assert world.live() == []
    assert_compensated_once(world)
    [run] = runs_of(eng)
    assert run.status is RunStatus.COMPENSATED


def fly(world: TravelWorld, llm: ScriptedLLM) -> str:
    """A Flow method's work: a plain flights crew built and kicked off in the method."""
    crew = crew_of(world, None, llm, "flights agent", "book_flight", "cancel_flight")
    return str(crew.kickoff().raw)


class PlainTripFlow(Flow):  # type: ignore[type-arg]
    """A Flow building plain crews inside its methods, as a CrewAI user writes it."""

    def __init__(self, world: TravelWorld, f_llm: ScriptedLLM, h_llm: ScriptedLLM,
                 **kw: Any) -> None:
        super().__init__(**kw)
        self.world, self.f_llm, self.h_llm = world, f_llm, h_llm

    @start()
    def flights(self) -> str:
        return fly(self.world, self.f_llm)

    @listen(flights)
    def hotels(self, flight: str) -> str:
        crew = crew_of(self.world, None, self.h_llm, "hotels agent", "book_hotel",
                       "cancel_hotel")
        return str(crew.kickoff().raw)


def plain_trip(world: TravelWorld) -> tuple[PlainTripFlow, ScriptedLLM]:
    f_llm = ScriptedLLM([[("book_flight", PAR)], "flight booked"])
    h_llm = ScriptedLLM([[("book_hotel", HOTEL)], "no hotel; the flight was cancelled"])
    return PlainTripFlow(world, f_llm, h_llm), h_llm


def test_enabled_flow_is_one_run_covering_the_crews_its_methods_build() -> None:
    world = TravelWorld()
    world.fail("book_hotel", "permanent", message="hotel full")
    eng = engine()
    flow, h_llm = plain_trip(world)
    assert enable_rac(flow, eng) is flow

    flow.kickoff()

    check_hotel_failure_undid_the_flight(world, eng, h_llm)


def test_enabled_flow_async_kickoff_is_one_run() -> None:
    world = TravelWorld()
    world.fail("book_hotel", "permanent", message="hotel full")
    eng = engine()
    flow, h_llm = plain_trip(world)
    enable_rac(flow, eng)

    asyncio.run(flow.kickoff_async())

    check_hotel_failure_undid_the_flight(world, eng, h_llm)


def test_enabled_flow_that_succeeds_completes_one_run_with_both_bookings() -> None:
    world = TravelWorld()
    eng = engine()
    flow, _ = plain_trip(world)
    enable_rac(flow, eng)

    flow.kickoff()
    flow.kickoff()  # a second kickoff is a run of its own

    runs = runs_of(eng)
    assert [r.status for r in runs] == [RunStatus.COMPLETED] * 2
    assert [r.tool for r in eng.store.get_records(runs[0].run_id)] == [
        "book_flight", "book_hotel"]


def test_crew_that_cannot_be_guarded_stops_the_flow_and_its_run_is_rolled_back() -> None:
    # The hotels crew, built inside the Flow, lacks the compensator the engine declares for
    # book_hotel: it is refused before any of its calls, and the flight already booked by the
    # first crew is undone (a refusal is a failure, not CrewAI's control flow).
    world = TravelWorld()
    f_llm = ScriptedLLM([[("book_flight", PAR)], "flight booked"])
    h_llm = ScriptedLLM([[("book_hotel", HOTEL)], "hotel booked"])

    class UnguardableFlow(Flow):  # type: ignore[type-arg]
        @start()
        def flights(self) -> str:
            crew = crew_of(world, None, f_llm, "flights agent", "book_flight", "cancel_flight")
            return str(crew.kickoff().raw)

        @listen(flights)
        def hotels(self, flight: str) -> str:
            crew = crew_of(world, None, h_llm, "hotels agent", "book_hotel")
            return str(crew.kickoff().raw)

    eng = engine()
    flow = enable_rac(UnguardableFlow(), eng)

    with pytest.raises(CrewRefused, match=r"cancel_hotel") as refused:
        flow.kickoff()

    assert "RAC cannot guard crew" in str(refused.value)
    assert world.calls.get("book_hotel", 0) == 0 and h_llm.calls == 0
    assert world.live() == []
    assert ("cancel_flight", "FL-101", "cancel") in world.ledger()
    [run] = runs_of(eng)
    assert run.status is RunStatus.COMPENSATED
    assert [r.tool for r in eng.store.get_records(run.run_id)] == ["book_flight",
                                                                   "cancel_flight"]


CAR = {"driver": "ann", "city": "PAR"}


class ScopedTripFlow(Flow):  # type: ignore[type-arg]
    """Flights, then the hotel and a car (one crew), then a summary."""

    def __init__(self, world: TravelWorld, h_llm: ScriptedLLM, *, raise_after: bool = False,
                 **kw: Any) -> None:
        super().__init__(**kw)
        self.world, self.h_llm, self.raise_after = world, h_llm, raise_after
        self.f_llm = ScriptedLLM([[("book_flight", PAR)], "flight booked"])
        self.summaries: list[str] = []

    @start()
    def flights(self) -> str:
        return fly(self.world, self.f_llm)

    @listen(flights)
    def stay(self, flight: str) -> str:
        crew = crew_of(self.world, None, self.h_llm, "stay agent", "book_car", "cancel_car",
                       "book_hotel", "cancel_hotel")
        out = str(crew.kickoff().raw)
        if self.raise_after:
            raise RuntimeError("the stay is over budget")
        return out

    @listen(stay)
    def summary(self, stay: str) -> str:
        self.summaries.append(stay)
        return stay


def test_method_scopes_a_failed_listener_undoes_only_itself() -> None:
    world = TravelWorld()
    world.fail("book_hotel", "permanent", message="hotel full")
    h_llm = ScriptedLLM([[("book_car", CAR)], [("book_hotel", HOTEL)], "no stay; car returned"])
    eng = engine()
    flow = enable_rac(ScopedTripFlow(world, h_llm), eng, method_scopes=True)

    flow.kickoff()

    assert [b["kind"] for b in world.live()] == ["flight"]  # the first method's effect stands
    assert [(t, e) for t, _, e in world.ledger()] == [
        ("book_flight", "book"), ("book_car", "book"), ("cancel_car", "cancel")]
    report = told(h_llm, "book_hotel")[0]
    assert "hotel full" in report and "via cancel_car" in report
    assert "book_flight" not in report
    assert flow.summaries == ["no stay; car returned"]  # the Flow went on
    [run] = runs_of(eng)
    statuses = {r.tool: r.status for r in eng.store.get_records(run.run_id)}
    assert statuses["book_flight"] is RecordStatus.COMPLETED
    assert statuses["book_car"] is RecordStatus.COMPENSATED


def test_method_scopes_a_raising_method_undoes_its_own_effects_only() -> None:
    world = TravelWorld()
    h_llm = ScriptedLLM([[("book_car", CAR)], [("book_hotel", HOTEL)], "stay booked"])
    eng = engine()
    flow = enable_rac(ScopedTripFlow(world, h_llm, raise_after=True), eng, method_scopes=True)

    with pytest.raises(RuntimeError, match="over budget"):
        flow.kickoff()

    assert [b["kind"] for b in world.live()] == ["flight"]
    assert {t for t, _, e in world.ledger() if e == "cancel"} == {"cancel_car", "cancel_hotel"}
    assert flow.summaries == []
    [run] = runs_of(eng)
    statuses = {r.tool: r.status for r in eng.store.get_records(run.run_id)}
    assert statuses == {"book_flight": RecordStatus.COMPLETED,
                        "book_car": RecordStatus.COMPENSATED,
                        "book_hotel": RecordStatus.COMPENSATED,
                        "cancel_hotel": RecordStatus.COMPLETED,
                        "cancel_car": RecordStatus.COMPLETED}


def test_without_method_scopes_the_same_raise_undoes_the_whole_flow() -> None:
    world = TravelWorld()
    h_llm = ScriptedLLM([[("book_car", CAR)], [("book_hotel", HOTEL)], "stay booked"])
    eng = engine()
    flow = enable_rac(ScopedTripFlow(world, h_llm, raise_after=True), eng)

    with pytest.raises(RuntimeError, match="over budget"):
        flow.kickoff()

    assert world.live() == []
    assert_compensated_once(world)
