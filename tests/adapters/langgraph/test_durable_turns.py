"""Issue 14: one truth with the thread's checkpoint. Turn runs follow LangGraph's invocations
(durable with the thread), repeated calls are answered exactly once, Command results are read
by their tool_call_id, and hand-offs are control flow."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Annotated, Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import MessagesState
from langgraph.types import Command, RetryPolicy, interrupt

import rac
from rac.testing import (
    TRAVEL_COMPENSATIONS,
    TRAVEL_READ_ONLY,
    TravelWorld,
    VirtualClock,
    assert_no_live_effects,
)
from rac_langgraph import RACMiddleware, tool_node
from tests.adapters.langgraph import support as lg


def _sqlite_engine(path: Path) -> rac.RAC:
    return rac.RAC(compensations=TRAVEL_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                   store=f"sqlite:///{path}", clock=VirtualClock(), load_entrypoints=False)


def test_an_invocation_without_a_human_message_is_a_turn_of_its_own() -> None:
    """A system-triggered turn (new input that is an AI message) failing must not undo the
    previous turn's completed booking."""
    world = TravelWorld()
    world.fail("book_car", "permanent", message="no cars left")
    eng = lg.engine()
    m = lg.model(lg.turn(lg.call("book_flight", **lg.FLIGHT)), lg.say("flight booked"),
                 lg.turn(lg.call("book_car", **lg.CAR)), lg.say("no car"))
    agent = create_agent(m, lg.world_tools(world), middleware=[RACMiddleware(rac=eng)],
                         checkpointer=InMemorySaver())
    cfg: Any = {"configurable": {"thread_id": "t-system"}}
    agent.invoke({"messages": [("user", "book a flight")]}, cfg)
    agent.invoke({"messages": [AIMessage("Reminder: the user also wants a car.")]}, cfg)

    assert [b["kind"] for b in world.live()] == ["flight"]
    runs = {i.run_id: i.status for i in eng.store.list_runs()}
    assert sorted(map(str, runs.values())) == ["compensated", "completed"]
    by_tool = {r.tool: r for r in lg.records(eng)}
    assert by_tool["book_flight"].status is rac.RecordStatus.COMPLETED
    assert by_tool["book_flight"].run_id != by_tool["book_car"].run_id
    [report] = lg.errors(m.seen[-1])
    assert "cancel_flight" not in report.content


def _approved_hotel(world: TravelWorld) -> BaseTool:
    @tool
    def book_hotel(guest: str, city: str, nights: int) -> dict[str, Any]:
        """Book a hotel once a person approved it."""
        if interrupt({"approve": f"{nights} nights in {city}"}) != "yes":
            raise rac.PermanentError("not approved")
        return world.book_hotel(guest, city, nights)

    return book_hotel


def _hand_built_graph(world: TravelWorld, m: Any, eng: rac.RAC, saver: Any) -> Any:
    """A StateGraph whose one ToolNode runs all the calls of a model message in one task:
    LangGraph re-runs the whole node when it resumes after an interrupt in one of them."""
    tools = [*lg.world_tools(world, ["book_flight", "cancel_flight", "cancel_hotel", "book_car",
                                     "cancel_car"]), _approved_hotel(world)]
    return lg.agent_graph(m, tool_node(tools, rac=eng), checkpointer=saver)


