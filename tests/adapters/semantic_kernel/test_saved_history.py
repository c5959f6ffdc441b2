"""A chat history saved during an invocation and restored later (issue 30, promise 4 through
Semantic Kernel's own persistence): the restored turn goes on with the run its saved calls were
part of; when that run was rolled back meanwhile, the model hears so before anything runs.
(The crashed-process case is the conformance suite's, test_conformance.py.)"""

from __future__ import annotations

from pathlib import Path

from semantic_kernel.agents import ChatHistoryAgentThread
from semantic_kernel.contents import ChatHistory, ChatMessageContent

import rac
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld
from rac_semantic_kernel import enable_rac, prepare_recovery
from tests.adapters.semantic_kernel.support import FLIGHT, HOTEL, travel_kernel, trip_agent


async def test_a_history_restored_after_its_run_was_undone_tells_the_model_first(
        tmp_path: Path) -> None:
    world = TravelWorld()
    engine = rac.RAC(store=f"sqlite:///{tmp_path / 'rac.db'}",
                     compensations=TRAVEL_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                     load_entrypoints=False)
    saved = ChatHistory()
    saved.add_user_message("Flight, then a hotel once I confirm.")

    async def save(message: ChatMessageContent) -> None:  # what an app persisting does
        saved.add_message(message)

    agent, _ = trip_agent(travel_kernel(world), [[FLIGHT], "Flight booked; confirm the hotel?"])
    enable_rac(agent, rac=engine)
    async for _ in agent.invoke_stream(messages="Flight, then a hotel once I confirm.",
                                       on_intermediate_message=save):
        pass
    [info] = engine.store.list_runs()
    operator = rac.RAC(store=f"sqlite:///{tmp_path / 'rac.db'}",  # `rac undo`, elsewhere
                       compensations=TRAVEL_COMPENSATIONS, load_entrypoints=False)
    prepare_recovery(operator, travel_kernel(world), agent_id="planner")
    operator.undo(info.run_id, why="the user changed plans", unchecked=True)
    operator.store.close()
    assert world.live() == []

    # Later (another process would read the saved text): the turn resumed on the history.
    restored = ChatHistory.restore_chat_history(saved.serialize())
    resumed, model = trip_agent(travel_kernel(world), [[HOTEL], "Understood."])
    enable_rac(resumed, rac=engine)
    await resumed.get_response(thread=ChatHistoryAgentThread(chat_history=restored))

    assert world.calls.get("book_hotel", 0) == 0, "the hotel was booked on an undone trip"
    told = model.tool_results()[-1]  # the answer to the resumed turn's first call
    assert f"run {info.run_id} ended compensated" in told, told
    assert "book_flight FL-" in told and "Not run: travel-book_hotel" in told, told
    engine.store.close()
