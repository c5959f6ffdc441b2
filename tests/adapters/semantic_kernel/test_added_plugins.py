"""A plugin added to an enabled kernel mid-run (issue 30): its functions are guarded from their
first call; when a declaration concerning it names a compensator RAC cannot reach, only that
function's calls are refused (never run, the model told, an error event logged) and the rest
of the run goes on, instead of a ConfigurationError escaping the agent mid-run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from semantic_kernel import Kernel
from semantic_kernel.agents import ChatCompletionAgent
from semantic_kernel.exceptions import KernelInvokeException
from semantic_kernel.functions import kernel_function
from structlog.testing import capture_logs

import rac
from rac.models import RecordKind
from rac.testing import TRAVEL_COMPENSATIONS, TravelWorld
from rac_semantic_kernel import enable_rac
from rac_semantic_kernel.testing import Call, ScriptedChatCompletion
from tests.adapters.semantic_kernel.support import CAR, FLIGHT, travel_kernel, trip_agent

SPA = Call("extras", "book_spa", {"guest": "ann"})


class Spa:
    """A plugin the application adds later."""

    def __init__(self) -> None:
        self.booked: list[str] = []
        self.cancelled: list[str] = []

    @kernel_function
    def book_spa(self, guest: str) -> dict[str, Any]:
        self.booked.append(guest)
        return {"booking_id": f"SPA-{len(self.booked)}"}

    @kernel_function
    def cancel_spa(self, booking_id: str) -> dict[str, Any]:
        self.cancelled.append(booking_id)
        return {"cancelled": True}


class SpaWithoutUndo:
    """The same plugin without its compensator."""

    def __init__(self) -> None:
        self.booked: list[str] = []

    @kernel_function
    def book_spa(self, guest: str) -> dict[str, Any]:
        self.booked.append(guest)
        return {"booking_id": "SPA-1"}


def _spa_trip(world: TravelWorld, make_engine: Callable[..., rac.RAC], answer: str
              ) -> tuple[rac.RAC, Kernel, ChatCompletionAgent, ScriptedChatCompletion]:
    """An enabled trip agent whose engine declares the spa's compensation, the spa plugin not
    added yet; its model books a flight, then a spa and a car, then says ``answer``."""
    engine = make_engine(compensations={**TRAVEL_COMPENSATIONS, "book_spa": "cancel_spa"},
                         tools=None)
    kernel = travel_kernel(world)
    agent, model = trip_agent(kernel, [[FLIGHT], "Flight booked.", [SPA], [CAR], answer])
    enable_rac(agent, rac=engine)
    return engine, kernel, agent, model


async def test_a_plugin_added_mid_run_is_guarded_and_undone(
        world: TravelWorld, make_engine: Callable[..., rac.RAC]) -> None:
    engine, kernel, agent, model = _spa_trip(world, make_engine, "Sorry.")
    world.fail("book_car", "permanent", message="no cars")
    spa = Spa()
    async with engine.run(agent_id="trip") as run:
        await agent.get_response(messages="A flight.")
        kernel.add_plugin(spa, plugin_name="extras")  # after enable_rac, inside the run
        await agent.get_response(messages="A spa and a car.")
    assert spa.cancelled == ["SPA-1"] and world.live() == []
    report = model.tool_results(-1)[-1]
    assert "extras-book_spa SPA-1 (via extras-cancel_spa)" in report, report
    assert run.status is rac.RunStatus.COMPENSATED


async def test_a_plugin_added_without_its_compensator_is_refused_not_raised(
        world: TravelWorld, make_engine: Callable[..., rac.RAC]) -> None:
    engine, kernel, agent, model = _spa_trip(world, make_engine, "Done.")
    spa = SpaWithoutUndo()
    with capture_logs() as logs:
        async with engine.run(agent_id="trip") as run:
            await agent.get_response(messages="A flight.")
            kernel.add_plugin(spa, plugin_name="extras")
            await agent.get_response(messages="A spa and a car.")  # no ConfigurationError
    assert spa.booked == []  # never run: RAC could not have undone it
    spa_told, car_told = model.tool_results(-1)[-2:]
    assert spa_told.startswith("RAC: not run: extras-book_spa could not be undone"), spa_told
    assert "cancel_spa" not in spa_told and "rac.RAC(" not in spa_told  # no developer advice
    assert "CR-" in car_told  # the kernel's other calls went on
    assert [r.tool for r in run.records() if r.kind is RecordKind.ACTION] == [
        "travel-book_flight", "travel-book_car"]
    assert any(e.get("function") == "extras-book_spa" and e.get("log_level") == "error"
               and "cancel_spa" in str(e.get("error")) for e in logs), logs
    # kernel.invoke of it (a developer's direct call) raises the error itself (SK wraps it)
    with pytest.raises(KernelInvokeException) as raised:
        async with engine.run(agent_id="trip"):
            await kernel.invoke(plugin_name="extras", function_name="book_spa", guest="bo")
    cause = raised.value.__cause__
    assert isinstance(cause, rac.ConfigurationError) and "cancel_spa" in str(cause), cause
    assert spa.booked == []
