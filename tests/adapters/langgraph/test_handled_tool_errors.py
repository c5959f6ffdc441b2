"""A ``ToolNode`` that handles tool errors (``handle_tool_errors=True``, a message, a handler,
exception types) turns a tool's exception into an error message before any wrapper sees it;
RAC still judges the real exception (issue 29). A booking that committed and then timed out is
in doubt, never reported undone, and is not booked twice; sync and async."""

from __future__ import annotations

from typing import Any

import pytest

import rac
from rac.testing import TravelWorld
from rac_langgraph import tool_node
from tests.adapters.langgraph import support as lg


def _handler(e: Exception) -> str:
    return f"the tool failed: {e}"


FORMS: dict[str, Any] = {
    "True": True,
    "message": "The tool failed; try something else.",
    "handler": _handler,
    "type": TimeoutError,
    "types": (TimeoutError, ValueError),
}


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("use_async", [False, True])
async def test_a_timeout_after_commit_is_in_doubt_whatever_the_error_handling(
        form: str, use_async: bool) -> None:
    world = TravelWorld()
    world.fail("book_hotel", "timeout", times=1, phase="after")  # booked, then no answer
    eng = lg.engine()
    tools = lg.world_tools(world)
    m = lg.model(lg.turn(lg.call("book_flight", **lg.FLIGHT)),
                 lg.turn(lg.call("book_hotel", **lg.HOTEL)),
                 lg.say("I could not confirm the hotel."))
    graph = lg.agent_graph(m, tool_node(tools, rac=eng, agent_id="planner",
                                       handle_tool_errors=FORMS[form]))
    user: Any = {"messages": [("user", "a trip to Paris")]}
    await graph.ainvoke(user) if use_async else graph.invoke(user)

    assert world.calls["book_hotel"] == 1  # never retried blindly
    [report] = lg.errors(m.seen[-1])
    assert "MAY HAVE HAPPENED" in str(report.content), report.content
    assert "world is back" not in str(report.content)  # never a false all-clear
    [rec] = [r for r in lg.records(eng) if r.tool == "book_hotel"]
    # Judged from the timeout (it may have happened, and nothing says which booking to undo),
    # not from the ToolNode's message (a plain failure: "undone").
    assert rec.status is rac.RecordStatus.COMPENSATION_FAILED
    assert "may or may not have taken effect" in str(rec.error)
    [info] = eng.store.list_runs()
    assert info.status is rac.RunStatus.NEEDS_ATTENTION
    # The flight the turn booked first was undone; the hotel may be live and stays named.
    assert [b["kind"] for b in world.live()] == ["hotel"]
    assert world.calls.get("cancel_flight") == 1


@pytest.mark.parametrize("use_async", [False, True])
async def test_a_handled_permanent_failure_is_still_a_rollback(use_async: bool) -> None:
    world = TravelWorld()
    world.fail("book_car", "permanent", message="no cars left")
    eng = lg.engine()
    tools = lg.world_tools(world)
    m = lg.model(lg.turn(lg.call("book_flight", **lg.FLIGHT)),
                 lg.turn(lg.call("book_car", driver="ann", city="Paris")), lg.say("No car."))
    graph = lg.agent_graph(m, tool_node(tools, rac=eng, handle_tool_errors=True))
    user: Any = {"messages": [("user", "a trip to Paris")]}
    await graph.ainvoke(user) if use_async else graph.invoke(user)

    assert world.live() == []
    [report] = lg.errors(m.seen[-1])
    assert "no cars left" in str(report.content)
    assert "book_flight FL-101 (via cancel_flight)" in str(report.content), report.content
    [info] = eng.store.list_runs()
    assert info.status is rac.RunStatus.COMPENSATED
