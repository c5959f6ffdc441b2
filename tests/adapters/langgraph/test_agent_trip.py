"""create_agent + RACMiddleware on the travel world: rollback, replan, retry, alternatives."""

from __future__ import annotations

import pytest
from langchain.agents import create_agent
from langchain_core.tools import ToolException, tool

import rac
from rac.testing import TravelWorld, assert_no_live_effects, assert_rollback_order
from rac_langgraph import RACMiddleware
from tests.adapters.langgraph.support import (
    actions,
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
FLIGHT = {"passenger": "ann", "origin": "LHR", "dest": "CDG"}
HOTEL = {"guest": "ann", "city": "Paris", "nights": 2}
CAR = {"driver": "ann", "city": "Paris"}


def test_car_fails_hotel_then_flight_cancelled_and_replan_completes_the_trip() -> None:
    world = TravelWorld()
    world.fail("book_car", "permanent", message="no cars left", times=1)
    eng = engine()
    m = model(turn(call("book_flight", **FLIGHT)), turn(call("book_hotel", **HOTEL)),
              turn(call("book_car", **CAR)),
              # the replan: book everything again, with a car from the partner agency
              turn(call("book_flight", **FLIGHT)), turn(call("book_hotel", **HOTEL)),
              turn(call("rent_car", **CAR)), say("Trip booked with a partner car."))
    agent = create_agent(m, world_tools(world), middleware=[RACMiddleware(rac=eng)])

    out = agent.invoke(USER)

    # What the model got right after the failure: the report, as an error tool message.
    after_failure = m.seen[3]
    [report] = errors(after_failure)
    assert report.tool_call_id == after_failure[-2].tool_calls[0]["id"]
    assert "book_car failed" in report.content and "no cars left" in report.content
    assert report.content.index("book_hotel") < report.content.index("book_flight")
    assert len(tool_messages(after_failure)) == 3  # one result per tool call id
    # The log: hotel then flight compensated, then the replan completed.
    recs = records(eng)
    assert_rollback_order(recs, ["book_hotel", "book_flight"])
    assert actions(recs) == [("book_flight", "compensated"), ("book_hotel", "compensated"),
                             ("book_car", "failed"), ("book_flight", "completed"),
                             ("book_hotel", "completed"), ("rent_car", "completed")]
    [info] = eng.store.list_runs()
    assert info.status is rac.RunStatus.COMPLETED
    # The world: the first flight and hotel are cancelled, the replanned trip is live.
    assert sorted(b["kind"] for b in world.live()) == ["car", "flight", "hotel"]
    status = {b["booking_id"]: b["status"] for b in world.bookings()}
    assert (status["FL-101"], status["HT-102"]) == ("cancelled", "cancelled")
    assert out["messages"][-1].content == "Trip booked with a partner car."


def test_without_replan_nothing_is_left_live() -> None:
    world = TravelWorld()
    world.fail("book_car", "permanent")
    eng = engine()
    m = model(turn(call("book_flight", **FLIGHT)), turn(call("book_hotel", **HOTEL)),
              turn(call("book_car", **CAR)), say("Sorry, no car."))
    create_agent(m, world_tools(world), middleware=[RACMiddleware(rac=eng)]).invoke(USER)
    assert_no_live_effects(world)
    assert [r.tool for r in records(eng) if r.kind is rac.RecordKind.COMPENSATION] == [
        "cancel_hotel", "cancel_flight"]


@pytest.mark.parametrize("failures, ok", [(2, True), (None, False)])
def test_transient_failure_retried_at_most_max_attempts(failures: int | None, ok: bool) -> None:
    world = TravelWorld()
    world.fail("book_flight", "transient", times=failures, message="gateway timeout")
    eng = engine(retry=rac.RetryPolicy(max_attempts=3, initial_delay=1.0, jitter=0.0))
    m = model(turn(call("book_hotel", **HOTEL)), turn(call("book_flight", **FLIGHT)), say("ok"))
    create_agent(m, world_tools(world), middleware=[RACMiddleware(rac=eng)]).invoke(USER)

    assert world.calls["book_flight"] == 3
    [flight] = [r for r in records(eng) if r.tool == "book_flight"]
    assert flight.attempts == 3
    assert len(eng.clock.sleeps) == 2  # type: ignore[attr-defined]
    last = tool_messages(m.seen[-1])[-1]
    if ok:
        assert last.status == "success" and "FL-" in last.content
        assert sorted(b["kind"] for b in world.live()) == ["flight", "hotel"]
    else:
        assert last.status == "error" and "after 3 attempts" in last.content
        assert_no_live_effects(world)


def test_alternative_used_then_later_rollback_uses_the_alternatives_compensator() -> None:
    world = TravelWorld()
    world.fail("book_car", "permanent", message="sold out")
    world.fail("charge_card", "permanent", message="card declined")
    eng = engine(alternatives={"book_car": ["rent_car"]})
    offered = world_tools(world, ["book_flight", "book_car", "rent_car", "charge_card"])
    # Compensators are not offered to the model: the engine gets them from the middleware.
    hidden = world_tools(world, ["cancel_flight", "cancel_car", "return_rental",
                                 "refund_charge"])
    m = model(turn(call("book_flight", **FLIGHT)), turn(call("book_car", **CAR)),
              turn(call("charge_card", customer="ann", amount=510.0)), say("Payment failed."))
    agent = create_agent(m, offered, middleware=[RACMiddleware(rac=eng, tools=hidden)])
    agent.invoke(USER)

    car_result = tool_messages(m.seen[2])[-1]
    assert car_result.status == "success" and car_result.name == "rent_car"
    recs = records(eng)
    booked, rented = [r for r in recs if r.tool in ("book_car", "rent_car")]
    assert rented.alternative_of == booked.seq
    assert_rollback_order(recs, ["rent_car", "book_flight"])
    assert [r.tool for r in recs if r.kind is rac.RecordKind.COMPENSATION] == [
        "return_rental", "cancel_flight"]
    assert_no_live_effects(world)
    assert "return_rental" in errors(m.seen[3])[0].content


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
