"""Several agents, one log: cross-agent rollback, parallel calls, hierarchical crews."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from crewai import Agent, Crew, Process, Task
from crewai.hooks.dispatch import InterceptionPoint, scoped_hooks

import rac
from rac.models import Record, RecordKind, RecordStatus, RunStatus
from rac.testing import TravelWorld, assert_compensated_once, assert_rollback_order
from rac_crewai import enable_rac, enable_rac_for_agent
from tests.adapters.crewai.support import ScriptedLLM, engine, runs_of, told, world_tools

PAR = {"passenger": "ann", "origin": "SFO", "dest": "PAR"}
HOTEL = {"guest": "ann", "city": "PAR", "nights": 2}
#: Seconds a thread waits for another to reach a point. Only a safety net against a hang (the
#: events normally fire at once): generous, since a loaded machine may not run a thread for
#: seconds, and every wait that runs out is recorded and fails the test by name.
WAIT = 60.0


def flights_and_hotels(world: TravelWorld, flights: list[Any], hotels: list[Any],
                       **crew_kw: Any) -> tuple[Crew, ScriptedLLM, ScriptedLLM]:
    f_llm, h_llm = ScriptedLLM(flights), ScriptedLLM(hotels)
    flights_agent = Agent(role="flights agent", goal="book flights", backstory="b", llm=f_llm,
                          tools=world_tools(world, "book_flight", "cancel_flight"))
    hotels_agent = Agent(role="hotels agent", goal="book hotels", backstory="b", llm=h_llm,
                         tools=world_tools(world, "book_hotel", "cancel_hotel"))
    tasks = [Task(description="Book ann's flight", expected_output="flight", agent=flights_agent),
             Task(description="Book ann's hotel", expected_output="hotel", agent=hotels_agent)]
    if crew_kw.get("process") is Process.hierarchical:
        for t in tasks:
            t.agent = None
    crew = Crew(agents=[flights_agent, hotels_agent], tasks=tasks, **crew_kw)
    return crew, f_llm, h_llm


def test_second_agents_failure_compensates_first_agents_booking() -> None:
    world = TravelWorld()
    world.fail("book_hotel", "permanent", message="hotel full")
    crew, f_llm, h_llm = flights_and_hotels(
        world, [[("book_flight", PAR)], "flight FL-101 booked"],
        [[("book_hotel", HOTEL)], "no hotel; the flight was cancelled"])
    eng = engine()
    enable_rac(crew, eng)

    crew.kickoff()

    assert world.live() == []
    assert ("cancel_flight", "FL-101", "cancel") in world.ledger()
    assert "FL-101" in told(f_llm, "book_flight")[0]
    report = told(h_llm, "book_hotel")[0]
    assert "hotel full" in report and "via cancel_flight" in report
    [run] = runs_of(eng)  # one log, one run for the crew
    records = eng.store.get_records(run.run_id)
    assert [(r.tool, r.agent_id) for r in records] == [
        ("book_flight", "flights agent"), ("book_hotel", "hotels agent"),
        ("cancel_flight", "flights agent")]
    assert run.status is RunStatus.COMPENSATED


class Signals:
    """RAC plugin: events a test can wait on."""

    def __init__(self) -> None:
        self.flight_done = threading.Event()
        self.hotel_started = threading.Event()
        self.rollback_started = threading.Event()
        self.ordered: bool | None = None
        self.missed: list[str] = []  # the events a wait gave up on

    def wait(self, name: str) -> bool:
        """Wait for the event ``name`` (at most :data:`WAIT` s); False, and recorded, if it
        did not fire."""
        fired = bool(getattr(self, name).wait(WAIT))
        if not fired:
            self.missed.append(name)
        return fired

    @rac.hookimpl
    def rac_record_written(self, record: Record, previous: str | None) -> None:
        if record.tool == "book_flight" and record.status is RecordStatus.COMPLETED:
            self.flight_done.set()
        if record.tool == "book_hotel" and previous is None:
            self.hotel_started.set()

    def car_may_fail(self, args: dict[str, Any]) -> None:
        """Hold the car's failure until the flight is done and the hotel call has begun
        (``ordered`` says whether both happened in time)."""
        self.ordered = self.wait("flight_done") and self.wait("hotel_started")

    @rac.hookimpl
    def rac_rollback_started(self, run_id: str, scope: str, seqs: list[int],
                             reason: str) -> None:
        self.rollback_started.set()


def test_parallel_calls_one_failing_compensates_done_and_still_running_ones() -> None:
    world = TravelWorld()
    signals = Signals()
    # The car fails once the flight is done and the hotel has begun; the hotel is still running
    # when the rollback starts and completes after it (the waits only order the threads).
    world.on_call("book_car", signals.car_may_fail)
    world.on_call("book_hotel", lambda args: signals.wait("rollback_started"))
    world.fail("book_car", "permanent", message="no cars")
    llm = ScriptedLLM([
        [("book_flight", PAR), ("book_hotel", HOTEL), ("book_car", {"driver": "ann",
                                                                     "city": "PAR"})],
        "nothing booked",
    ])
    agent = Agent(role="travel agent", goal="g", backstory="b", llm=llm,
                  tools=world_tools(world))
    crew = Crew(agents=[agent], tasks=[Task(description="trip", expected_output="x",
                                            agent=agent)])
    eng = engine(plugins=[signals])
    enable_rac(crew, eng)

    crew.kickoff()

    assert signals.ordered and not signals.missed, (
        f"the threads did not reach the order this test needs in {WAIT:g} s: {signals.missed}")
    assert world.live() == []
    assert_compensated_once(world)
    assert "Still running, will be undone when it completes: book_hotel" in told(llm,
                                                                                "book_car")[0]
    assert "completed after this run was rolled back" in told(llm, "book_hotel")[0]
    assert "FL-" in told(llm, "book_flight")[0]
    [run] = runs_of(eng)
    records = eng.store.get_records(run.run_id)
    assert_rollback_order(records, ["book_flight", "book_hotel"])
    assert run.status is RunStatus.COMPENSATED


def test_hierarchical_crew_manager_delegates_and_coworker_rollback_spans_agents() -> None:
    world = TravelWorld()
    world.fail("book_hotel", "permanent", message="hotel full")

    def delegate(coworker: str, task: str) -> list[tuple[str, dict[str, Any]]]:
        return [("delegate_work_to_coworker",
                 {"task": task, "context": "ann travels SFO->PAR", "coworker": coworker})]

    manager = ScriptedLLM([delegate("flights agent", "book the flight"), "flight done",
                           delegate("hotels agent", "book the hotel"), "hotel failed"])
    crew, f_llm, h_llm = flights_and_hotels(
        world, [[("book_flight", PAR)], "FL-101"],
        [[("book_hotel", HOTEL)], "hotel full; flight cancelled"],
        process=Process.hierarchical, manager_llm=manager)
    eng = engine()
    enable_rac(crew, eng)

    crew.kickoff()

    assert world.live() == []
    assert "via cancel_flight" in told(h_llm, "book_hotel")[0]
    [run] = runs_of(eng)
    records = eng.store.get_records(run.run_id)
    actions = [(r.tool, r.agent_id) for r in records if r.kind is RecordKind.ACTION]
    assert actions == [("book_flight", "flights agent"), ("book_hotel", "hotels agent")]


class HeldHotelTrip:
    """A crew of one agent whose model asks for [flight, hotel, car] in one turn (``later``:
    its next answers). The car fails once the flight is done; the hotel call is held by a
    CrewAI hook (before RAC sees it) until the car's failure has started the rollback, so it
    begins after the rollback and must not run at all."""

    def __init__(self, later: list[Any], *, alone: bool = False) -> None:
        self.world = TravelWorld()
        self.signals = Signals()
        self.world.fail("book_car", "permanent", message="no cars")
        self.world.on_call("book_car", lambda args: self.signals.wait("flight_done"))
        self.llm = ScriptedLLM([
            [("book_flight", PAR), ("book_hotel", HOTEL), ("book_car", {"driver": "ann",
                                                                         "city": "PAR"})],
            *later])
        self.agent = Agent(role="travel agent", goal="g", backstory="b", llm=self.llm,
                           tools=world_tools(self.world))
        self.crew = Crew(agents=[self.agent], tasks=[Task(description="trip",
                                                          expected_output="x",
                                                          agent=self.agent)])
        self.eng = engine(plugins=[self.signals])
        if alone:  # the agent enabled by itself, in no enabled crew
            enable_rac_for_agent(self.agent, self.eng)
        else:
            enable_rac(self.crew, self.eng)

    def hold_hotel(self, context: Any) -> None:
        if context.tool_name == "book_hotel":
            assert self.signals.wait("rollback_started"), f"no rollback in {WAIT:g} s"

    def holding(self) -> Any:
        """The scope in which CrewAI holds the hotel call."""
        return scoped_hooks({InterceptionPoint.PRE_TOOL_CALL: [self.hold_hotel]})


def test_parallel_sibling_starting_after_the_rollback_began_is_refused() -> None:
    trip = HeldHotelTrip([[("book_hotel", HOTEL)],  # the next turn is a new batch: it runs
                          "the hotel alone is booked"])
    world, llm = trip.world, trip.llm

    with trip.holding():
        trip.crew.kickoff()

    assert not trip.signals.missed, f"waits that ran out ({WAIT:g} s): {trip.signals.missed}"
    assert world.calls["book_hotel"] == 1  # only the next turn's
    assert [b["kind"] for b in world.live()] == ["hotel"]
    assert ("cancel_flight", "FL-101", "cancel") in world.ledger()
    first_hotel, second_hotel = told(llm, "book_hotel")
    assert "not run: book_hotel was asked for in the same model turn" in first_hotel
    assert "HT-" in second_hotel
    assert "no cars" in told(llm, "book_car")[0]


@pytest.mark.parametrize("how", ["crew member", "enabled alone", "enabled alone, akickoff"])
def test_agent_kicked_off_alone_refuses_a_parallel_sibling_that_had_not_started(
        how: str) -> None:
    # The agent of an enabled crew used on its own, or an agent enabled by itself
    # (enable_rac_for_agent): its kickoff's parallel calls are one batch too (the hotel call,
    # held until the car's failure started the rollback, is refused rather than run, and the
    # agent is never told the world is back while the hotel is live).
    trip = HeldHotelTrip(["nothing booked"], alone=how != "crew member")
    world, llm, eng = trip.world, trip.llm, trip.eng

    with trip.holding():
        if how.endswith("akickoff"):
            asyncio.run(trip.agent.akickoff("Book ann's trip to Paris"))
        else:
            trip.agent.kickoff("Book ann's trip to Paris")

    assert not trip.signals.missed, f"waits that ran out ({WAIT:g} s): {trip.signals.missed}"
    assert world.calls.get("book_hotel", 0) == 0
    assert world.live() == []
    assert ("cancel_flight", "FL-101", "cancel") in world.ledger()
    [hotel] = told(llm, "book_hotel")
    assert "not run: book_hotel was asked for in the same model turn" in hotel
    [run] = runs_of(eng)
    assert run.status is RunStatus.COMPENSATED
    records = {r.tool: r for r in eng.store.get_records(run.run_id)}  # threads: any order
    assert {t: (r.kind, r.status, r.attempts) for t, r in records.items()} == {
        "book_flight": (RecordKind.ACTION, RecordStatus.COMPENSATED, 1),
        "book_car": (RecordKind.ACTION, RecordStatus.FAILED, 1),
        "cancel_flight": (RecordKind.COMPENSATION, RecordStatus.COMPLETED, 1),
        "book_hotel": (RecordKind.ACTION, RecordStatus.FAILED, 0)}  # refused: never attempted


class SideBySide:
    """A flights agent and a hotels agent whose work runs at once. The hotels agent books a
    car, then its hotel fails: the car is cancelled. The flights agent's booking is held by a
    hook until that rollback began, and must then be refused (``check``): it must not book into
    a world RAC reported back to how it was."""

    def __init__(self, *hotels_later: str) -> None:
        self.world, self.signals = TravelWorld(), Signals()
        self.world.fail("book_hotel", "permanent", message="hotel full")
        self.f_llm = ScriptedLLM([[("book_flight", PAR)], "no flight"])
        self.h_llm = ScriptedLLM([[("book_car", {"driver": "ann", "city": "PAR"})],
                                  [("book_hotel", HOTEL)], "hotel full; car cancelled",
                                  *hotels_later])
        self.flights = Agent(role="flights agent", goal="book flights", backstory="b",
                             llm=self.f_llm,
                             tools=world_tools(self.world, "book_flight", "cancel_flight"))
        self.hotels = Agent(role="hotels agent", goal="book hotels", backstory="b",
                            llm=self.h_llm, tools=world_tools(self.world, "book_hotel",
                                                              "cancel_hotel", "book_car",
                                                              "cancel_car"))
        self.eng = engine(plugins=[self.signals])

    def hold_flight(self, context: Any) -> None:
        if context.tool_name == "book_flight":
            self.signals.wait("rollback_started")

    def holding(self) -> Any:
        """The scope in which CrewAI holds the flight call."""
        return scoped_hooks({InterceptionPoint.PRE_TOOL_CALL: [self.hold_flight]})

    def check(self) -> None:
        assert not self.signals.missed, (
            f"waits that ran out ({WAIT:g} s): {self.signals.missed}")
        assert self.world.calls.get("book_flight", 0) == 0
        assert self.world.live() == []
        [flight] = told(self.f_llm, "book_flight")
        assert "not run" in flight and "world is back" not in flight
        assert "via cancel_car" in told(self.h_llm, "book_hotel")[0]
        [run] = runs_of(self.eng)
        assert run.status is RunStatus.COMPENSATED
        records = {r.tool: r for r in self.eng.store.get_records(run.run_id)}
        flight_record = records["book_flight"]
        assert (flight_record.status, flight_record.attempts, flight_record.agent_id) == (
            RecordStatus.FAILED, 0, "flights agent")


def test_a_managers_two_delegations_of_one_turn_are_one_batch() -> None:
    # The manager delegates the hotel and the flight in one model turn; CrewAI runs both
    # delegations at once.
    trip = SideBySide()

    def delegate(coworker: str, task: str) -> tuple[str, dict[str, Any]]:
        return ("delegate_work_to_coworker",
                {"task": task, "context": "ann travels SFO->PAR", "coworker": coworker})

    manager = ScriptedLLM([[delegate("hotels agent", "book the hotel"),
                            delegate("flights agent", "book the flight")], "done"])
    crew = Crew(agents=[trip.flights, trip.hotels],
                tasks=[Task(description="Book ann's trip", expected_output="x")],
                process=Process.hierarchical, manager_llm=manager)
    enable_rac(crew, trip.eng)

    with trip.holding():
        crew.kickoff()

    trip.check()


@pytest.mark.parametrize("kickoff", ["kickoff", "akickoff"])
def test_an_async_task_is_refused_a_call_after_another_tasks_rollback(kickoff: str) -> None:
    # Two async tasks run beside each other, then a summary task waits for them.
    trip = SideBySide("summary")
    tasks = [Task(description="Book ann's hotel", expected_output="x", agent=trip.hotels,
                  async_execution=True),
             Task(description="Book ann's flight", expected_output="x", agent=trip.flights,
                  async_execution=True),
             Task(description="Sum up", expected_output="x", agent=trip.hotels)]
    crew = Crew(agents=[trip.flights, trip.hotels], tasks=tasks)
    enable_rac(crew, trip.eng)

    with trip.holding():
        if kickoff == "akickoff":
            asyncio.run(crew.akickoff())
        else:
            crew.kickoff()

    trip.check()
