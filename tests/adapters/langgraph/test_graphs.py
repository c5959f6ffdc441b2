"""Hand-built StateGraphs with rac_langgraph.tool_node, and a hand-off graph of two agents."""

from __future__ import annotations

import json
from typing import Annotated, Any

from langchain.agents import create_agent
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, InjectedToolCallId, tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command

import rac
from rac.testing import (
    TRAVEL_COMPENSATIONS,
    TravelWorld,
    assert_no_live_effects,
    assert_rollback_order,
)
from rac_langgraph import RACToolCalls, tool_node
from tests.adapters.langgraph import support as lg


def _graph(m: lg.ScriptedModel, tools: list[BaseTool], eng: rac.RAC, agent_id: str) -> Any:
    return lg.agent_graph(m, tool_node(tools, rac=eng, agent_id=agent_id))


def _odd_tools(world: TravelWorld) -> list[BaseTool]:
    """Bookings whose results come as content blocks and as a Command."""

    @tool
    def book_flight_blocks(passenger: str, origin: str, dest: str) -> list[dict[str, str]]:
        """Book a flight; the result comes as text content blocks."""
        return [{"type": "text", "text": json.dumps(world.book_flight(passenger, origin, dest))}]

    @tool
    def book_hotel_command(guest: str, city: str, nights: int,
                           tool_call_id: Annotated[str, InjectedToolCallId]) -> Command[Any]:
        """Book a hotel; the result comes as a Command updating the state."""
        booking = world.book_hotel(guest, city, nights)
        return Command(update={"messages": [ToolMessage(json.dumps(booking),
                                                        tool_call_id=tool_call_id)]})

    return [book_flight_blocks, book_hotel_command]


def test_state_graph_tool_node_rolls_back_content_block_and_command_results() -> None:
    world = TravelWorld()
    world.fail("book_car", "permanent", message="no cars left")
    eng = lg.engine(compensations={**TRAVEL_COMPENSATIONS, "book_flight_blocks": "cancel_flight",
                                   "book_hotel_command": "cancel_hotel"})
    m = lg.model(lg.turn(lg.call("book_flight_blocks", **lg.FLIGHT),
                         lg.call("book_hotel_command", guest="ann", city="Paris", nights=1)),
                 lg.turn(lg.call("book_car", driver="ann", city="Paris")), lg.say("sorry"))
    graph = _graph(m, [*lg.world_tools(world), *_odd_tools(world)], eng, "planner")

    out = graph.invoke({"messages": [("user", "trip")]})

    assert_no_live_effects(world)
    recs = lg.records(eng)
    assert {r.agent_id for r in recs} == {"planner"}
    flight = next(r for r in recs if r.tool == "book_flight_blocks")
    assert flight.result["booking_id"].startswith("FL-")  # the blocks were read as data
    assert sorted(r.tool for r in recs if r.kind is rac.RecordKind.COMPENSATION) == [
        "cancel_flight", "cancel_hotel"]
    [report] = lg.errors(out["messages"])
    assert "no cars left" in report.content and report.name == "book_car"


async def test_state_graph_tool_node_async() -> None:
    world = TravelWorld()
    world.fail("book_hotel", "transient", times=1)
    world.fail("book_car", "permanent")
    eng = lg.engine()
    m = lg.model(lg.turn(lg.call("book_flight", **lg.FLIGHT)),
                 lg.turn(lg.call("book_hotel", guest="ann", city="Rome", nights=3)),
                 lg.turn(lg.call("book_car", driver="ann", city="Rome")), lg.say("sorry"))
    graph = _graph(m, lg.world_tools(world), eng, "planner")
    await graph.ainvoke({"messages": [("user", "trip")]})
    assert world.calls["book_hotel"] == 2
    assert_rollback_order(lg.records(eng), ["book_hotel", "book_flight"])
    assert_no_live_effects(world)


def test_hand_built_graph_runs_are_completed_after_each_step() -> None:
    world = TravelWorld()
    eng = lg.engine()
    calls = RACToolCalls(eng, agent_id="planner")
    node = tool_node(lg.world_tools(world), calls=calls)
    m = lg.model(lg.turn(lg.call("book_flight", **lg.FLIGHT)), lg.say("ok"))
    lg.agent_graph(m, node).invoke({"messages": [("user", "fly")]})
    # No end-of-turn hook in a hand-built graph: the run is completed after each tool step, so
    # `rac recover` never mistakes a finished turn for an abandoned one.
    [info] = eng.store.list_runs()
    assert info.status is rac.RunStatus.COMPLETED
    calls.close()
    again = eng.store.get_run(info.run_id)
    assert again is not None and again.status is rac.RunStatus.COMPLETED


def test_hand_off_graph_shares_one_engine_and_one_run() -> None:
    world = TravelWorld()
    world.fail("book_car", "permanent", message="no cars left")
    eng = lg.engine(read_only=["get_weather", "search_flights", "transfer_to_cars"])
    from rac_langgraph import RACMiddleware

    @tool
    def transfer_to_cars(tool_call_id: Annotated[str, InjectedToolCallId]) -> Command[Any]:
        """Hand the conversation to the car agent."""
        done = ToolMessage("Transferred to the car agent.", tool_call_id=tool_call_id)
        return Command(goto="cars", graph=Command.PARENT, update={"messages": [done]})

    flights_model = lg.model(lg.turn(lg.call("book_flight", **lg.FLIGHT)),
                             lg.turn(lg.call("book_hotel", guest="ann", city="Paris", nights=2)),
                             lg.turn(lg.call("transfer_to_cars")))
    cars_model = lg.model(lg.turn(lg.call("book_car", driver="ann", city="Paris")),
                          lg.say("No car: the flight and hotel were cancelled."))
    flights = create_agent(flights_model, [*lg.world_tools(world), transfer_to_cars],
                           middleware=[RACMiddleware(rac=eng)], name="flights")
    cars = create_agent(cars_model, lg.world_tools(world, ["book_car", "cancel_car"]),
                        middleware=[RACMiddleware(rac=eng)], name="cars")
    g = StateGraph(MessagesState)
    g.add_node("flights", flights, destinations=("cars",))
    g.add_node("cars", cars)
    g.add_edge(START, "flights")
    g.add_edge("cars", END)
    out = g.compile().invoke({"messages": [("user", "trip to Paris with a car")]})

    [info] = eng.store.list_runs()  # one log, one run for the whole turn
    recs = eng.store.get_records(info.run_id)
    assert [(r.tool, r.agent_id) for r in recs if r.kind is rac.RecordKind.ACTION] == [
        ("book_flight", "flights"), ("book_hotel", "flights"), ("transfer_to_cars", "flights"),
        ("book_car", "cars")]
    assert lg.actions(recs)[-1] == ("book_car", "failed")
    assert_rollback_order(recs, ["book_hotel", "book_flight"])
    assert_no_live_effects(world)
    [report] = lg.errors(cars_model.seen[-1])
    assert "cancel_hotel" in report.content and "transfer_to_cars" not in report.content
    assert out["messages"][-1].content.startswith("No car")
