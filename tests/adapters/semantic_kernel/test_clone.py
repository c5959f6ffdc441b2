"""``kernel.clone()`` of an enabled kernel, enabled for a second agent (issue 30): the clone
gets RAC's filters of its own, so its calls are recorded, and undone, as that agent's."""

from __future__ import annotations

from collections.abc import Callable

import rac
from rac.models import RecordKind
from rac.testing import TravelWorld
from rac_semantic_kernel import enable_rac
from tests.adapters.semantic_kernel.support import CAR, FLIGHT, travel_kernel, trip_agent


async def test_a_clone_enabled_for_another_agent_records_that_agent(
        world: TravelWorld, make_engine: Callable[..., rac.RAC]) -> None:
    engine = make_engine()
    world.fail("book_car", "permanent", message="no cars")
    kernel = travel_kernel(world)
    planner, _ = trip_agent(kernel, [[FLIGHT], "Flight booked."], name="planner")
    enable_rac(planner, rac=engine)
    driver, told = trip_agent(kernel.clone(), [[CAR], "No car."], name="driver")
    enable_rac(driver, rac=engine)  # refused before: "already enabled for agent 'planner'"

    async with engine.run(agent_id="trip") as run:
        await planner.get_response(messages="A flight.")
        await driver.get_response(messages="A car.")

    assert world.live() == []  # the driver's failure undid the planner's flight
    assert [(r.tool, r.agent_id) for r in run.records() if r.kind is RecordKind.ACTION] == [
        ("travel-book_flight", "planner"), ("travel-book_car", "driver")]
    assert "book_flight FL-101" in told.tool_results(-1)[-1]
    # the original kernel keeps its own pair, for the planner
    assert len(kernel.auto_function_invocation_filters) == 1
    assert len(driver.kernel.auto_function_invocation_filters) == 1


async def test_a_clone_not_enabled_records_the_agent_that_uses_it(
        world: TravelWorld, make_engine: Callable[..., rac.RAC]) -> None:
    """A clone given to another agent and not enabled keeps RAC's filters; its calls carry
    that agent's name (the name on its instructions), not the first agent's."""
    engine = make_engine()
    world.fail("book_car", "permanent", message="no cars")
    kernel = travel_kernel(world)
    planner, _ = trip_agent(kernel, [[FLIGHT], "Flight booked."], name="planner")
    enable_rac(planner, rac=engine)
    driver, told = trip_agent(kernel.clone(), [[CAR], "No car."], name="driver")  # not enabled

    async with engine.run(agent_id="trip") as run:
        await planner.get_response(messages="A flight.")
        await driver.get_response(messages="A car.")

    assert world.live() == []
    assert [(r.tool, r.agent_id) for r in run.records() if r.kind is RecordKind.ACTION] == [
        ("travel-book_flight", "planner"), ("travel-book_car", "driver")]
    assert "book_flight FL-101" in told.tool_results(-1)[-1]
