"""When a create_agent turn's run is running and when completed: running while one of its tool
calls is (a crash there leaves it to ``rac recover``), completed after each tool step and when an
interrupt pauses the turn; a later failure in the turn still undoes all of it."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, interrupt

import rac
from rac.testing import TravelWorld
from rac_langgraph import RACMiddleware, RACToolCalls, tool_node
from tests.adapters.langgraph.support import (
    FLIGHT,
    HOTEL,
    ScriptedModel,
    call,
    engine,
    model,
    say,
    turn,
    world_tools,
)

USER = {"messages": [("user", "Book me a trip to Paris")]}


class WatchingModel(ScriptedModel):
    """A scripted model that notes the status of every run in the log at each of its calls (what
    the log would say if the process died during that model call), and can fail on one call."""

    eng: Any = None
    statuses: list[dict[str, str]] = []
    fail_on: int | None = None

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: Any = None, **kwargs: Any) -> ChatResult:
        self.statuses.append({i.run_id: str(i.status) for i in self.eng.store.list_runs()})
        if self.fail_on is not None and len(self.statuses) == self.fail_on:
            raise RuntimeError("the model provider went away")
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def _watching(eng: rac.RAC, *messages: Any, fail_on: int | None = None) -> WatchingModel:
    return WatchingModel(messages=iter(messages), eng=eng, statuses=[], fail_on=fail_on)


def _status(eng: rac.RAC) -> str:
    [info] = eng.store.list_runs()
    return str(info.status)


def _gated_flight(world: TravelWorld, gate: Callable[[], object]) -> BaseTool:
    """The world's book_flight as a LangChain tool that books once ``gate()`` returns."""

    @tool
    def book_flight(passenger: str, origin: str, dest: str) -> dict[str, Any]:
        """Book a flight (once the test lets it)."""
        gate()
        return world.book_flight(passenger, origin, dest)

    return book_flight


class RunWatchingWorld(TravelWorld):
    """The travel world, noting the status of every run in the log whenever a booking is made
    (what the log would say if the process died inside that tool call)."""

    eng: rac.RAC | None = None
    statuses: list[dict[str, str]]

    def book_hotel(self, guest: str, city: str, nights: int) -> dict[str, Any]:
        assert self.eng is not None
        self.statuses.append({i.run_id: str(i.status) for i in self.eng.store.list_runs()})
        return super().book_hotel(guest, city, nights)


@pytest.mark.parametrize("use_async", [False, True])
async def test_a_turn_runs_during_its_tool_calls_and_is_completed_after_each_step(
        use_async: bool) -> None:
    eng = engine()
    world = RunWatchingWorld()
    world.eng, world.statuses = eng, []
    m = _watching(eng, turn(call("book_flight", **FLIGHT)), turn(call("book_hotel", **HOTEL)),
                  turn(call("get_weather", city="Paris")), say("booked"))
    agent = create_agent(m, world_tools(world), middleware=[RACMiddleware(rac=eng)])

    await agent.ainvoke(USER) if use_async else agent.invoke(USER)

    # Before the first tool call there is no run. Each model call after a tool step sees the
    # step completed (as LangGraph's checkpoint holds it); the hotel was booked while the run
    # was running again, the same run: one run for the turn.
    assert m.statuses[0] == {}
    assert [list(s.values()) for s in m.statuses[1:]] == [["completed"]] * 3
    assert [list(s.values()) for s in world.statuses] == [["running"]]
    assert len({*m.statuses[1], *world.statuses[0]}) == 1
    assert _status(eng) == "completed"
    [info] = eng.store.list_runs()
    assert [r.tool for r in eng.store.get_records(info.run_id)] == [
        "book_flight", "book_hotel", "get_weather"]


