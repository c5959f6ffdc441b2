"""Retries go through the filter chain again; alternatives are kernel functions, undone by
their own compensators; the real exception is what RAC classifies."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from semantic_kernel.filters import FilterTypes

import rac
from rac.models import RecordKind
from rac.testing import TravelWorld
from rac_semantic_kernel import enable_rac
from tests.adapters.semantic_kernel.support import CAR, FLIGHT, HOTEL, travel_kernel, trip_agent


async def test_transient_error_retried_at_most_max_attempts(
        world: TravelWorld, make_engine: Callable[..., rac.RAC]) -> None:
    engine = make_engine(retry=rac.RetryPolicy(max_attempts=3, initial_delay=0.5, jitter=0))
    world.fail("book_flight", "transient", message="gateway timeout")  # every call
    kernel = travel_kernel(world)
    seen: list[str] = []

    async def count(ctx: Any, next: Any) -> None:
        seen.append(ctx.function.name)
        await next(ctx)

    agent, service = trip_agent(kernel, [[FLIGHT], "The airline is down."])
    enable_rac(agent, rac=engine)
    # Added after RAC's filter, so SK runs it inside RAC's: once per attempt.
    kernel.add_filter(FilterTypes.AUTO_FUNCTION_INVOCATION, count)

    await agent.get_response(messages="Fly me to Paris.")

    assert world.calls["book_flight"] == 3
    assert seen == ["book_flight"] * 3  # each retry ran the filters after RAC's again
    (rec,) = [r for r in engine.store.get_records(engine.store.list_runs()[0].run_id)
              if r.kind is RecordKind.ACTION]
    assert rec.attempts == 3 and rec.status is rac.RecordStatus.FAILED
    report = service.tool_results(-1)[-1]
    assert "gateway timeout" in report and "3 attempts" in report


async def test_transient_then_success_is_one_call_to_the_model(
        world: TravelWorld, make_engine: Callable[..., rac.RAC]) -> None:
    engine = make_engine()
    world.fail("book_flight", "transient", times=2)
    agent, service = trip_agent(travel_kernel(world), [[FLIGHT], "Booked."])
    enable_rac(agent, rac=engine)

    await agent.get_response(messages="Fly me to Paris.")

    assert world.calls["book_flight"] == 3
    assert [b["kind"] for b in world.live()] == ["flight"]
    assert "FL-" in service.tool_results(-1)[-1]


async def test_alternative_used_and_later_compensated_by_its_own_compensator(
        world: TravelWorld, make_engine: Callable[..., rac.RAC]) -> None:
    # Dotted names are accepted next to SK's plugin-function form.
    engine = make_engine(tools=None, alternatives={"travel.book_car": ["travel.rent_car"]})
    world.fail("book_car", "permanent", message="no cars")
    world.fail("book_hotel", "permanent", message="hotel full")
    agent, service = trip_agent(travel_kernel(world), [[FLIGHT], [CAR], [HOTEL], "Sorry."])
    enable_rac(agent, rac=engine)

    await agent.get_response(messages="Trip with car and hotel.")

    assert '"kind": "car"' in service.tool_results(2)[-1].replace("'", '"')  # rent_car answered
    assert world.live() == []
    undo = [t for t, _, e in world.ledger() if e == "cancel"]
    assert undo == ["return_rental", "cancel_flight"]
    records = engine.store.get_records(engine.store.list_runs()[0].run_id)
    assert [(r.tool, r.kind) for r in records if r.kind is RecordKind.COMPENSATION] == [
        ("travel-return_rental", RecordKind.COMPENSATION),
        ("travel-cancel_flight", RecordKind.COMPENSATION)]


class Refused(Exception):
    """A provider's own error type, with an HTTP status."""

    status_code = 503


async def test_the_real_exception_is_classified_not_sks_text(
        world: TravelWorld, make_engine: Callable[..., rac.RAC]) -> None:
    seen: list[BaseException] = []

    class Spy:
        @rac.hookimpl
        def rac_classify_error(self, tool: str, error: BaseException) -> None:
            seen.append(error)

    engine = make_engine(plugins=[Spy()])

    def busy(args: dict[str, Any]) -> None:
        if world.calls["book_flight"] == 1:
            raise Refused("upstream busy")

    world.on_call("book_flight", busy)
    agent, _ = trip_agent(travel_kernel(world), [[FLIGHT], "Booked."])
    enable_rac(agent, rac=engine)

    await agent.get_response(messages="Fly me to Paris.")

    assert [type(e) for e in seen] == [Refused]  # 503: transient, retried once
    assert world.calls["book_flight"] == 2
    assert [b["kind"] for b in world.live()] == ["flight"]
