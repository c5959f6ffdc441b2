"""An agent used as a tool of another (a compiled ``create_agent`` graph invoked inside the
parent's tool, LangChain's "subagents" pattern, or a hand-built graph with a RAC ``tool_node``)
joins the parent's run in a nested scope: one run; the child's failure is handled by its own
scope first (the parent's bookings stay; the child's model, and the parent's with the child's
answer, hear what was undone); a later
failure of the parent undoes the child's bookings too, newest first, and the parent's model
hears all of it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.checkpoint.memory import InMemorySaver

import rac
from rac.testing import TravelWorld, VirtualClock
from rac_langgraph import RACMiddleware, tool_node
from tests.adapters.langgraph import support as lg

USER = {"messages": [("user", "Book me a trip to Paris")]}


def _expert(child: Any, use_async: bool) -> BaseTool:
    """The child agent as the parent's ``hotel_expert`` tool (the closure pattern of
    LangChain's multi-agent docs)."""

    def hotel_expert(request: str) -> str:
        """Ask the hotel expert to book rooms and cars."""
        return str(child.invoke({"messages": [("user", request)]})["messages"][-1].content)

    async def ahotel_expert(request: str) -> str:
        out = await child.ainvoke({"messages": [("user", request)]})
        return str(out["messages"][-1].content)

    return StructuredTool.from_function(hotel_expert, coroutine=ahotel_expert if use_async
                                        else None, name="hotel_expert")


def _agents(eng: rac.RAC, world: TravelWorld, parent_m: lg.ScriptedModel,
            child_m: lg.ScriptedModel, *, use_async: bool = False, saver: Any = None,
            hand_built: bool = False, extra: tuple[BaseTool, ...] = ()) -> Any:
    child_tools = lg.world_tools(world, ["book_hotel", "cancel_hotel", "book_car",
                                         "cancel_car"])
    if hand_built:
        child = lg.agent_graph(child_m, tool_node(child_tools, rac=eng, agent_id="hotels"))
    else:
        child = create_agent(child_m, child_tools, middleware=[RACMiddleware(rac=eng)],
                             name="hotels")
    tools = [*lg.world_tools(world, ["book_flight", "cancel_flight", "book_car", "cancel_car"]),
             _expert(child, use_async), *extra]
    return create_agent(parent_m, tools, middleware=[RACMiddleware(rac=eng)], name="planner",
                        checkpointer=saver)


def _config(saver: Any) -> Any:
    return {"configurable": {"thread_id": "trip-1"}} if saver is not None else None


def _scoped(eng: rac.RAC) -> list[tuple[str, str, str, str]]:
    """(agent, tool, status, scope) of every action record, in log order."""
    return [(r.agent_id, r.tool, str(r.status), r.scope) for r in lg.records(eng)
            if r.kind is rac.RecordKind.ACTION]


@pytest.mark.parametrize("use_async", [False, True])
@pytest.mark.parametrize("checkpointed", [False, True])
@pytest.mark.parametrize("hand_built", [False, True])
async def test_a_childs_failure_is_rolled_back_in_the_childs_scope_first(
        use_async: bool, checkpointed: bool, hand_built: bool) -> None:
    world = TravelWorld()
    world.fail("book_car", "permanent")
    eng = lg.engine()
    child_m = lg.model(lg.turn(lg.call("book_hotel", **lg.HOTEL)),
                       lg.turn(lg.call("book_car", **lg.CAR)), lg.say("Hotel booked, no car."))
    parent_m = lg.model(lg.turn(lg.call("book_flight", **lg.FLIGHT)),
                        lg.turn(lg.call("hotel_expert", request="a hotel and a car")),
                        lg.say("Flight booked; the expert found no car."))
    saver = InMemorySaver() if checkpointed else None
    parent = _agents(eng, world, parent_m, child_m, use_async=use_async, saver=saver,
                     hand_built=hand_built)
    if use_async:
        await parent.ainvoke(USER, _config(saver))
    else:
        parent.invoke(USER, _config(saver))

    # the world: the child's hotel undone by the child's own rollback, the parent's flight kept
    assert [b["kind"] for b in world.live()] == ["flight"]
    # one run; the child's calls in a nested scope
    [info] = eng.store.list_runs()
    assert info.status is rac.RunStatus.COMPLETED
    assert _scoped(eng) == [("planner", "book_flight", "completed", "0"),
                            ("planner", "hotel_expert", "completed", "0"),
                            ("hotels", "book_hotel", "compensated", "0.1"),
                            ("hotels", "book_car", "failed", "0.1")]
    # the child's model heard its own rollback, and nothing of the parent's flight
    [report] = lg.errors(child_m.seen[-1])
    assert "Undone, newest first: book_hotel HT-" in report.content
    assert "book_flight" not in report.content and "back to how it was" in report.content
    # the parent's model got the child's answer, as a success, and what RAC told the child:
    # it hears the hotel was undone whatever the child's model said
    answer = lg.tool_messages(parent_m.seen[-1])[-1]
    assert answer.status == "success" and answer.content.startswith("Hotel booked, no car.")
    assert "Undone, newest first: book_hotel HT-" in answer.content


