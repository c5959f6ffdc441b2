"""create_agent + RACMiddleware: what only LangGraph has (engine-only alternatives, ToolException
and handle_tool_error, ToolNode's invalid-argument answer, the agent name as agent id). Rollback,
replan, retries and alternatives are checked by the conformance suite (test_conformance.py)."""

from __future__ import annotations

import pytest
from langchain.agents import create_agent
from langchain_core.tools import ToolException, tool

import rac
from rac.testing import TravelWorld, assert_no_live_effects
from rac_langgraph import RACMiddleware
from tests.adapters.langgraph.support import (
    CAR,
    FLIGHT,
    HOTEL,
    call,
    engine,
    errors,
    model,
    records,
    say,
    tool_messages,
    turn,
    world_tools,
)

USER = {"messages": [("user", "Book me a trip to Paris")]}


def test_alternative_known_only_to_the_engine_is_called_directly() -> None:
    world = TravelWorld()
    world.fail("book_car", "permanent")
    eng = engine(alternatives={"book_car": ["rent_car"]})
    m = model(turn(call("book_car", **CAR)), say("ok"))
    mw = RACMiddleware(rac=eng, tools=world_tools(world, ["rent_car", "return_rental", "cancel_car"]))
    create_agent(m, world_tools(world, ["book_car"]), middleware=[mw]).invoke(USER)
    [result] = tool_messages(m.seen[1])
    assert result.status == "success" and result.name == "rent_car" and "CR-" in result.content
    assert [b["detail"] for b in world.live()] == ["partner"]


@pytest.mark.parametrize("handled", [False, True])
def test_tool_exception_is_a_failure_either_way(handled: bool) -> None:
    world = TravelWorld()

    @tool
    def book_car(driver: str, city: str) -> str:
        """Book a car."""
        raise ToolException("the car desk is closed")

    book_car.handle_tool_error = handled
    eng = engine()
    tools = [*world_tools(world, ["book_flight", "cancel_flight", "cancel_car"]), book_car]
    m = model(turn(call("book_flight", **FLIGHT)), turn(call("book_car", **CAR)), say("no"))
    create_agent(m, tools, middleware=[RACMiddleware(rac=eng)]).invoke(USER)
    [report] = errors(m.seen[-1])
    assert "the car desk is closed" in report.content and "cancel_flight" in report.content
    assert_no_live_effects(world)


def test_invalid_arguments_go_back_to_the_model_without_a_rollback() -> None:
    world = TravelWorld()
    eng = engine()
    m = model(turn(call("book_hotel", **HOTEL)), turn(call("book_flight", passenger="ann")),
              turn(call("book_flight", **FLIGHT)), say("done"))
    create_agent(m, world_tools(world), middleware=[RACMiddleware(rac=eng)]).invoke(USER)
    [fix] = errors(m.seen[2])
    assert "Please fix the error" in fix.content
    assert sorted(b["kind"] for b in world.live()) == ["flight", "hotel"]
    bad = [r for r in records(eng) if r.tool == "book_flight"][0]
    assert bad.status is rac.RecordStatus.FAILED and bad.note == "passthrough"
    assert not [r for r in records(eng) if r.kind is rac.RecordKind.COMPENSATION]


def test_agent_name_is_the_default_agent_id_and_an_open_run_is_joined() -> None:
    world = TravelWorld()
    eng = engine()
    m = model(turn(call("book_flight", **FLIGHT)), say("ok"))
    agent = create_agent(m, world_tools(world), middleware=[RACMiddleware(rac=eng)],
                         name="planner")
    with eng.run(agent_id="app") as run:
        agent.invoke(USER)
    [rec] = run.records()
    assert rec.agent_id == "planner" and rec.status is rac.RecordStatus.COMPLETED
    assert len(eng.store.list_runs()) == 1


def test_engine_keywords_next_to_an_engine_are_refused() -> None:
    with pytest.raises(rac.ConfigurationError, match="either rac="):
        RACMiddleware(rac=engine(), compensations={"a": "b"})


def test_keywords_build_an_engine() -> None:
    world = TravelWorld()
    mw = RACMiddleware(compensations={"book_flight": "cancel_flight"}, store="memory://",
                       tools=world_tools(world, ["cancel_flight"]), load_entrypoints=False,
                       agent_id="solo")
    assert mw.engine.agent_id == "solo" and "cancel_flight" in mw.engine.tools