def test_resume_in_a_fresh_process_continues_the_turn_and_never_repeats_a_booking(
        tmp_path: Path) -> None:
    """The flight is booked, the hotel waits for approval; the process restarts (new engine,
    graph and checkpointer objects over the same files) and the thread resumes. LangGraph
    re-runs the tool node, flight included: RAC answers the flight from its log instead of
    booking it again, and the turn's run goes on, so the car's failure undoes both."""
    world = TravelWorld(str(tmp_path / "world.db"))
    world.fail("book_car", "permanent", message="no cars left")
    log, checkpoints = tmp_path / "rac.db", tmp_path / "threads.db"
    cfg: Any = {"configurable": {"thread_id": "t-restart"}}
    script = [lg.turn(lg.call("book_flight", **lg.FLIGHT), lg.call("book_hotel", **lg.HOTEL)),
              lg.turn(lg.call("book_car", **lg.CAR)), lg.say("no car: everything is undone")]

    with sqlite3.connect(checkpoints, check_same_thread=False) as conn:
        first = _hand_built_graph(world, lg.model(*script), _sqlite_engine(log),
                                  SqliteSaver(conn))
        out = first.invoke({"messages": [HumanMessage("trip", id="h-1")]}, cfg)
    assert out["__interrupt__"][0].value == {"approve": "2 nights in Paris"}
    assert world.calls["book_flight"] == 1

    eng = _sqlite_engine(log)  # "the fresh process"
    m = lg.model(*script[1:])
    with sqlite3.connect(checkpoints, check_same_thread=False) as conn:
        graph = _hand_built_graph(world, m, eng, SqliteSaver(conn))
        out = graph.invoke(Command(resume="yes"), cfg)

    assert world.calls["book_flight"] == 1  # answered from the log, not booked again
    [info] = eng.store.list_runs()  # one turn, one run, across the restart
    assert sorted(lg.actions(eng.store.get_records(info.run_id))) == [
        ("book_car", "failed"), ("book_flight", "compensated"), ("book_hotel", "compensated"),
        ("book_hotel", "failed")]  # the hotel's first attempt paused for approval
    assert_no_live_effects(world)
    flight_told = [t for t in m.seen[0] if isinstance(t, ToolMessage) and t.name == "book_flight"]
    assert "FL-101" in str(flight_told[-1].content)
    assert out["messages"][-1].content == "no car: everything is undone"


def test_a_node_retried_by_langgraph_books_once() -> None:
    """A tool node whose step fails after its tools ran is retried by LangGraph's retry
    policy with the same tool calls: RAC answers them from the first run, booking once."""
    world = TravelWorld()
    eng = lg.engine()
    node = tool_node(lg.world_tools(world, ["book_flight", "cancel_flight"]), rac=eng)
    lost = [True]

    def tools(state: MessagesState, config: RunnableConfig) -> Any:
        out = node.invoke(state, config)
        if lost.pop() if lost else False:
            raise ConnectionError("the step's result was lost")
        return out

    m = lg.model(lg.turn(lg.call("book_flight", **lg.FLIGHT)), lg.say("booked"))
    graph = lg.agent_graph(m, tools, checkpointer=InMemorySaver(),
                           retry_policy=RetryPolicy(retry_on=ConnectionError, max_attempts=2))
    out = graph.invoke(
        {"messages": [("user", "trip")]}, {"configurable": {"thread_id": "t-retry"}})
    assert world.calls["book_flight"] == 1
    assert [b["kind"] for b in world.live()] == ["flight"]
    assert [r.tool for r in lg.records(eng)] == ["book_flight"]
    assert "FL-101" in str(out["messages"][2].content)


def test_a_command_result_is_read_by_its_tool_call_id() -> None:
    """A tool returning a Command whose update holds the history: the log takes the message
    answering the call, so the rollback cancels the hotel with the hotel's own booking id."""
    world = TravelWorld()
    world.fail("book_car", "permanent", message="no cars left")
    eng = lg.engine()

    @tool
    def book_hotel(guest: str, city: str, nights: int,
                   tool_call_id: Annotated[str, InjectedToolCallId]) -> Command[Any]:
        """Book a hotel and record it in the conversation."""
        booked = world.book_hotel(guest, city, nights)
        history = ToolMessage('{"booking_id": "FL-101"}', tool_call_id="earlier-call",
                              name="book_flight")
        answer = ToolMessage(f'{{"booking_id": "{booked["booking_id"]}"}}',
                             tool_call_id=tool_call_id, name="book_hotel")
        return Command(update={"messages": [history, answer]})

    m = lg.model(lg.turn(lg.call("book_flight", **lg.FLIGHT)),
                 lg.turn(lg.call("book_hotel", **lg.HOTEL)),
                 lg.turn(lg.call("book_car", **lg.CAR)), lg.say("sorry"))
    tools = [*lg.world_tools(world, ["book_flight", "cancel_flight", "cancel_hotel", "book_car",
                                     "cancel_car"]), book_hotel]
    create_agent(m, tools, middleware=[RACMiddleware(rac=eng)]).invoke(
        {"messages": [("user", "trip")]})
    assert_no_live_effects(world)
    comps = [(r.tool, r.args) for r in lg.records(eng) if r.kind is rac.RecordKind.COMPENSATION]
    assert comps == [("cancel_hotel", {"booking_id": "HT-102"}),
                     ("cancel_flight", {"booking_id": "FL-101"})]
    assert world.calls["cancel_flight"] == 1


