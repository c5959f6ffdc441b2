"""An agent used as a tool under RAC (issue 30, promise 5): a kernel function that awaits
another enabled agent (named in ``delegates=``, or SK's own agent added as a plugin) is a
delegation. It is not logged as a side effect of its own; the other agent's calls join the
caller's run under their own agent's name, and the caller's model hears their rollback."""

from __future__ import annotations

from collections.abc import Callable

from semantic_kernel import Kernel
from semantic_kernel.functions import kernel_function

import rac
from rac.models import RecordKind
from rac.testing import TravelWorld
from rac_semantic_kernel import enable_rac
from rac_semantic_kernel.testing import Call
from tests.adapters.semantic_kernel.support import CAR, FLIGHT, travel_kernel, trip_agent


async def test_a_function_named_in_delegates_is_a_delegation(
        world: TravelWorld, make_engine: Callable[..., rac.RAC]) -> None:
    engine = make_engine()
    world.fail("book_car", "permanent", message="no cars")
    driver, _ = trip_agent(travel_kernel(world), [[CAR], "Done."], name="driver")
    enable_rac(driver, rac=engine)

    class Team:
        @kernel_function(description="Ask the car agent.")
        async def ask_driver(self, request: str) -> str:
            return str((await driver.get_response(messages=request)).message.content)

    kernel = travel_kernel(world)
    kernel.add_plugin(Team(), plugin_name="team")
    planner, told = trip_agent(kernel, [[FLIGHT], [Call("team", "ask_driver",
                                                         {"request": "a car"})], "Sorry."])
    enable_rac(planner, rac=engine, delegates=["team.ask_driver"])
    await planner.get_response(messages="A trip.")

    assert world.live() == []
    [info] = engine.store.list_runs()
    assert info.status is rac.RunStatus.COMPENSATED
    assert [(r.tool, r.agent_id) for r in engine.store.get_records(info.run_id)
            if r.kind is RecordKind.ACTION] == [("travel-book_flight", "planner"),
                                                ("travel-book_car", "driver")]
    heard = told.tool_results(-1)[-1]
    assert heard.startswith("Done.") and "travel-book_flight FL-101" in heard, heard


async def test_kernel_invoke_of_an_agent_plugin_in_a_run_delegates(
        world: TravelWorld, make_engine: Callable[..., rac.RAC]) -> None:
    """``kernel.invoke`` of an agent added as a plugin, inside an open run: the agent's calls
    are the run's, the invocation itself is not logged."""
    engine = make_engine()
    booker, _ = trip_agent(travel_kernel(world), [[FLIGHT], "Booked."], name="booker")
    enable_rac(booker, rac=engine)
    kernel = Kernel()
    kernel.add_plugin(booker, plugin_name="team")
    enable_rac(kernel, rac=engine, agent_id="app")
    async with engine.run(agent_id="trip") as run:
        answer = await kernel.invoke(plugin_name="team", function_name="booker",
                                     messages="a flight")
        run.rollback("the user changed their mind")
    assert "Booked." in str(answer)
    assert world.live() == []
    assert [(r.tool, r.agent_id) for r in run.records() if r.kind is RecordKind.ACTION] == [
        ("travel-book_flight", "booker")]
