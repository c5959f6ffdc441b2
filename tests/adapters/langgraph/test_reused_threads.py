"""A thread id used again for a new conversation never meets the old one's run (issue 29): a
restarted ``InMemorySaver``, a thread deleted and reused, two agents sharing a session id over
one log. The new conversation's calls run (nothing is answered from the old log) and its
failure undoes only what it did."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langgraph.checkpoint.memory import InMemorySaver

import rac
from rac.testing import TravelWorld
from rac_langgraph import RACMiddleware
from tests.adapters.langgraph.support import (
    CAR,
    FLIGHT,
    HOTEL,
    call,
    engine,
    errors,
    model,
    say,
    tool_messages,
    turn,
    world_tools,
)


def _conversation(eng: rac.RAC, world: TravelWorld, saver: InMemorySaver, *turns: Any) -> Any:
    m = model(*turns)
    agent = create_agent(m, world_tools(world), middleware=[RACMiddleware(rac=eng)],
                         checkpointer=saver)
    return m, agent


@pytest.mark.parametrize("variant", ["saver restarted", "thread deleted", "shared session"])
@pytest.mark.parametrize("use_async", [False, True])
async def test_a_new_conversation_on_a_used_thread_id_is_a_new_run(
        tmp_path: Path, variant: str, use_async: bool) -> None:
    world = TravelWorld()
    world.fail("book_car", "permanent", message="no cars left")
    log = f"sqlite:///{tmp_path / 'rac.db'}"
    cfg: Any = {"configurable": {"thread_id": "session-1"}}
    user: Any = {"messages": [("user", "Book my trip")]}

    # The first conversation books a flight and a hotel and ends well.
    eng1 = engine(store=log)
    saver1 = InMemorySaver()
    _, first = _conversation(eng1, world, saver1, turn(call("book_flight", **FLIGHT)),
                             turn(call("book_hotel", **HOTEL)), say("Booked."))
    await first.ainvoke(user, cfg) if use_async else first.invoke(user, cfg)
    [flight, hotel] = [b["booking_id"] for b in world.live()]
    # The passenger cancels the flight by phone; the hotel stays.
    world.cancel_flight(flight)

    if variant == "saver restarted":  # a new process: a fresh engine and InMemorySaver
        eng2, saver2 = engine(store=log), InMemorySaver()
    elif variant == "thread deleted":  # the same process, the thread deleted and reused
        saver1.delete_thread("session-1")
        eng2, saver2 = eng1, saver1
    else:  # another agent with its own checkpointer, the same session id and log
        eng2, saver2 = eng1, InMemorySaver()
    m2, second = _conversation(eng2, world, saver2, turn(call("book_flight", **FLIGHT)),
                               turn(call("book_car", **CAR)), say("No car; nothing booked."))
    await second.ainvoke(user, cfg) if use_async else second.invoke(user, cfg)

    # The new flight was really booked (not answered from the old log), and undone when the
    # car failed; the first conversation's hotel was not touched.
    assert world.calls["book_flight"] == 2
    [new_flight] = [b["booking_id"] for b in world.bookings()
                    if b["kind"] == "flight" and b["booking_id"] != flight]
    assert [b["booking_id"] for b in world.live()] == [hotel]
    assert world.calls.get("cancel_hotel") is None
    flight_answer = tool_messages(m2.seen[1])[0]
    assert new_flight in str(flight_answer.content), flight_answer.content
    [report] = errors(m2.seen[-1])
    assert f"book_flight {new_flight}" in str(report.content), report.content
    assert hotel not in str(report.content) and flight not in str(report.content)
    runs = eng2.store.list_runs()
    assert sorted(str(i.status) for i in runs) == ["compensated", "completed"]
    if eng2 is not eng1:
        eng2.close()
    eng1.close()
