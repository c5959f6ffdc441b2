"""Semantic Kernel paths around the model's auto-invoked calls (issue 30, promises 2 and 3):
``kernel.invoke`` inside an open run is a call of the run; a user's error-handling filter
added after ``enable_rac`` never hides a failure from RAC; a call a user's policy filter
blocked did not happen, and nobody is told it may still be live."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from semantic_kernel.filters import FilterTypes, FunctionInvocationContext
from semantic_kernel.functions import FunctionResult

import rac
from rac.models import RecordKind, RecordStatus
from rac.testing import TravelWorld
from rac_semantic_kernel import enable_rac
from tests.adapters.semantic_kernel.support import CAR, FLIGHT, HOTEL, travel_kernel, trip_agent

Next = Callable[[Any], Any]


def _chain(exc: BaseException | None) -> list[BaseException]:
    out: list[BaseException] = []
    while exc is not None and exc not in out:
        out.append(exc)
        exc = exc.__cause__ or exc.__context__
    return out


async def test_kernel_invoke_inside_a_run_is_logged_and_undone(
        world: TravelWorld, make_engine: Callable[..., rac.RAC]) -> None:
    engine = make_engine()
    world.fail("book_car", "permanent", message="no cars")
    kernel = enable_rac(travel_kernel(world), rac=engine, agent_id="desk")

    with pytest.raises(Exception) as raised:  # noqa: PT011 - SK may wrap RAC's exception
        async with engine.run() as run:
            await kernel.invoke(plugin_name="travel", function_name="book_flight",
                                passenger="ann", origin="SFO", dest="CDG")
            await kernel.invoke(plugin_name="travel", function_name="book_car",
                                driver="ann", city="Paris")
    failed = [e for e in _chain(raised.value) if isinstance(e, rac.ToolCallFailed)]
    assert failed, raised.value
    assert "book_flight FL-101" in str(failed[0])  # the report says what was undone
    assert world.live() == []
    assert [(r.tool, r.status, r.agent_id) for r in run.records()
            if r.kind is RecordKind.ACTION] == [
        ("travel-book_flight", RecordStatus.COMPENSATED, "desk"),
        ("travel-book_car", RecordStatus.FAILED, "desk")]
    assert run.status is rac.RunStatus.COMPENSATED


async def test_kernel_invoke_outside_any_run_is_left_alone(
        world: TravelWorld, make_engine: Callable[..., rac.RAC]) -> None:
    engine = make_engine()
    kernel = enable_rac(travel_kernel(world), rac=engine)
    await kernel.invoke(plugin_name="travel", function_name="book_flight",
                        passenger="ann", origin="SFO", dest="CDG")
    assert engine.store.list_runs() == []
    assert [b["kind"] for b in world.live()] == ["flight"]


async def test_an_error_filter_added_after_rac_does_not_hide_the_failure(
        world: TravelWorld, make_engine: Callable[..., rac.RAC]) -> None:
    engine = make_engine()
    world.fail("book_car", "permanent", message="no cars left")
    agent, service = trip_agent(travel_kernel(world), [[FLIGHT], [HOTEL], [CAR], "Sorry."])
    enable_rac(agent, rac=engine)

    async def friendly_errors(ctx: FunctionInvocationContext, next: Next) -> None:
        try:
            await next(ctx)
        except Exception:  # noqa: BLE001 - the user's filter swallows every failure
            ctx.result = FunctionResult(function=ctx.function.metadata,
                                        value="That did not work, try something else.")

    agent.kernel.add_filter(FilterTypes.FUNCTION_INVOCATION, friendly_errors)  # after RAC
    await agent.get_response(messages="Trip with a car.")

    assert world.live() == []  # RAC saw the car fail and undid the hotel and the flight
    report = service.tool_results(-1)[-1]
    assert "no cars left" in report and "book_flight FL-101" in report, report
    [info] = engine.store.list_runs()
    assert info.status is rac.RunStatus.COMPENSATED


async def test_a_call_a_policy_filter_blocked_did_not_happen(
        world: TravelWorld, make_engine: Callable[..., rac.RAC]) -> None:
    engine = make_engine()
    agent, service = trip_agent(travel_kernel(world), [[FLIGHT], [CAR], "No car for you."])
    enable_rac(agent, rac=engine)

    async def no_cars(ctx: FunctionInvocationContext, next: Next) -> None:
        if ctx.function.name == "book_car":
            ctx.result = FunctionResult(function=ctx.function.metadata,
                                        value="Policy: cars need a manager's approval.")
            return
        await next(ctx)

    agent.kernel.add_filter(FilterTypes.FUNCTION_INVOCATION, no_cars)
    await agent.get_response(messages="Flight and a car.")

    told = service.tool_results(-1)[-1]
    assert told == "Policy: cars need a manager's approval.", told
    assert "LIVE" not in told
    assert world.calls.get("book_car", 0) == 0  # never called
    assert [b["kind"] for b in world.live()] == ["flight"]  # nothing failed: nothing undone
    [info] = engine.store.list_runs()
    recs = {r.tool: r for r in engine.store.get_records(info.run_id)}
    assert recs["travel-book_car"].status is RecordStatus.FAILED
    assert recs["travel-book_car"].note == "passthrough"
    assert info.status is rac.RunStatus.COMPLETED
