"""The tool shapes LlamaIndex users write, under RAC: async tools, tools taking the workflow's
Context, return_direct tools, parallel calls of one turn, and an explicit run around two
agent runs.

No ``from __future__ import annotations`` here: LlamaIndex finds a tool's ``Context`` parameter
by its annotation object, as it does in users' code."""

import threading
from typing import Any

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.tools import FunctionTool
from llama_index.core.workflow import Context

from rac.errors import PermanentError
from rac.models import RecordStatus, RunStatus
from rac.testing import TravelWorld
from rac_llamaindex import enable_rac, rac_run_of
from rac_llamaindex.testing import ScriptedModel
from tests.adapters.llamaindex.support import (
    PAR_CAR,
    PAR_FLIGHT,
    PAR_HOTEL,
    cancellations,
    engine,
    records_of,
    world_tools,
)


async def test_async_tools_are_compensated_by_async_compensators() -> None:
    world = TravelWorld()
    world.fail("book_hotel", "permanent", message="full")

    async def book_flight(passenger: str, origin: str, dest: str) -> dict[str, Any]:
        """Book a flight."""
        return world.book_flight(passenger, origin, dest)

    async def cancel_flight(booking_id: str) -> dict[str, Any]:
        """Cancel a flight."""
        return world.cancel_flight(booking_id)

    async def book_hotel(guest: str, city: str, nights: int) -> dict[str, Any]:
        """Book a hotel."""
        return world.book_hotel(guest, city, nights)

    model = ScriptedModel([[("book_flight", PAR_FLIGHT)], [("book_hotel", PAR_HOTEL)], "sorry"])
    agent = enable_rac(FunctionAgent(name="travel", llm=model.function_calling_llm(), tools=[
        book_flight, cancel_flight, book_hotel, world.cancel_hotel]), engine())

    handler = agent.run(user_msg="trip")
    await handler
    assert world.live() == []
    assert cancellations(world) == ["cancel_flight"]
    assert "Undone, newest first: book_flight FL-101" in model.inputs[2].tool_results()[-1]


async def test_tools_taking_the_context_get_it_and_keep_their_schema() -> None:
    world = TravelWorld()
    seen: list[Any] = []

    async def book_flight(ctx: Context, passenger: str, origin: str, dest: str) -> dict[str, Any]:
        """Book a flight and remember it in the workflow's state."""
        seen.append(ctx)
        booking = world.book_flight(passenger, origin, dest)
        await ctx.store.set("flight", booking["booking_id"])
        return booking

    async def cancel_flight(ctx: Context, booking_id: str) -> dict[str, Any]:
        """Cancel a flight."""
        seen.append(ctx)
        return world.cancel_flight(booking_id)

    world.fail("book_hotel", "permanent", message="full")
    model = ScriptedModel([[("book_flight", PAR_FLIGHT)], [("book_hotel", PAR_HOTEL)], "sorry"])
    tools = [FunctionTool.from_defaults(async_fn=book_flight),
             FunctionTool.from_defaults(async_fn=cancel_flight),
             *world_tools(world, ("book_hotel", "cancel_hotel"))]
    schema = tools[0].metadata.get_parameters_dict()
    agent = enable_rac(FunctionAgent(name="travel", llm=model.function_calling_llm(),
                                     tools=tools), engine())

    guarded = agent.tools[0]
    assert guarded.requires_context and guarded.ctx_param_name == "ctx"  # type: ignore[union-attr]
    assert guarded.metadata.get_parameters_dict() == schema
    assert "ctx" not in schema["properties"]

    handler = agent.run(user_msg="trip")
    await handler
    assert await handler.ctx.store.get("flight") == "FL-101"
    # The tool and its compensator (run during the hotel's call) both got the run's context.
    assert len(seen) == 2 and all(isinstance(c, Context) for c in seen)
    assert world.live() == []
    run = rac_run_of(handler)
    assert run is not None
    (flight,) = [r for r in run.records() if r.tool == "book_flight"]
    assert flight.args == PAR_FLIGHT  # the context is not logged


async def test_return_direct_tool_ends_the_run_only_when_it_succeeds() -> None:
    world = TravelWorld()
    world.fail("book_car", "permanent", message="no cars", times=1)
    model = ScriptedModel([[("book_flight", PAR_FLIGHT)], [("book_car", PAR_CAR)],
                           [("rent_car", PAR_CAR)]])
    tools = [*world_tools(world, ("book_flight", "cancel_flight", "cancel_car",
                                  "return_rental")),
             FunctionTool.from_defaults(fn=world.book_car, return_direct=True),
             FunctionTool.from_defaults(fn=world.rent_car, return_direct=True)]
    agent = enable_rac(FunctionAgent(name="travel", llm=model.function_calling_llm(),
                                     tools=tools), engine())
    assert [t.metadata.return_direct for t in agent.tools] == [False] * 4 + [True, True]

    handler = agent.run(user_msg="flight and a car")
    result = await handler
    # The failed return_direct call went back to the model (the report), which replanned; the
    # successful one ended the run with its own output.
    assert "Undone, newest first: book_flight FL-101" in model.inputs[2].tool_results()[-1]
    assert "'detail': 'partner'" in str(result)
    assert len(model.inputs) == 3
    assert [b["kind"] for b in world.live()] == ["car"]