@pytest.mark.parametrize("use_async", [False, True])
@pytest.mark.parametrize("checkpointed", [False, True])
async def test_a_parents_later_failure_undoes_the_childs_bookings_newest_first(
        use_async: bool, checkpointed: bool) -> None:
    world = TravelWorld()
    world.fail("book_car", "permanent")
    eng = lg.engine()
    child_m = lg.model(lg.turn(lg.call("book_hotel", **lg.HOTEL)), lg.say("Hotel booked."))
    parent_m = lg.model(lg.turn(lg.call("book_flight", **lg.FLIGHT)),
                        lg.turn(lg.call("hotel_expert", request="a hotel")),
                        lg.turn(lg.call("book_car", **lg.CAR)), lg.say("Nothing is booked."))
    saver = InMemorySaver() if checkpointed else None
    parent = _agents(eng, world, parent_m, child_m, use_async=use_async, saver=saver)
    if use_async:
        await parent.ainvoke(USER, _config(saver))
    else:
        parent.invoke(USER, _config(saver))

    assert world.live() == []
    [info] = eng.store.list_runs()
    assert info.status is rac.RunStatus.COMPENSATED
    recs = lg.records(eng)
    assert _scoped(eng) == [("planner", "book_flight", "compensated", "0"),
                            ("planner", "hotel_expert", "completed", "0"),
                            ("hotels", "book_hotel", "compensated", "0.1"),
                            ("planner", "book_car", "failed", "0")]
    # the agent's call is no effect of its own: its effects are the child's calls
    [expert] = [r for r in recs if r.tool == "hotel_expert"]
    assert expert.read_only and "scope 0.1" in str(expert.note)
    # undone newest first: the child's hotel, then the parent's flight
    assert [r.tool for r in recs if r.kind is rac.RecordKind.COMPENSATION] == \
        ["cancel_hotel", "cancel_flight"]
    [report] = lg.errors(parent_m.seen[-1])
    assert "Undone, newest first: book_hotel HT-" in report.content
    assert report.content.index("book_hotel") < report.content.index("book_flight FL-")
    assert "back to how it was" in report.content and "hotel_expert" not in report.content


def test_an_agent_tool_with_its_own_compensation_keeps_it() -> None:
    """A declared undo for the agent tool is the user's: the call is not marked read-only, and
    a rollback runs that undo after the child's (newest first)."""
    world = TravelWorld()
    world.fail("book_car", "permanent")
    undone: list[str] = []

    def forget_request(request: str) -> str:
        """Tell the hotel desk to forget a request."""
        undone.append(request)
        return "forgotten"

    eng = lg.engine(compensations={**lg.TRAVEL_COMPENSATIONS, "hotel_expert": "forget_request"})
    child_m = lg.model(lg.turn(lg.call("book_hotel", **lg.HOTEL)), lg.say("Hotel booked."))
    parent_m = lg.model(lg.turn(lg.call("hotel_expert", request="a hotel")),
                        lg.turn(lg.call("book_car", **lg.CAR)), lg.say("Nothing is booked."))
    _agents(eng, world, parent_m, child_m,
            extra=(StructuredTool.from_function(forget_request),)).invoke(USER)
    assert world.live() == [] and undone == ["a hotel"]
    [expert] = [r for r in lg.records(eng) if r.tool == "hotel_expert"]
    assert not expert.read_only and str(expert.status) == "compensated"


def test_the_childs_call_ids_may_be_the_parents() -> None:
    """Models number their calls as they like (``call-0`` in both agents): a call is its id
    among its own agent's calls, so the child's booking runs instead of being answered with
    the parent's earlier result."""
    world = TravelWorld()
    eng = lg.engine()

    def numbered(*calls: tuple[str, dict[str, Any]]) -> lg.ScriptedModel:
        return lg.model(*(AIMessage(content="", tool_calls=[
            {"name": n, "args": a, "id": f"call-{i}", "type": "tool_call"}])
            for i, (n, a) in enumerate(calls)), lg.say("done"))

    child_m = numbered(("book_hotel", lg.HOTEL))
    parent_m = numbered(("book_flight", lg.FLIGHT), ("hotel_expert", {"request": "a hotel"}))
    _agents(eng, world, parent_m, child_m).invoke(USER)
    assert sorted(b["kind"] for b in world.live()) == ["flight", "hotel"]
    assert [(r.agent_id, r.tool, r.call_id) for r in lg.records(eng)] == [
        ("planner", "book_flight", "call-0"), ("planner", "hotel_expert", "call-1"),
        ("hotels", "book_hotel", "call-0")]


