"""``Send`` branches of one invocation are one run, with or without a checkpointer (issue 29):
a branch's failure undoes what the other branches booked."""

from __future__ import annotations

import operator
import time
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, AnyMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Send

import rac
from rac.testing import TravelWorld
from rac_langgraph import tool_node
from tests.adapters.langgraph.support import CAR, FLIGHT, HOTEL, call, engine, world_tools


class Trip(TypedDict):
    bookings: list[dict[str, Any]]
    messages: Annotated[list[AnyMessage], add_messages]
    done: Annotated[list[str], operator.add]


def _fan(state: Trip) -> list[Send]:
    """One branch per booking, each a model message with one tool call (no human message)."""
    return [Send("tools", {"messages": [AIMessage(content="", tool_calls=[b])]})
            for b in state["bookings"]]


@pytest.mark.parametrize("checkpointer", [False, True])
def test_send_branches_are_one_run(checkpointer: bool) -> None:
    world = TravelWorld()
    world.fail("book_car", "permanent", message="no cars left")

    def car_after_the_others(args: dict[str, Any]) -> None:
        deadline = time.monotonic() + 60  # the car fails once flight and hotel are booked
        while len(world.live()) < 2 and time.monotonic() < deadline:
            time.sleep(0.005)

    world.on_call("book_car", car_after_the_others)
    eng = engine()
    g = StateGraph(Trip)
    g.add_node("tools", tool_node(world_tools(world), rac=eng, agent_id="fan"))
    g.add_conditional_edges(START, _fan, ["tools"])
    graph = g.compile(checkpointer=InMemorySaver()) if checkpointer else g.compile()
    cfg: Any = {"configurable": {"thread_id": "t-send"}} if checkpointer else {}
    out = graph.invoke({"bookings": [call("book_flight", **FLIGHT), call("book_hotel", **HOTEL),
                                     call("book_car", **CAR)], "messages": [], "done": []},
                       cfg)

    assert world.live() == []  # the car's failure undid the other branches' bookings
    runs = eng.store.list_runs()
    assert len(runs) == 1, [(i.run_id, str(i.status)) for i in runs]
    assert runs[0].status is rac.RunStatus.COMPENSATED
    [report] = [m for m in out["messages"] if getattr(m, "status", None) == "error"]
    assert "book_flight FL-" in str(report.content) and "book_hotel HT-" in str(report.content)
