"""A turn paused for a person and rolled back while it waits (an operator's ``rac undo``):
resumed in the same process, the turn learns of it from the log, and nothing the model asked
for before the rollback runs. Through ``create_agent`` with LangChain's own
``HumanInTheLoopMiddleware``, judged on the world's ledger and what the model was told."""

from __future__ import annotations

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

import rac
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld
from rac_langgraph import RACMiddleware
from rac_langgraph.testing import call, say, turn, world_tools
from tests.adapters.langgraph.support import CAR, FLIGHT, engine, model, tool_messages

CHARGE = {"customer": "ann", "amount": 420.0}


def test_calls_asked_for_before_the_undo_are_not_run() -> None:
    """Both calls of the paused model message (the charge waiting for approval and a car
    booked beside it) are answered with what was undone and not run; the model, told, books
    the flight again, which stays."""
    world = TravelWorld()
    eng = engine(store="memory://")
    m = model(turn(call("book_flight", **FLIGHT)),
              turn(call("charge_card", **CHARGE), call("book_car", **CAR)),
              turn(call("book_flight", **FLIGHT)), say("Booked your flight again."))
    agent = create_agent(m, world_tools(world), checkpointer=InMemorySaver(), middleware=[
        HumanInTheLoopMiddleware(interrupt_on={"charge_card": True}), RACMiddleware(rac=eng)])
    config = {"configurable": {"thread_id": "paused"}}
    paused = agent.invoke({"messages": [("user", "flight, car, and charge me")]}, config)
    assert "__interrupt__" in paused
    operator = rac.RAC(store=eng.store, compensations=TRAVEL_COMPENSATIONS,
                       read_only=TRAVEL_READ_ONLY, tools=world.tools(), clock=eng.clock,
                       load_entrypoints=False)
    [info] = eng.store.list_runs()
    operator.undo(info.run_id, why="called off", by="operator", unchecked=True)

    out = agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)

    assert world.calls.get("charge_card", 0) == 0 and world.calls.get("book_car", 0) == 0
    assert [(b["booking_id"], b["status"]) for b in world.bookings()] == [
        ("FL-101", "cancelled"), ("FL-102", "live")]  # booked again, knowingly
    answers = {t.name: str(t.content) for t in tool_messages(out["messages"])[1:3]}
    assert set(answers) == {"charge_card", "book_car"}
    assert all("was not run" in a for a in answers.values()), answers
    told_first = [a for a in answers.values() if "book_flight FL-101" in a]
    assert len(told_first) == 1, answers  # the news once, then the refusal alone
    assert out["messages"][-1].content == "Booked your flight again."
    assert eng.store.get_run(info.run_id).status is rac.RunStatus.COMPLETED


def test_a_pause_left_alone_resumes_as_before() -> None:
    """Without a rollback the check against the log changes nothing: the approved charge
    runs once in the paused turn's run."""
    world = TravelWorld()
    eng = engine(store="memory://")
    m = model(turn(call("book_flight", **FLIGHT)), turn(call("charge_card", **CHARGE)),
              say("Booked and charged."))
    agent = create_agent(m, world_tools(world), checkpointer=InMemorySaver(), middleware=[
        HumanInTheLoopMiddleware(interrupt_on={"charge_card": True}), RACMiddleware(rac=eng)])
    config = {"configurable": {"thread_id": "paused"}}
    agent.invoke({"messages": [("user", "flight and charge me")]}, config)
    agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)

    assert world.calls["charge_card"] == 1
    assert sorted(b["kind"] for b in world.live()) == ["charge", "flight"]
    [info] = eng.store.list_runs()
    assert [r.tool for r in eng.store.get_records(info.run_id)] == ["book_flight",
                                                                     "charge_card"]
