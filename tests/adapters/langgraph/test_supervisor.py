"""A real ``langgraph-supervisor`` graph under RAC: worker agents built by ``create_agent``
(with :class:`RACMiddleware`) and by ``create_react_agent`` (with a RAC ``tool_node``), a
supervisor whose hand-off tools run under RAC without being declared anywhere, and scripted
models. A later worker's failure undoes an earlier worker's booking, and the report reaches the
model that has to replan."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from langchain.agents import create_agent
from langgraph.checkpoint.memory import InMemorySaver
from langgraph_supervisor import create_handoff_tool, create_supervisor

import rac
from rac.testing import TravelWorld, assert_no_live_effects
from rac_langgraph import RACMiddleware, tool_node
from tests.adapters.langgraph import support as lg

#: create_supervisor builds its supervisor with the deprecated create_react_agent itself.
pytestmark = pytest.mark.filterwarnings("ignore:create_react_agent has been moved")


def _react_agent(m: lg.ScriptedModel, tools: list[Any], eng: rac.RAC, name: str) -> Any:
    """A worker built by LangGraph's prebuilt ``create_react_agent`` around a RAC tool node."""
    with warnings.catch_warnings():  # create_react_agent is deprecated in favour of create_agent
        warnings.simplefilter("ignore", DeprecationWarning)
        from langgraph.prebuilt import create_react_agent

        return create_react_agent(m, tool_node(tools, rac=eng, agent_id=name), name=name)


def _supervisor(eng: rac.RAC, world: TravelWorld, hotels_kind: str) -> tuple[Any, ...]:
    sup_model = lg.model(lg.turn(lg.call("transfer_to_flights")),
                         lg.turn(lg.call("transfer_to_hotels")),
                         lg.say("The hotel failed; nothing is booked."))
    flights_model = lg.model(lg.turn(lg.call("book_flight", **lg.FLIGHT)),
                             lg.say("flight FL-101 booked"))
    hotels_model = lg.model(lg.turn(lg.call("book_hotel", **lg.HOTEL)),
                            lg.say("no rooms: nothing is booked"))
    flights = create_agent(flights_model, lg.world_tools(world, ["book_flight", "cancel_flight"]),
                           name="flights", middleware=[RACMiddleware(rac=eng)])
    hotel_tools = lg.world_tools(world, ["book_hotel", "cancel_hotel", "cancel_flight"])
    if hotels_kind == "create_agent":
        hotels = create_agent(hotels_model, hotel_tools, name="hotels",
                              middleware=[RACMiddleware(rac=eng)])
    else:
        hotels = _react_agent(hotels_model, hotel_tools, eng, "hotels")
    # The supervisor's own hand-off tools run in a RAC tool node too, and are declared nowhere.
    handoffs = tool_node([create_handoff_tool(agent_name="flights"),
                          create_handoff_tool(agent_name="hotels")], rac=eng,
                         agent_id="supervisor")
    app = create_supervisor([flights, hotels], model=sup_model, tools=handoffs).compile(
        checkpointer=InMemorySaver())
    return app, sup_model, hotels_model


@pytest.mark.parametrize("hotels_kind", ["create_agent", "create_react_agent"])
def test_a_later_workers_failure_undoes_an_earlier_workers_booking(hotels_kind: str) -> None:
    world = TravelWorld()
    world.fail("book_hotel", "permanent", message="no rooms")
    eng = lg.engine()
    app, sup_model, hotels_model = _supervisor(eng, world, hotels_kind)
    out = app.invoke({"messages": [("user", "flight and hotel to Paris")]},
                     {"configurable": {"thread_id": "t-supervisor"}})

    assert world.calls["book_flight"] == 1 and world.calls["cancel_flight"] == 1
    assert_no_live_effects(world)
    [info] = eng.store.list_runs()  # the supervisor and both workers: one turn, one run
    assert info.status is rac.RunStatus.COMPENSATED
    by_tool = {r.tool: r for r in lg.records(eng) if r.kind is rac.RecordKind.ACTION}
    assert by_tool["book_flight"].agent_id == "flights"
    assert by_tool["book_flight"].status is rac.RecordStatus.COMPENSATED
    assert by_tool["book_hotel"].agent_id == "hotels"
    # The hand-offs ran under RAC, recognised by their hand-off metadata as moving the
    # conversation only: read-only, never compensated, never reported live.
    hand_offs = [r for r in lg.records(eng) if r.tool.startswith("transfer_to_")]
    assert sorted(r.tool for r in hand_offs) == ["transfer_to_flights", "transfer_to_hotels"]
    assert all(r.agent_id == "supervisor" and r.read_only
               and r.status is rac.RecordStatus.COMPLETED for r in hand_offs)

    [report] = lg.errors(hotels_model.seen[-1])  # the hotels worker's model is told, and replans
    assert "book_flight FL-101 (via cancel_flight)" in report.content
    assert "transfer_to" not in report.content and "STILL LIVE" not in report.content
    assert "The world is back to how it was" in report.content
    # ...and the supervisor hears the worker's account, not "flight booked".
    assert "no rooms: nothing is booked" in [str(m.content) for m in sup_model.seen[-1]]
    assert out["messages"][-1].content == "The hotel failed; nothing is booked."


def test_a_supervisor_turn_that_succeeds_leaves_every_booking() -> None:
    """No failure: both workers' bookings stay, and the turn's run is completed."""
    world = TravelWorld()
    eng = lg.engine()
    app, _, _ = _supervisor(eng, world, "create_agent")
    app.invoke({"messages": [("user", "flight and hotel to Paris")]},
               {"configurable": {"thread_id": "t-supervisor-ok"}})
    assert sorted(b["kind"] for b in world.live()) == ["flight", "hotel"]
    [info] = eng.store.list_runs()
    assert info.status is rac.RunStatus.COMPLETED
