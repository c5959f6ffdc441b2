"""Orchestrations of several agents as one transaction: an explicit run around the
orchestration (its runtime started inside the run) gives one log with each agent's name."""

from __future__ import annotations

from collections.abc import Callable

from semantic_kernel.agents import (
    GroupChatOrchestration,
    HandoffOrchestration,
    OrchestrationHandoffs,
    RoundRobinGroupChatManager,
    SequentialOrchestration,
)
from semantic_kernel.agents.runtime import InProcessRuntime
from structlog.testing import capture_logs

import rac
from rac.models import RecordKind
from rac.testing import TravelWorld
from rac_semantic_kernel import enable_rac
from rac_semantic_kernel.testing import Call
from tests.adapters.semantic_kernel.support import FLIGHT, HOTEL, travel_kernel, trip_agent


async def test_sequential_orchestration_is_one_run_and_a_late_failure_undoes_the_first_agent(
        world: TravelWorld, make_engine: Callable[..., rac.RAC]) -> None:
    engine = make_engine()
    world.fail("book_hotel", "permanent", message="hotel full")
    flights, _ = trip_agent(travel_kernel(world), [[FLIGHT], "Flight booked."], name="flights")
    hotels, hotel_model = trip_agent(travel_kernel(world), [[HOTEL], "No hotel; all undone."],
                                     name="hotels")
    for agent in (flights, hotels):
        enable_rac(agent, rac=engine)
    orchestration = SequentialOrchestration(members=[flights, hotels])

    async with engine.run(agent_id="trip") as run:
        runtime = InProcessRuntime()
        runtime.start()  # inside the run: the agents' tasks inherit it
        try:
            result = await orchestration.invoke(task="Paris trip", runtime=runtime)
            final = await result.get(timeout=60)
        finally:
            await runtime.stop_when_idle()

    assert "No hotel; all undone." in str(final)
    assert world.live() == []
    assert [t for t, _, e in world.ledger() if e == "cancel"] == ["cancel_flight"]
    assert "Undone, newest first: travel-book_flight" in hotel_model.tool_results(-1)[-1]
    assert [i.run_id for i in engine.store.list_runs()] == [run.run_id]  # one log
    actions = [(r.tool, r.agent_id) for r in engine.store.get_records(run.run_id)
               if r.kind is RecordKind.ACTION]
    assert actions == [("travel-book_flight", "flights"), ("travel-book_hotel", "hotels")]
    assert run.status is rac.RunStatus.COMPENSATED


async def test_handoff_orchestration_passes_handoffs_through_and_is_one_transaction(
        world: TravelWorld, make_engine: Callable[..., rac.RAC]) -> None:
    engine = make_engine()
    world.fail("book_hotel", "permanent", message="hotel full")
    flights, flights_model = trip_agent(
        travel_kernel(world), [[FLIGHT], [Call("Handoff", "transfer_to_hotels", {})]],
        name="flights")
    hotels, hotel_model = trip_agent(travel_kernel(world), [[HOTEL], "No hotel; all undone."],
                                     name="hotels")
    for agent in (flights, hotels):
        enable_rac(agent, rac=engine)
    handoffs = OrchestrationHandoffs().add(source_agent=flights.name, target_agent=hotels.name,
                                           description="Books the hotel.")
    orchestration = HandoffOrchestration(members=[flights, hotels], handoffs=handoffs)

    async with engine.run(agent_id="trip") as run:
        runtime = InProcessRuntime()
        runtime.start()
        try:
            result = await orchestration.invoke(task="Paris trip", runtime=runtime)
            await result.get(timeout=60)
        finally:
            await runtime.stop_when_idle()

    assert world.live() == []
    assert [t for t, _, e in world.ledger() if e == "cancel"] == ["cancel_flight"]
    assert "Undone, newest first: travel-book_flight" in hotel_model.tool_results(-1)[-1]
    actions = [(r.tool, r.agent_id) for r in engine.store.get_records(run.run_id)
               if r.kind is RecordKind.ACTION]
    assert actions == [("travel-book_flight", "flights"), ("travel-book_hotel", "hotels")]
    # The hand-off itself went straight through: not logged, and it ended the flights turn.
    assert not any("Handoff" in r.tool or "transfer" in r.tool
                   for r in engine.store.get_records(run.run_id))
    assert len(flights_model.received) == 2


async def test_group_chat_orchestration_is_one_transaction(
        world: TravelWorld, make_engine: Callable[..., rac.RAC]) -> None:
    engine = make_engine()
    world.fail("book_hotel", "permanent", message="hotel full")
    flights, _ = trip_agent(travel_kernel(world), [[FLIGHT], "Flight booked."], name="flights")
    hotels, hotel_model = trip_agent(travel_kernel(world), [[HOTEL], "No hotel; all undone."],
                                     name="hotels")
    for agent in (flights, hotels):
        enable_rac(agent, rac=engine)
    orchestration = GroupChatOrchestration(members=[flights, hotels],
                                           manager=RoundRobinGroupChatManager(max_rounds=2))

    async with engine.run(agent_id="trip") as run:
        runtime = InProcessRuntime()
        runtime.start()
        try:
            result = await orchestration.invoke(task="Paris trip", runtime=runtime)
            await result.get(timeout=60)
        finally:
            await runtime.stop_when_idle()

    assert world.live() == []
    assert "Undone, newest first: travel-book_flight" in hotel_model.tool_results(-1)[-1]
    actions = [(r.tool, r.agent_id) for r in engine.store.get_records(run.run_id)
               if r.kind is RecordKind.ACTION]
    assert actions == [("travel-book_flight", "flights"), ("travel-book_hotel", "hotels")]


async def test_a_runtime_started_before_the_run_is_detected_and_its_calls_refused(
        world: TravelWorld, make_engine: Callable[..., rac.RAC]) -> None:
    """The runtime's tasks cannot see a run opened after it started: their calls would be
    runs of their own, and a later failure would undo none of them while the failing agent
    was told nothing else needed undoing. RAC refuses such calls instead (nothing runs), tells
    the model why and logs an error naming the fix."""
    engine = make_engine()
    flights, flight_model = trip_agent(travel_kernel(world), [[FLIGHT], "No flight."],
                                       name="flights")
    hotels, _ = trip_agent(travel_kernel(world), [[HOTEL], "No hotel."], name="hotels")
    for agent in (flights, hotels):
        enable_rac(agent, rac=engine)
    runtime = InProcessRuntime()
    runtime.start()  # before the run: the mistake
    try:
        with capture_logs() as logs:
            async with engine.run(agent_id="trip") as run:
                result = await SequentialOrchestration(members=[flights, hotels]).invoke(
                    task="Paris trip", runtime=runtime)
                await result.get(timeout=60)
    finally:
        await runtime.stop_when_idle()

    assert world.calls.get("book_flight", 0) == 0 and world.calls.get("book_hotel", 0) == 0
    told = flight_model.tool_results(-1)[-1]
    assert told.startswith("RAC: not run: travel-book_flight was asked for by an agent of an "
                           "orchestration whose runtime was started outside a RAC run"), told
    assert run.records() == []
    assert any("inside `async with engine.run()`" in str(e.get("error")) for e in logs), logs
