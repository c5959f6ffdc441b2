"""LangGraph's node cache on a RAC tool node (``rac_langgraph.tool_cache_policy``): a repeated
read is served from the cache, but never one made before a rollback."""

from __future__ import annotations

from typing import Any

from langchain_core.tools import StructuredTool
from langgraph.cache.memory import InMemoryCache

import rac
from rac.testing import TRAVEL_READ_ONLY, TravelWorld
from rac_langgraph import tool_cache_policy, tool_node
from tests.adapters.langgraph.support import (
    FLIGHT,
    agent_graph,
    call,
    engine,
    model,
    say,
    tool_messages,
    turn,
    world_tools,
)

READ = {"booking_id": "FL-101"}


def _engine_and_graph(world: TravelWorld, m: Any) -> tuple[rac.RAC, Any]:
    eng = engine(read_only=[*TRAVEL_READ_ONLY, "get_booking"], tools=world.tools())
    tools = [*world_tools(world), StructuredTool.from_function(world.get_booking)]
    return eng, agent_graph(m, tool_node(tools, rac=eng), cache_policy=tool_cache_policy(),
                            cache=InMemoryCache())


def _graph(world: TravelWorld, m: Any) -> Any:
    return _engine_and_graph(world, m)[1]


def test_a_repeated_read_is_served_from_the_cache() -> None:
    """Two turns reading the same booking: the second is answered by LangGraph's cache, not
    the tool (the policy keys on the call, not on its id)."""
    world = TravelWorld()
    graph = _graph(world, model(turn(call("book_flight", **FLIGHT)),
                                turn(call("get_booking", **READ)), say("Booked."),
                                turn(call("get_booking", **READ)), say("Still booked.")))
    graph.invoke({"messages": [("user", "book and check")]})
    out = graph.invoke({"messages": [("user", "check again")]})
    assert world.calls["get_booking"] == 1  # the second read came from LangGraph's cache
    assert "live" in str(tool_messages(out["messages"])[-1].content)


def test_a_read_from_before_a_rollback_is_read_again() -> None:
    """A turn books and reads; an operator undoes it; the next turn's same read runs again
    and sees the booking cancelled, never the cached "live"."""
    world = TravelWorld()
    eng, graph = _engine_and_graph(world, model(
        turn(call("book_flight", **FLIGHT)), turn(call("get_booking", **READ)), say("Booked."),
        turn(call("get_booking", **READ)), say("It was cancelled.")))
    graph.invoke({"messages": [("user", "book and check")]})
    [info] = eng.store.list_runs()
    eng.undo(info.run_id, why="called off", by="operator", unchecked=True)
    out = graph.invoke({"messages": [("user", "check again")]})
    assert world.calls["get_booking"] == 2
    after = str(tool_messages(out["messages"])[-1].content)
    assert "cancelled" in after and "live" not in after, after
