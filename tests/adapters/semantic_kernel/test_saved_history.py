"""A chat history saved during an invocation and restored later (issue 30, promise 4 through
Semantic Kernel's own persistence): the restored turn goes on with the run its saved calls were
part of; when that run was rolled back meanwhile, the model hears so before anything runs.
(The crashed-process case is the conformance suite's, test_conformance.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from semantic_kernel.agents import ChatHistoryAgentThread
from semantic_kernel.contents import ChatHistory, ChatMessageContent

import rac
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld
from rac_semantic_kernel import enable_rac, prepare_recovery
from tests.adapters.semantic_kernel.support import CAR, FLIGHT, HOTEL, travel_kernel, trip_agent


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


class _ModelDown(Exception):
    """The model's API failed mid-turn."""


def _engine(log: str) -> rac.RAC:
    return rac.RAC(store=log, compensations=TRAVEL_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                   load_entrypoints=False)


async def _cut_short_after_a_flight(world: TravelWorld, engine: rac.RAC) -> ChatHistory:
    """A streamed turn whose history the app saves as it goes, cut short by the model's API
    failing after the flight's call; returns the saved history."""
    saved = ChatHistory()
    saved.add_user_message("A flight, then more.")

    async def save(message: ChatMessageContent) -> None:
        saved.add_message(message)

    def down(history: ChatHistory) -> str:
        raise _ModelDown("503 from the model's API")

    agent, _ = trip_agent(travel_kernel(world), [[FLIGHT], down])
    enable_rac(agent, rac=engine)
    with pytest.raises(Exception) as cut:  # noqa: B017 - SK wraps the model's failure
        async for _ in agent.invoke_stream(messages="A flight, then more.",
                                           on_intermediate_message=save):
            pass
    assert "503" in str(cut.value) or isinstance(cut.value.__cause__, _ModelDown), cut.value
    return saved


async def test_a_history_cut_short_between_two_calls_goes_on_with_its_completed_run(
        tmp_path: Path) -> None:
    """The invocation's run is marked completed after each call; a turn cut short between two
    calls (the model's API failing, or a process dying) and resumed from its saved history
    continues that run, so a later failure undoes the flight booked before the cut."""
    world = TravelWorld()
    world.fail("book_car", "permanent", message="no cars")
    log = f"sqlite:///{tmp_path / 'rac.db'}"
    engine = _engine(log)
    saved = await _cut_short_after_a_flight(world, engine)
    [info] = engine.store.list_runs()
    assert info.status is rac.RunStatus.COMPLETED  # marked after the flight's call
    engine.store.close()

    later = _engine(log)  # the app started again
    resumed, model = trip_agent(travel_kernel(world), [[CAR], "Sorry, no car."])
    enable_rac(resumed, rac=later)
    await resumed.get_response(thread=ChatHistoryAgentThread(
        chat_history=ChatHistory.restore_chat_history(saved.serialize())))

    assert world.live() == [], "the flight booked before the cut stayed live"
    told = model.tool_results()[-1]
    assert "book_flight FL-101" in told, told
    [run] = later.store.list_runs()
    assert run.run_id == info.run_id and run.status is rac.RunStatus.COMPENSATED
    later.store.close()


async def test_a_finished_turn_resumed_from_its_history_opens_a_run_of_its_own(
        tmp_path: Path) -> None:
    """A saved turn that ended with the model's answer is not cut short: resuming its history
    starts new work, in a run of its own; a failure there leaves the finished turn's flight
    booked, as every later turn does."""
    world = TravelWorld()
    world.fail("book_car", "permanent", message="no cars")
    engine = rac.RAC(store=f"sqlite:///{tmp_path / 'rac.db'}",
                     compensations=TRAVEL_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                     load_entrypoints=False)
    thread = ChatHistoryAgentThread()
    agent, _ = trip_agent(travel_kernel(world), [[FLIGHT], "Flight booked."])
    enable_rac(agent, rac=engine)
    await agent.get_response(messages="A flight.", thread=thread)
    saved = ChatHistory(messages=[m async for m in thread.get_messages()])

    resumed, _ = trip_agent(travel_kernel(world), [[CAR], "Sorry, no car."])
    enable_rac(resumed, rac=engine)
    await resumed.get_response(thread=ChatHistoryAgentThread(
        chat_history=ChatHistory.restore_chat_history(saved.serialize())))

    assert [b["kind"] for b in world.live()] == ["flight"]
    first, second = sorted(engine.store.list_runs(), key=lambda r: r.created_at)
    assert first.status is rac.RunStatus.COMPLETED
    assert second.status is rac.RunStatus.COMPENSATED
    engine.store.close()


async def test_a_history_whose_run_another_process_holds_is_not_carried_on_twice(
        tmp_path: Path) -> None:
    """The saved history restored while another live process still works on its run (it
    holds the run's lease): the restored turn's calls are refused, the model told why, and
    nothing is booked by a second process on one run."""
    world = TravelWorld()
    engine = _engine(f"sqlite:///{tmp_path / 'rac.db'}")
    saved = await _cut_short_after_a_flight(world, engine)
    [info] = engine.store.list_runs()
    # Another machine's process carries the run on (its lease has ten minutes to go).
    assert engine.store.claim_run(info.run_id, "elsewhere:4242:worker", engine.clock.now(),
                                  600.0)

    resumed, model = trip_agent(travel_kernel(world), [[HOTEL], "I could not book it."])
    enable_rac(resumed, rac=engine)
    await resumed.get_response(thread=ChatHistoryAgentThread(
        chat_history=ChatHistory.restore_chat_history(saved.serialize())))

    assert world.calls.get("book_hotel", 0) == 0
    told = model.tool_results()[-1]
    assert told.startswith("RAC: not run: travel-book_hotel belongs to work another process"), \
        told
    engine.store.close()
