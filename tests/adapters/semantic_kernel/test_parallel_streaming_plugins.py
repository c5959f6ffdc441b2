"""Parallel calls of one model turn, streaming invocation, and plugins of both kinds: a class
with ``@kernel_function`` methods and a function defined by a prompt."""

from __future__ import annotations

from collections.abc import Callable

from semantic_kernel.connectors.ai.prompt_execution_settings import PromptExecutionSettings
from semantic_kernel.contents import FunctionResultContent

import rac
from rac.models import RecordKind
from rac.testing import TravelWorld
from rac_semantic_kernel import enable_rac
from rac_semantic_kernel.testing import Call, ScriptedChatCompletion
from tests.adapters.semantic_kernel.support import CAR, FLIGHT, HOTEL, travel_kernel, trip_agent


async def test_parallel_calls_with_one_failing_undo_the_turn(
        world: TravelWorld, make_engine: Callable[..., rac.RAC]) -> None:
    engine = make_engine()
    world.fail("book_car", "permanent", message="no cars")
    agent, service = trip_agent(travel_kernel(world), [[FLIGHT, HOTEL, CAR], "Nothing booked."])
    enable_rac(agent, rac=engine)

    await agent.get_response(messages="Everything at once.")

    assert world.live() == []
    assert sorted(t for t, _, e in world.ledger() if e == "cancel") == ["cancel_flight",
                                                                       "cancel_hotel"]
    results = service.tool_results(-1)
    assert len(results) == 3  # every call of the turn answered
    (report,) = [r for r in results if r.startswith("RAC:")]
    assert "travel-book_car" in report and "Undone" in report
    (info,) = engine.store.list_runs()  # the turn's calls share one run
    assert info.status is rac.RunStatus.COMPENSATED
    assert sorted(r.tool for r in engine.store.get_records(info.run_id)
                  if r.kind is RecordKind.ACTION) == [
        "travel-book_car", "travel-book_flight", "travel-book_hotel"]


async def test_streaming_invocation_rolls_back_and_streams_the_replan(
        world: TravelWorld, make_engine: Callable[..., rac.RAC]) -> None:
    engine = make_engine()
    world.fail("book_hotel", "permanent", message="hotel full")
    agent, service = trip_agent(travel_kernel(world), [[FLIGHT], [HOTEL], "Hotel is full."])
    enable_rac(agent, rac=engine)

    chunks = [str(c.message.content) async for c in agent.invoke_stream(messages="Paris.")
              if c.message.content]

    assert "".join(chunks).endswith("Hotel is full.")
    assert world.live() == []
    assert "hotel full" in service.tool_results(-1)[-1]
    streamed_results = [i for m in service.received[-1] for i in m.items
                        if isinstance(i, FunctionResultContent)]
    assert len(streamed_results) == 2
    (info,) = engine.store.list_runs()
    assert info.status is rac.RunStatus.COMPENSATED


async def test_prompt_function_is_logged_and_left_alone_as_read_only(
        world: TravelWorld, make_engine: Callable[..., rac.RAC]) -> None:
    engine = make_engine(read_only=["writer-itinerary"])
    world.fail("book_car", "permanent")
    kernel = travel_kernel(world)
    agent, service = trip_agent(kernel, [
        [FLIGHT], [Call("writer", "itinerary", {"trip": "SFO to CDG"})], [CAR], "Sorry."])
    writer = ScriptedChatCompletion(["Day 1: fly to Paris."], service_id="writer")
    kernel.add_service(writer)
    kernel.add_function(plugin_name="writer", function_name="itinerary",
                        description="Write an itinerary for a trip.",
                        prompt="Write a one-line itinerary for: {{$trip}}",
                        prompt_execution_settings=PromptExecutionSettings(service_id="writer"))
    enable_rac(agent, rac=engine)

    await agent.get_response(messages="Plan and book.")

    assert "Day 1: fly to Paris." in service.tool_results(2)[-1]
    assert "Write a one-line itinerary for: SFO to CDG" in str(writer.received[0][-1].content)
    assert world.live() == []
    (info,) = engine.store.list_runs()
    records = {r.tool: r for r in engine.store.get_records(info.run_id)
               if r.kind is RecordKind.ACTION}
    assert records["writer-itinerary"].read_only
    assert records["writer-itinerary"].status is rac.RecordStatus.COMPLETED
    assert records["travel-book_flight"].status is rac.RecordStatus.COMPENSATED