def test_a_crash_inside_a_tool_call_leaves_the_run_running_for_recovery() -> None:
    world = TravelWorld()
    eng = engine()

    @tool
    def book_hotel(guest: str, city: str, nights: int) -> dict[str, Any]:
        """Book a hotel (the process dies during the call)."""
        raise KeyboardInterrupt

    m = _watching(eng, turn(call("book_flight", **FLIGHT)), turn(call("book_hotel", **HOTEL)),
                  say("never said"))
    agent = create_agent(m, [*world_tools(world, ["book_flight", "cancel_flight",
                                                  "cancel_hotel"]), book_hotel],
                         middleware=[RACMiddleware(rac=eng)])
    with pytest.raises(KeyboardInterrupt):
        agent.invoke(USER)

    # The flight is booked, the hotel call in doubt: the log says running, which recovery
    # finishes by undoing the turn.
    assert _status(eng) == "running"
    [info] = eng.store.list_runs()
    assert [(r.tool, r.status) for r in eng.store.get_records(info.run_id)] == [
        ("book_flight", rac.RecordStatus.COMPLETED), ("book_hotel", rac.RecordStatus.PENDING)]
    assert len(world.live()) == 1


def test_a_failure_after_a_completed_step_still_undoes_the_whole_turn() -> None:
    world = TravelWorld()
    world.fail("book_car", "permanent", message="no cars left")
    eng = engine()
    m = _watching(eng, turn(call("book_flight", **FLIGHT)), turn(call("book_hotel", **HOTEL)),
                  turn(call("book_car", driver="ann", city="Paris")), say("sorry"))
    agent = create_agent(m, world_tools(world), middleware=[RACMiddleware(rac=eng)])
    agent.invoke(USER)
    assert world.live() == []
    assert _status(eng) == "compensated"
    assert [list(s.values()) for s in m.statuses[1:3]] == [["completed"]] * 2


def test_a_turn_ending_on_a_tool_step_is_completed() -> None:
    world = TravelWorld()
    eng = engine()

    @tool(return_direct=True)
    def book_flight(passenger: str, origin: str, dest: str) -> dict[str, Any]:
        """Book a flight; its result is the agent's answer."""
        return world.book_flight(passenger, origin, dest)

    m = _watching(eng, turn(call("book_flight", **FLIGHT)))
    agent = create_agent(m, [book_flight, *world_tools(world, ["cancel_flight"])],
                         middleware=[RACMiddleware(rac=eng)])
    agent.invoke(USER)
    assert len(m.statuses) == 1  # no model call after the tool: the tool step ended the turn
    assert _status(eng) == "completed"


def test_each_turn_of_a_thread_is_completed_when_it_ends() -> None:
    world = TravelWorld()
    eng = engine()
    m = _watching(eng, turn(call("book_flight", **FLIGHT)), say("flight booked"),
                  turn(call("book_hotel", **HOTEL)), say("hotel booked"))
    agent = create_agent(m, world_tools(world), middleware=[RACMiddleware(rac=eng)],
                         checkpointer=InMemorySaver())
    cfg: Any = {"configurable": {"thread_id": "t-ends"}}
    agent.invoke({"messages": [("user", "a flight")]}, cfg)
    assert _status(eng) == "completed"
    agent.invoke({"messages": [("user", "and a hotel")]}, cfg)
    assert [str(i.status) for i in eng.store.list_runs()] == ["completed", "completed"]


