"""What one run is: an agent invocation, a completion answering one user message, or the
explicit run the calls are made in."""

from __future__ import annotations

import gc
from collections.abc import Callable

from semantic_kernel.connectors.ai.function_choice_behavior import FunctionChoiceBehavior
from semantic_kernel.connectors.ai.prompt_execution_settings import PromptExecutionSettings
from semantic_kernel.contents import ChatHistory

import rac
from rac.testing import TravelWorld
from rac_semantic_kernel import enable_rac
from rac_semantic_kernel.runs import runs_of
from rac_semantic_kernel.testing import ScriptedChatCompletion
from tests.adapters.semantic_kernel.support import CAR, FLIGHT, HOTEL, travel_kernel, trip_agent


async def test_each_user_message_of_a_history_is_its_own_run(
        world: TravelWorld, make_engine: Callable[..., rac.RAC]) -> None:
    engine = make_engine()
    world.fail("book_car", "permanent")
    kernel = enable_rac(travel_kernel(world), rac=engine, agent_id="desk")
    service = ScriptedChatCompletion([[FLIGHT], "Flight booked.", [HOTEL], [CAR], "No car."])
    settings = PromptExecutionSettings(function_choice_behavior=FunctionChoiceBehavior.Auto())
    history = ChatHistory()

    history.add_user_message("A flight, please.")
    history.add_message(await service.get_chat_message_content(history, settings,
                                                               kernel=kernel))
    history.add_user_message("Now a hotel and a car.")
    await service.get_chat_message_content(history, settings, kernel=kernel)

    assert [b["kind"] for b in world.live()] == ["flight"]  # the first run is not undone
    first, second = engine.store.list_runs()
    assert (first.status, second.status) == (rac.RunStatus.COMPLETED,
                                             rac.RunStatus.COMPENSATED)
    assert {first.agent_id, second.agent_id} == {"desk"}


async def test_agent_invocations_inside_an_explicit_run_join_it(
        world: TravelWorld, make_engine: Callable[..., rac.RAC]) -> None:
    engine = make_engine()
    world.fail("book_car", "permanent")
    agent, _ = trip_agent(travel_kernel(world), [[FLIGHT], "ok", [CAR], "no car"])
    enable_rac(agent, rac=engine)

    async with engine.run(agent_id="session") as run:
        await agent.get_response(messages="Flight.")
        await agent.get_response(messages="Car.")  # fails: undoes the first invocation too

    assert world.live() == []
    assert [i.run_id for i in engine.store.list_runs()] == [run.run_id]


async def test_a_finished_invocation_leaves_nothing_in_the_run_table(
        world: TravelWorld, make_engine: Callable[..., rac.RAC]) -> None:
    engine = make_engine()
    agent, _ = trip_agent(travel_kernel(world), [[FLIGHT], "ok"] * 3)
    enable_rac(agent, rac=engine)
    await agent.get_response(messages="One.")
    await agent.get_response(messages="Two.")
    gc.collect()
    await agent.get_response(messages="Three.")  # the table drops dead histories on lookup

    assert len(runs_of(engine)) == 1  # only the last invocation's, not one per invocation
    assert len(engine.store.list_runs()) == 3