def test_an_agent_on_another_engine_keeps_its_own_run() -> None:
    """Nesting is per engine: a child agent logging to another engine runs its own runs, and
    the parent's tool stays a call RAC cannot undo (it says so, never "back to how it was")."""
    world = TravelWorld()
    world.fail("book_car", "permanent")
    eng, other = lg.engine(), lg.engine()
    child_m = lg.model(lg.turn(lg.call("book_hotel", **lg.HOTEL)), lg.say("Hotel booked."))
    parent_m = lg.model(lg.turn(lg.call("hotel_expert", request="a hotel")),
                        lg.turn(lg.call("book_car", **lg.CAR)), lg.say("no"))
    child = create_agent(child_m, lg.world_tools(world, ["book_hotel", "cancel_hotel"]),
                         middleware=[RACMiddleware(rac=other)], name="hotels")
    parent = create_agent(parent_m, [*lg.world_tools(world, ["book_car", "cancel_car"]),
                                     _expert(child, False)],
                          middleware=[RACMiddleware(rac=eng)], name="planner")
    parent.invoke(USER)
    assert [b["kind"] for b in world.live()] == ["hotel"]
    [report] = lg.errors(parent_m.seen[-1])
    assert "hotel_expert" in report.content and "back to how it was" not in report.content
    assert [i.status for i in eng.store.list_runs()] == [rac.RunStatus.NEEDS_ATTENTION]
    assert [i.status for i in other.store.list_runs()] == [rac.RunStatus.COMPLETED]


#: A process that books a flight, then asks the hotel expert, whose agent books a hotel and
#: dies inside its car booking (before the car's effect).
CRASHING = '''
import os, sys
from langchain.agents import create_agent
from langchain_core.tools import StructuredTool
import rac
from rac.testing import TRAVEL_COMPENSATIONS, TravelWorld, VirtualClock
from rac_langgraph import RACMiddleware
from rac_langgraph.testing import call, say, scripted_model, turn, world_tools
from tests.adapters.langgraph.support import CAR, FLIGHT, HOTEL

world_path, log = sys.argv[1:]
world = TravelWorld(world_path)
world.on_call("book_car", lambda args: os._exit(86))
eng = rac.RAC(compensations=TRAVEL_COMPENSATIONS, store=f"sqlite:///{log}",
              clock=VirtualClock(), load_entrypoints=False)
child = create_agent(scripted_model(turn(call("book_hotel", **HOTEL)),
                                    turn(call("book_car", **CAR)), say("done")),
                     world_tools(world, ["book_hotel", "cancel_hotel", "book_car", "cancel_car"]),
                     middleware=[RACMiddleware(rac=eng)], name="hotels")
def hotel_expert(request: str) -> str:
    """Ask the hotel expert."""
    return str(child.invoke({"messages": [("user", request)]})["messages"][-1].content)
parent = create_agent(scripted_model(turn(call("book_flight", **FLIGHT)),
                                     turn(call("hotel_expert", request="hotel and car")),
                                     say("done")),
                      [*world_tools(world, ["book_flight", "cancel_flight"]),
                       StructuredTool.from_function(hotel_expert)],
                      middleware=[RACMiddleware(rac=eng)], name="planner")
parent.invoke({"messages": [("user", "trip")]})
'''


def test_recovery_after_a_crash_inside_the_child_undoes_both_agents(tmp_path: Path) -> None:
    """The process dies inside the child's call: `rac recover` (a fresh process, from the log)
    undoes the child's hotel and the parent's flight, and names nothing of the agent call as
    live: its effects are the child's calls, and the one in doubt (the car) is named as such."""
    world_path, log = tmp_path / "world.db", tmp_path / "rac.db"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    proc = subprocess.run([sys.executable, "-c", CRASHING, str(world_path), str(log)], env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 86, proc.stderr[-3000:]
    world = TravelWorld(str(world_path))
    assert sorted(b["kind"] for b in world.live()) == ["flight", "hotel"]
    eng = rac.RAC(compensations=lg.TRAVEL_COMPENSATIONS, store=f"sqlite:///{log}",
                  clock=VirtualClock(), load_entrypoints=False, tools=world.tools())
    [recovered] = eng.recover(stale_after=0.0)
    report = recovered.report
    assert report is not None and world.live() == []
    # the car may have been booked and has no booking id to cancel: a person must check it
    assert recovered.outcome == "needs_attention"
    assert [u.tool for u in report.compensated] == ["book_hotel", "book_flight"]
    assert [u.tool for u in report.in_doubt] == ["book_car"]
    assert not report.not_undoable and "hotel_expert" not in eng.render(report)
    scopes = {r.tool: r.scope for r in eng.store.get_records(report.run_id)
              if r.kind is rac.RecordKind.ACTION}
    assert scopes == {"book_flight": "0", "hotel_expert": "0", "book_hotel": "0.1",
                      "book_car": "0.1"}