def test_an_interrupted_turn_is_completed_while_paused_and_resumes_in_the_same_run() -> None:
    world = TravelWorld()
    eng = engine()

    @tool
    def book_hotel(guest: str, city: str, nights: int) -> dict[str, Any]:
        """Book a hotel once a person approved it."""
        interrupt("approve?")
        return world.book_hotel(guest, city, nights)

    m = _watching(eng, turn(call("book_flight", **FLIGHT)), turn(call("book_hotel", **HOTEL)),
                  say("booked"))
    agent = create_agent(m, [*world_tools(world, ["book_flight", "cancel_flight",
                                                  "cancel_hotel"]), book_hotel],
                         middleware=[RACMiddleware(rac=eng)], checkpointer=InMemorySaver())
    cfg: Any = {"configurable": {"thread_id": "t-paused"}}
    assert "__interrupt__" in agent.invoke(USER, cfg)
    # Paused for a person, maybe for days: a restart's `rac recover` must not undo the flight.
    assert _status(eng) == "completed"
    agent.invoke(Command(resume="yes"), cfg)
    assert _status(eng) == "completed"
    [info] = eng.store.list_runs()
    assert [(r.tool, r.status, r.note) for r in eng.store.get_records(info.run_id)] == [
        ("book_flight", rac.RecordStatus.COMPLETED, None),
        ("book_hotel", rac.RecordStatus.FAILED, "passthrough"),
        ("book_hotel", rac.RecordStatus.COMPLETED, None)]
    assert len(world.live()) == 2


def test_a_run_opened_by_the_caller_is_left_to_the_caller() -> None:
    world = TravelWorld()
    eng = engine()
    m = _watching(eng, turn(call("book_flight", **FLIGHT)), say("ok"))
    agent = create_agent(m, world_tools(world), middleware=[RACMiddleware(rac=eng)])
    with eng.run(agent_id="app") as run:
        agent.invoke(USER)
        assert run.status is rac.RunStatus.RUNNING
    assert run.status is rac.RunStatus.COMPLETED


def test_the_middleware_adds_nothing_to_the_agents_state_or_output() -> None:
    world = TravelWorld()
    eng = engine()
    m = _watching(eng, turn(call("book_flight", **FLIGHT)), say("ok"))
    bare = create_agent(model(say("ok")), world_tools(world), checkpointer=InMemorySaver())
    agent = create_agent(m, world_tools(world), middleware=[RACMiddleware(rac=eng)],
                         checkpointer=InMemorySaver())
    cfg: Any = {"configurable": {"thread_id": "t-hidden"}}
    chunks = list(agent.stream(USER, cfg, stream_mode="values"))
    assert set(chunks[-1]) == {"messages"}
    assert set(agent.get_state(cfg).values) == {"messages"}
    assert set(agent.get_graph().nodes) == set(bare.get_graph().nodes)
    assert _status(eng) == "completed"


def test_hook_called_outside_its_agents_graph_completes_the_run_after_the_step() -> None:
    """A RACMiddleware hook given to a hand-built ToolNode (outside create_agent) completes the
    turn's run after the tool step, like rac_langgraph.tool_node."""
    world = TravelWorld()
    eng = engine()
    mw = RACMiddleware(rac=eng)
    m = _watching(eng, turn(call("book_flight", **FLIGHT)), say("ok"))
    graph = StateGraph(MessagesState)
    graph.add_node("agent", lambda s: {"messages": [m.invoke(s["messages"])]})
    graph.add_node("tools", ToolNode(world_tools(world), wrap_tool_call=mw.wrap_tool_call))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    graph.compile().invoke(USER)
    assert _status(eng) == "completed"


def test_the_middleware_adds_a_model_call_hook_only_to_tell_a_resumed_model() -> None:
    """create_agent wraps every wrap_model_call hook in a traced span on each model call; the
    middleware hooks model calls by default only to tell a resumed model of a rollback
    (``tell_model=False`` drops the hook), and its hooks carry their signature (see
    middleware.py)."""
    assert type(RACMiddleware(rac=engine())).wrap_model_call \
        is not AgentMiddleware.wrap_model_call
    mw = RACMiddleware(rac=engine(), tell_model=False)
    assert type(mw).wrap_model_call is AgentMiddleware.wrap_model_call
    assert type(mw).awrap_model_call is AgentMiddleware.awrap_model_call
    for name in ("wrap_tool_call", "awrap_tool_call"):
        hook = getattr(mw, name)
        assert not inspect.ismethod(hook)
        assert list(hook.__signature__.parameters) == ["request", "handler"]


