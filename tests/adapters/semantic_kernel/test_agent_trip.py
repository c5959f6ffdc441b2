"""A ChatCompletionAgent with auto function calling books a trip under RAC."""

from __future__ import annotations

from collections.abc import Callable

from semantic_kernel.connectors.ai.function_choice_behavior import FunctionChoiceBehavior

import rac
from rac.models import RecordKind, RecordStatus
from rac.testing import TravelWorld
from rac_semantic_kernel import enable_rac
from tests.adapters.semantic_kernel.support import CAR, FLIGHT, HOTEL, travel_kernel, trip_agent


def actions(engine: rac.RAC, run_id: str) -> list[tuple[str, str]]:
    return [(r.tool, str(r.status)) for r in engine.store.get_records(run_id)
            if r.kind is RecordKind.ACTION]


async def test_car_fails_for_good_hotel_then_flight_cancelled_model_replans(
        world: TravelWorld, make_engine: Callable[..., rac.RAC]) -> None:
    engine = make_engine()
    world.fail("book_car", "permanent", message="no cars left in Paris")
    agent, service = trip_agent(travel_kernel(world), [[FLIGHT], [HOTEL], [CAR],
                                                       "I could not book a car; nothing is booked."])
    assert enable_rac(agent, rac=engine) is agent

    response = await agent.get_response(messages="Trip to Paris with a car, please.")

    assert world.live() == []
    assert [(t, e) for t, _, e in world.ledger()][-2:] == [("cancel_hotel", "cancel"),
                                                            ("cancel_flight", "cancel")]
    report = service.tool_results(-1)[-1]
    assert "travel-book_car" in report and "no cars left in Paris" in report
    assert "An error occurred" not in report
    assert response.message.content == "I could not book a car; nothing is booked."
    (info,) = engine.store.list_runs()
    assert info.status is rac.RunStatus.COMPENSATED
    assert info.agent_id == "planner"
    assert actions(engine, info.run_id) == [
        ("travel-book_flight", str(RecordStatus.COMPENSATED)),
        ("travel-book_hotel", str(RecordStatus.COMPENSATED)),
        ("travel-book_car", str(RecordStatus.FAILED)),
    ]


async def test_replan_after_rollback_completes(world: TravelWorld,
                                               make_engine: Callable[..., rac.RAC]) -> None:
    engine = make_engine()
    world.fail("book_car", "permanent", times=1)
    kernel = enable_rac(travel_kernel(world), rac=engine)
    agent, service = trip_agent(kernel, [[FLIGHT], [CAR], [FLIGHT], [CAR], "All booked."])

    response = await agent.get_response(messages="Trip to Paris with a car.")

    assert response.message.content == "All booked."
    assert sorted(b["kind"] for b in world.live()) == ["car", "flight"]
    assert "booked" in service.tool_results(-1)[-1] or "CR-" in service.tool_results(-1)[-1]


async def test_compensators_need_not_be_offered_to_the_model(
        world: TravelWorld, make_engine: Callable[..., rac.RAC]) -> None:
    engine = make_engine()
    world.fail("book_car", "permanent")
    agent, _ = trip_agent(travel_kernel(world), [[FLIGHT], [CAR], "Sorry."])
    agent.function_choice_behavior = FunctionChoiceBehavior.Auto(filters={
        "included_functions": ["travel-book_flight", "travel-book_car"]})
    enable_rac(agent, rac=engine)

    await agent.get_response(messages="Flight and car.")

    assert world.live() == []
    assert [t for t, _, e in world.ledger() if e == "cancel"] == ["cancel_flight"]
