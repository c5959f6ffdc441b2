"""Async agents, interrupt() inside a tool, and multi-turn threads with a checkpointer."""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command, interrupt

import rac
from rac.testing import TravelWorld, assert_no_live_effects, assert_rollback_order
from rac_langgraph import RACMiddleware
from tests.adapters.langgraph import support as lg


async def test_async_agent_rolls_back_and_reports() -> None:
    world = TravelWorld()
    world.fail("book_car", "permanent", message="no cars left")
    eng = lg.engine()
    m = lg.model(lg.turn(lg.call("book_flight", **lg.FLIGHT)),
                 lg.turn(lg.call("book_hotel", **lg.HOTEL)),
                 lg.turn(lg.call("book_car", driver="ann", city="Paris")), lg.say("sorry"))
    agent = create_agent(m, lg.world_tools(world), middleware=[RACMiddleware(rac=eng)])
    await agent.ainvoke({"messages": [("user", "trip")]})
    assert_no_live_effects(world)
    assert_rollback_order(lg.records(eng), ["book_hotel", "book_flight"])
    [report] = lg.errors(m.seen[-1])
    assert "no cars left" in report.content and "cancel_hotel" in report.content


def _approved_flight(world: TravelWorld) -> BaseTool:
    @tool
    def book_flight(passenger: str, origin: str, dest: str) -> dict[str, Any]:
        """Book a flight once a person approved it."""
        if interrupt({"approve": f"{origin}->{dest} for {passenger}"}) != "yes":
            raise rac.PermanentError("not approved")
        return world.book_flight(passenger, origin, dest)

    return book_flight


@pytest.mark.parametrize("use_async", [False, True])
async def test_interrupt_in_a_tool_passes_through_and_resumes_in_the_same_run(
        use_async: bool) -> None:
    world = TravelWorld()
    world.fail("book_car", "permanent", message="no cars left")
    eng = lg.engine()
    tools = [*lg.world_tools(world, ["book_hotel", "cancel_hotel", "book_car", "cancel_car",
                                     "cancel_flight"]), _approved_flight(world)]
    m = lg.model(lg.turn(lg.call("book_hotel", **lg.HOTEL)),
                 lg.turn(lg.call("book_flight", **lg.FLIGHT)),
                 lg.turn(lg.call("book_car", driver="ann", city="Paris")),
                 lg.say("no car, all undone"))
    agent = create_agent(m, tools, middleware=[RACMiddleware(rac=eng)],
                         checkpointer=InMemorySaver())
    cfg: Any = {"configurable": {"thread_id": "t-interrupt"}}
    first: Any = {"messages": [("user", "trip")]}

    out = await agent.ainvoke(first, cfg) if use_async else agent.invoke(first, cfg)

    # Paused for approval: not a failure, nothing rolled back, the hotel is live.
    assert out["__interrupt__"][0].value == {"approve": "LHR->CDG for ann"}
    assert [b["kind"] for b in world.live()] == ["hotel"]
    paused = [r for r in lg.records(eng) if r.tool == "book_flight"]
    assert [(r.status, r.note) for r in paused] == [(rac.RecordStatus.FAILED, "passthrough")]

    resume = Command(resume="yes")
    out = await agent.ainvoke(resume, cfg) if use_async else agent.invoke(resume, cfg)

    # The flight ran on resume; the car then failed, and the rollback covered the whole turn,
    # before and after the interrupt.
    [info] = eng.store.list_runs()
    recs = eng.store.get_records(info.run_id)
    assert lg.actions(recs) == [("book_hotel", "compensated"), ("book_flight", "failed"),
                             ("book_flight", "compensated"), ("book_car", "failed")]
    assert_rollback_order(recs, ["book_flight", "book_hotel"])
    assert_no_live_effects(world)
    flight_answer = [t for t in m.seen[2] if getattr(t, "name", None) == "book_flight"]
    assert flight_answer[0].status == "success" and "FL-" in flight_answer[0].content
    assert out["messages"][-1].content == "no car, all undone"


def test_later_turn_failure_leaves_earlier_turn_alone() -> None:
    world = TravelWorld()
    world.fail("book_car", "permanent", message="no cars left")
    eng = lg.engine()
    m = lg.model(lg.turn(lg.call("book_flight", **lg.FLIGHT)),
                 lg.turn(lg.call("book_hotel", **lg.HOTEL)),
                 lg.say("flight and hotel booked"),
                 lg.turn(lg.call("get_weather", city="Paris")), lg.say("sunny"),
                 lg.turn(lg.call("charge_card", customer="ann", amount=90.0)),
                 lg.turn(lg.call("book_car", driver="ann", city="Paris")),
                 lg.say("no car; card refunded"))
    agent = create_agent(m, lg.world_tools(world), middleware=[RACMiddleware(rac=eng)],
                         checkpointer=InMemorySaver())
    cfg: Any = {"configurable": {"thread_id": "t-turns"}}
    agent.invoke({"messages": [("user", "book flight and hotel")]}, cfg)
    agent.invoke({"messages": [("user", "weather?")]}, cfg)
    out = agent.invoke({"messages": [("user", "and a car, paid by card")]}, cfg)

    runs = {i.run_id: i for i in eng.store.list_runs()}
    assert len(runs) == 3  # one run per turn
    by_tool = {r.tool: r for r in lg.records(eng) if r.kind is rac.RecordKind.ACTION}
    first_run = by_tool["book_flight"].run_id
    assert by_tool["book_hotel"].run_id == first_run
    assert runs[first_run].status is rac.RunStatus.COMPLETED
    assert by_tool["book_flight"].status is rac.RecordStatus.COMPLETED
    assert by_tool["charge_card"].status is rac.RecordStatus.COMPENSATED
    assert runs[by_tool["charge_card"].run_id].status is rac.RunStatus.COMPENSATED
    assert sorted(b["kind"] for b in world.live()) == ["flight", "hotel"]
    [report] = lg.errors(m.seen[-1])
    assert "charge_card" in report.content and "cancel_flight" not in report.content
    # The thread's history is intact across the three turns.
    assert [msg.content for msg in out["messages"] if msg.type == "human"] == [
        "book flight and hotel", "weather?", "and a car, paid by card"]