def test_concurrent_invocations_without_a_thread_id_get_a_run_each() -> None:
    """Invocations of one agent running at the same time in threads, none with a thread id: each
    invocation is one turn, so each gets one run holding its own two bookings."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    world = TravelWorld()
    eng = engine()
    all_started = threading.Barrier(4, timeout=60)  # every invocation has started a flight
    tools = [_gated_flight(world, all_started.wait), *world_tools(world, ["book_hotel", "cancel_flight", "cancel_hotel"])]
    mw = RACMiddleware(rac=eng)

    def one(who: str) -> None:
        m = model(turn(call("book_flight", **{**FLIGHT, "passenger": who})),
                  turn(call("book_hotel", **{**HOTEL, "guest": who})), say("ok"))
        create_agent(m, tools, middleware=[mw]).invoke({"messages": [("user", who)]})

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(one, ["ann", "bob", "cy", "dee"]))

    runs = eng.store.list_runs()
    assert len(runs) == 4 and {str(i.status) for i in runs} == {"completed"}
    for info in runs:
        recs = eng.store.get_records(info.run_id)
        guests = {r.args.get("passenger") or r.args.get("guest") for r in recs}
        assert [r.tool for r in recs] == ["book_flight", "book_hotel"] and len(guests) == 1


def test_with_finish_steps_off_the_caller_ends_the_turn() -> None:
    world = TravelWorld()
    eng = engine()
    calls = RACToolCalls(rac=eng, finish_steps=False)
    m = _watching(eng, turn(call("book_flight", **FLIGHT)), say("ok"))
    graph = StateGraph(MessagesState)
    graph.add_node("agent", lambda s: {"messages": [m.invoke(s["messages"])]})
    graph.add_node("tools", tool_node(world_tools(world), calls=calls))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    cfg: Any = {"configurable": {"thread_id": "t-own-end"}}
    state = graph.compile().invoke(USER, cfg)
    assert _status(eng) == "running"
    calls.end_turn(state, cfg)
    assert _status(eng) == "completed"


def test_parallel_calls_of_a_turns_first_step_share_one_run() -> None:
    import threading

    world = TravelWorld()
    eng = engine()
    together = threading.Barrier(2, timeout=60)
    book_flight = _gated_flight(world, together.wait)  # runs while the hotel is being booked

    @tool
    def book_hotel(guest: str, city: str, nights: int) -> dict[str, Any]:
        """Book a hotel (runs while the flight is being booked)."""
        together.wait()
        return world.book_hotel(guest, city, nights)

    m = _watching(eng, turn(call("book_flight", **FLIGHT), call("book_hotel", **HOTEL)),
                  say("booked"))
    agent = create_agent(m, [book_flight, book_hotel,
                             *world_tools(world, ["cancel_flight", "cancel_hotel"])],
                         middleware=[RACMiddleware(rac=eng)])
    agent.invoke(USER)
    assert _status(eng) == "completed"
    [info] = eng.store.list_runs()
    assert sorted(r.tool for r in eng.store.get_records(info.run_id)) == [
        "book_flight", "book_hotel"]


def test_a_crash_beside_a_call_still_running_leaves_the_run_running() -> None:
    """The hotel call dies (the process is going down) while the flight call is still
    running; the flight call ending afterwards must not mark the turn completed, or
    `rac recover` would never settle the hotel call left in doubt."""
    import threading

    world = TravelWorld()
    eng = engine()
    hotel_died = threading.Event()
    book_flight = _gated_flight(world, lambda: hotel_died.wait(60))  # ends after the hotel died

    @tool
    def book_hotel(guest: str, city: str, nights: int) -> dict[str, Any]:
        """Book a hotel (the process dies during the call)."""
        hotel_died.set()
        raise KeyboardInterrupt

    m = _watching(eng, turn(call("book_flight", **FLIGHT), call("book_hotel", **HOTEL)),
                  say("never said"))
    agent = create_agent(m, [book_flight, book_hotel,
                             *world_tools(world, ["cancel_flight", "cancel_hotel"])],
                         middleware=[RACMiddleware(rac=eng)])
    with pytest.raises(KeyboardInterrupt):
        agent.invoke(USER)
    assert _status(eng) == "running"
    [info] = eng.store.list_runs()
    assert sorted((r.tool, str(r.status)) for r in eng.store.get_records(info.run_id)) == [
        ("book_flight", "completed"), ("book_hotel", "pending")]


def test_a_turn_with_a_call_running_is_not_evicted_by_newer_turns() -> None:
    """The registry keeps ``limit`` turns; one whose call is still running stays, so the rest
    of that turn joins its run (a later failure still undoes the whole turn)."""
    import threading

    from langchain_core.messages import HumanMessage

    from rac_langgraph.runs import runs_of

    eng = engine()
    turns = runs_of(eng)
    turns.limit = 2
    first = {"messages": [HumanMessage("trip", id="h-first")]}
    run = turns.turn_run(first, None, "agent")
    started, release = threading.Event(), threading.Event()

    def slow(name: str, args: dict[str, Any]) -> Any:
        started.set()
        assert release.wait(60)
        return {"sky": "clear"}

    worker = threading.Thread(
        target=lambda: run.execute("get_weather", {"city": "Paris"}, slow))
    worker.start()
    assert started.wait(60)
    for i in range(5):
        turns.turn_run({"messages": [HumanMessage("other", id=f"h-{i}")]}, None, "agent")
    assert turns.turn_run(first, None, "agent") is run
    release.set()
    worker.join()
    assert run.finish() is True


@pytest.mark.parametrize("saver_kind", ["memory", "sqlite"])
@pytest.mark.parametrize("how", ["tool_node", "middleware"])
def test_end_turn_completes_a_checkpointed_turn(tmp_path: Any, saver_kind: str,
                                                how: str) -> None:
    """``end_turn(state, config)`` with the config given to ``invoke`` (only a thread id: no
    checkpointer in it) finds the checkpointed turn's run and completes it, so a later ``rac
    recover`` leaves the finished turn's bookings alone (issue 29)."""
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    world = TravelWorld()
    log = f"sqlite:///{tmp_path / 'rac.db'}"
    eng = engine(store=log)
    conn = sqlite3.connect(tmp_path / "threads.db", check_same_thread=False)
    saver: Any = InMemorySaver() if saver_kind == "memory" else SqliteSaver(conn)
    m = model(turn(call("book_flight", **FLIGHT)), turn(call("book_hotel", **HOTEL)),
              say("Booked."))
    if how == "tool_node":
        calls = RACToolCalls(rac=eng, finish_steps=False)
        graph = StateGraph(MessagesState)
        graph.add_node("agent", lambda s: {"messages": [m.invoke(s["messages"])]})
        graph.add_node("tools", tool_node(world_tools(world), calls=calls))
        graph.add_edge(START, "agent")
        graph.add_conditional_edges("agent", tools_condition)
        graph.add_edge("tools", "agent")
        app: Any = graph.compile(checkpointer=saver)
    else:
        mw = RACMiddleware(rac=eng, finish_steps=False)
        calls = mw.calls
        app = create_agent(m, world_tools(world), middleware=[mw], checkpointer=saver)
    cfg: Any = {"configurable": {"thread_id": "t-end"}}
    state = app.invoke(USER, cfg)
    assert _status(eng) == "running"

    assert calls.end_turn(state, cfg) is True
    assert _status(eng) == "completed"
    fresh = engine(store=log, tools=world.tools())
    assert fresh.recover(stale_after=0.0) == []
    assert sorted(b["kind"] for b in world.live()) == ["flight", "hotel"]
    fresh.close()
    eng.close()
    conn.close()