async def test_parallel_calls_one_failing_undo_the_siblings_even_one_still_running() -> None:
    world = TravelWorld()
    world.fail("book_car", "permanent", message="no cars")
    rollback_began = threading.Event()
    world.on_call("cancel_flight", lambda args: rollback_began.set())
    # The hotel is still being booked when the rollback starts, and completes after it.
    world.on_call("book_hotel", lambda args: rollback_began.wait(timeout=60))
    model = ScriptedModel([
        [("book_flight", PAR_FLIGHT)],
        [("book_hotel", PAR_HOTEL), ("book_car", PAR_CAR)],
        "Nothing booked"])
    agent = enable_rac(FunctionAgent(name="travel", llm=model.function_calling_llm(),
                                     tools=world_tools(world)), engine())

    handler = agent.run(user_msg="trip")
    assert str(await handler) == "Nothing booked"

    assert rollback_began.is_set()
    assert world.live() == []
    assert sorted(cancellations(world)) == ["cancel_flight", "cancel_hotel"]
    # One result per call of the turn: the car's is the report; the hotel's says it was undone.
    results = model.inputs[2].tool_results()[-2:]
    assert len(results) == 2
    assert any(r.startswith("RAC: book_car failed") for r in results)
    run = rac_run_of(handler)
    assert run is not None and run.status is RunStatus.COMPENSATED
    assert sorted(t for t, _, s in records_of(run) if s == "compensated") == [
        "book_flight", "book_hotel"]


async def test_a_sibling_starting_after_the_rollback_began_is_refused_never_run() -> None:
    world = TravelWorld()

    async def book_car(driver: str, city: str) -> dict[str, Any]:
        """Book a car (the desk is closed: fails at once, before the hotel's call starts)."""
        raise PermanentError("no cars left")

    async def book_hotel(guest: str, city: str, nights: int) -> dict[str, Any]:
        """Book a hotel."""
        return world.book_hotel(guest, city, nights)

    model = ScriptedModel([[("book_flight", PAR_FLIGHT)],
                           [("book_car", PAR_CAR), ("book_hotel", PAR_HOTEL)],
                           [("book_hotel", PAR_HOTEL)], "Hotel booked, no car"])
    agent = enable_rac(FunctionAgent(name="travel", llm=model.function_calling_llm(), tools=[
        *world_tools(world, ("book_flight", "cancel_flight", "cancel_hotel", "cancel_car")),
        FunctionTool.from_defaults(async_fn=book_car),
        FunctionTool.from_defaults(async_fn=book_hotel)]), engine())

    handler = agent.run(user_msg="trip")
    await handler

    # The hotel was asked for in the car's turn: refused once the car's rollback began. Asked
    # for again in the next turn, it is booked.
    told = sorted(model.inputs[2].tool_results()[-2:])
    assert told[0].startswith("RAC: book_car failed (permanent: no cars left)")
    assert told[1].startswith("not run: book_hotel was asked for in the same model turn")
    assert world.calls.get("book_hotel") == 1
    assert [b["kind"] for b in world.live()] == ["hotel"]
    run = rac_run_of(handler)
    assert run is not None
    hotels = [r.status for r in run.records() if r.tool == "book_hotel"]
    assert hotels == [RecordStatus.FAILED, RecordStatus.COMPLETED]


async def test_explicit_run_around_two_agent_runs_is_one_transaction() -> None:
    world = TravelWorld()
    world.fail("book_car", "permanent", message="no cars")
    shared = engine()
    flights = ScriptedModel([[("book_flight", PAR_FLIGHT)], "flight booked"])
    cars = ScriptedModel([[("book_car", PAR_CAR)], "no car"])
    flyer = enable_rac(FunctionAgent(name="flyer", llm=flights.function_calling_llm(),
                                     tools=world_tools(world, ("book_flight", "cancel_flight"))),
                       shared)
    driver = enable_rac(FunctionAgent(name="driver", llm=cars.function_calling_llm(),
                                      tools=world_tools(world, ("book_car", "cancel_car"))),
                        shared)

    async with shared.run(agent_id="trip") as run:
        first = flyer.run(user_msg="fly ann to Paris")
        await first
        assert [b["kind"] for b in world.live()] == ["flight"]
        second = driver.run(user_msg="a car in Paris")
        await second

    # Both agent runs joined the explicit run: the car's failure undid the first run's flight.
    assert rac_run_of(first) is None and rac_run_of(second) is None
    assert world.live() == []
    assert records_of(run) == [("book_flight", "flyer", "compensated"),
                               ("book_car", "driver", "failed"),
                               ("cancel_flight", "flyer", "completed")]
    assert run.status is RunStatus.COMPENSATED
    assert [r.run_id for r in shared.store.list_runs()] == [run.run_id]