def test_swarm_hand_offs_are_control_flow_without_being_listed() -> None:
    """A langgraph-swarm graph: the flights agent hands over to the hotels agent, whose
    failure undoes the flight; the hand-off is never reported as still live."""
    from langgraph_swarm import create_handoff_tool, create_swarm

    world = TravelWorld()
    world.fail("book_hotel", "permanent", message="no rooms")
    eng = lg.engine()
    flights_model = lg.model(lg.turn(lg.call("book_flight", **lg.FLIGHT)),
                             lg.turn(lg.call("transfer_to_hotels")))
    hotels_model = lg.model(lg.turn(lg.call("book_hotel", **lg.HOTEL)), lg.say("nothing is booked"))
    flights = create_agent(flights_model, [*lg.world_tools(world, ["book_flight",
                                                                   "cancel_flight"]),
                                           create_handoff_tool(agent_name="hotels")],
                           name="flights", middleware=[RACMiddleware(rac=eng)])
    hotels = create_agent(hotels_model, lg.world_tools(world, ["book_hotel", "cancel_hotel",
                                                               "cancel_flight"]),
                          name="hotels", middleware=[RACMiddleware(rac=eng)])
    app = create_swarm([flights, hotels], default_active_agent="flights").compile(
        checkpointer=InMemorySaver())
    app.invoke({"messages": [("user", "trip")]}, {"configurable": {"thread_id": "t-swarm"}})

    assert_no_live_effects(world)
    [report] = lg.errors(hotels_model.seen[-1])
    assert "transfer_to_hotels" not in report.content
    assert "book_flight FL-101" in report.content
    [info] = eng.store.list_runs()
    assert info.status is rac.RunStatus.COMPENSATED


def test_a_tool_returning_a_parent_command_is_a_hand_off() -> None:
    """A hand-off tool of one's own (no hand-off metadata) is recognised by its result,
    ``Command(graph=Command.PARENT)``: control flow, never compensated or reported live."""
    from langgraph_swarm import create_handoff_tool, create_swarm

    world = TravelWorld()
    world.fail("book_hotel", "permanent", message="no rooms")
    eng = lg.engine()

    @tool
    def ask_hotels(tool_call_id: Annotated[str, InjectedToolCallId]) -> Command[Any]:
        """Hand the conversation to the hotels agent."""
        answer = ToolMessage("handing over to hotels", tool_call_id=tool_call_id,
                             name="ask_hotels")
        return Command(goto="hotels", graph=Command.PARENT,
                       update={"messages": [answer], "active_agent": "hotels"})

    flights_model = lg.model(lg.turn(lg.call("book_flight", **lg.FLIGHT)),
                             lg.turn(lg.call("ask_hotels")))
    hotels_model = lg.model(lg.turn(lg.call("book_hotel", **lg.HOTEL)), lg.say("nothing is booked"))
    flights = create_agent(flights_model, [*lg.world_tools(world, ["book_flight",
                                                                   "cancel_flight"]),
                                           ask_hotels],
                           name="flights", middleware=[RACMiddleware(rac=eng)])
    hotels = create_agent(hotels_model, [*lg.world_tools(world, ["book_hotel", "cancel_hotel",
                                                                 "cancel_flight"]),
                                         create_handoff_tool(agent_name="flights")],
                          name="hotels", middleware=[RACMiddleware(rac=eng)])
    app = create_swarm([flights, hotels], default_active_agent="flights").compile(
        checkpointer=InMemorySaver())
    app.invoke({"messages": [("user", "trip")]}, {"configurable": {"thread_id": "t-own"}})

    assert_no_live_effects(world)
    [report] = lg.errors(hotels_model.seen[-1])
    assert "ask_hotels" not in report.content
    hand_off = [r for r in lg.records(eng) if r.tool == "ask_hotels"]
    assert [r.note for r in hand_off] == ["passthrough"]
    [info] = eng.store.list_runs()
    assert info.status is rac.RunStatus.COMPENSATED
