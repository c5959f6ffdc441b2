"""A tool that asks a person first (``ctx.wait_for_event``): the workflow pauses the step and
runs it again with the answer. RAC lets the pause through untouched, and the call, made once,
is compensated like any other.

No ``from __future__ import annotations``: LlamaIndex finds the ``Context`` parameter by its
annotation object."""

from typing import Any

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.tools import FunctionTool
from llama_index.core.workflow import Context, HumanResponseEvent, InputRequiredEvent

from rac.models import RecordStatus, RunStatus
from rac.testing import TravelWorld
from rac_llamaindex import enable_rac, rac_run_of
from rac_llamaindex.testing import ScriptedModel
from tests.adapters.llamaindex.support import PAR_FLIGHT, PAR_HOTEL, engine, world_tools


async def test_a_step_waiting_for_a_person_passes_through_and_is_compensated_later() -> None:
    world = TravelWorld()
    world.fail("book_hotel", "permanent", message="full")

    async def book_flight(ctx: Context, passenger: str, origin: str,
                          dest: str) -> dict[str, Any]:
        """Book a flight once the traveller confirmed it."""
        answer = await ctx.wait_for_event(
            HumanResponseEvent, waiter_id="confirm-flight",
            waiter_event=InputRequiredEvent(prefix=f"Book {origin}->{dest}?"))
        if answer.response != "yes":
            return {"booked": False}
        return world.book_flight(passenger, origin, dest)

    model = ScriptedModel([[("book_flight", PAR_FLIGHT)], [("book_hotel", PAR_HOTEL)],
                           "No hotel: the flight is cancelled."])
    agent = enable_rac(FunctionAgent(
        name="travel", llm=model.function_calling_llm(),
        tools=[FunctionTool.from_defaults(async_fn=book_flight),
               *world_tools(world, ("cancel_flight", "book_hotel", "cancel_hotel"))]), engine())

    handler = agent.run(user_msg="trip")
    asked = 0
    async for event in handler.stream_events():
        if isinstance(event, InputRequiredEvent):
            asked += 1
            assert world.live() == []  # nothing is booked while the person decides
            handler.ctx.send_event(HumanResponseEvent(response="yes"))
    assert str(await handler) == "No hotel: the flight is cancelled."

    assert asked == 1
    assert world.calls.get("book_flight") == 1 and world.calls.get("cancel_flight") == 1
    assert world.live() == []
    run = rac_run_of(handler)
    assert run is not None and run.status is RunStatus.COMPENSATED
    flights = [r for r in run.records() if r.tool == "book_flight"]
    # The paused attempt is logged as not run (no failure, nothing to undo); the answered one
    # was compensated.
    assert [r.status for r in flights] == [RecordStatus.FAILED, RecordStatus.COMPENSATED]
    assert flights[0].note == "passthrough"
    assert "Undone, newest first: book_flight FL-101" in model.inputs[2].tool_results()[-1]
