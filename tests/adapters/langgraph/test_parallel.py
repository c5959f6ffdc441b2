"""Parallel tool calls of one model turn: thread pool (sync) and gather (async)."""

from __future__ import annotations

import threading
from typing import Any

from langchain.agents import create_agent

import rac
from rac.testing import TravelWorld, assert_compensated_once, assert_no_live_effects
from rac_langgraph import RACMiddleware
from tests.adapters.langgraph.support import (
    actions,
    call,
    engine,
    errors,
    model,
    records,
    say,
    turn,
    world_tools,
)

WAIT = 60.0  # a safety net against a hang, generous for a loaded machine; events fire at once


class RollbackSignal:
    """Sets an event when a rollback has finished (its report is written)."""

    def __init__(self) -> None:
        self.finished = threading.Event()

    @rac.hookimpl
    def rac_rollback_finished(self, run_id: str, scope: str, report: Any) -> None:
        self.finished.set()


def _slow_flight_world(signal: RollbackSignal) -> TravelWorld:
    """The flight starts first and only finishes once the rollback the car's failure started
    has written its report (so the report must name it as still running; finishing any
    earlier, it could be undone by its own call before the report, a race under load)."""
    world = TravelWorld()
    flight_started = threading.Event()

    def flight(args: dict[str, Any]) -> None:
        flight_started.set()
        assert signal.finished.wait(WAIT), "the rollback never finished"

    def car(args: dict[str, Any]) -> None:
        assert flight_started.wait(WAIT), "the flight never started"

    world.on_call("book_flight", flight)
    world.on_call("book_car", car)
    world.fail("book_car", "permanent", message="no cars")
    return world


def _script() -> Any:
    return model(turn(call("book_hotel", guest="ann", city="Paris", nights=1)),
                 turn(call("book_flight", passenger="ann", origin="LHR", dest="CDG"),
                      call("book_car", driver="ann", city="Paris")),
                 say("Nothing could be booked."))


def _check(world: TravelWorld, eng: rac.RAC, m: Any) -> None:
    assert_no_live_effects(world)
    assert_compensated_once(world)
    assert sorted(actions(records(eng))) == [("book_car", "failed"),
                                             ("book_flight", "compensated"),
                                             ("book_hotel", "compensated")]
    reports = {e.name: e.content for e in errors(m.seen[-1])}
    assert set(reports) == {"book_car", "book_flight"}  # one answer per tool call id
    assert "book_flight" in reports["book_car"]  # reported as still running when it started
    assert "undone" in reports["book_flight"]
    [info] = eng.store.list_runs()
    assert info.status is rac.RunStatus.COMPENSATED


async def test_sibling_finishing_after_rollback_started_is_compensated_async() -> None:
    signal = RollbackSignal()
    world = _slow_flight_world(signal)
    eng = engine(plugins=[signal])
    m = _script()
    await create_agent(m, world_tools(world), middleware=[RACMiddleware(rac=eng)]).ainvoke(
        {"messages": [("user", "trip")]})
    _check(world, eng, m)


def test_parallel_successes_share_the_turns_run() -> None:
    world = TravelWorld()
    eng = engine()
    m = model(turn(*[call("book_hotel", guest=g, city="Rome", nights=1) for g in "abcdef"]),
              say("ok"))
    create_agent(m, world_tools(world), middleware=[RACMiddleware(rac=eng)]).invoke(
        {"messages": [("user", "six rooms")]})
    assert len(world.live("hotel")) == 6
    [info] = eng.store.list_runs()
    assert sorted(r.seq for r in eng.store.get_records(info.run_id)) == [1, 2, 3, 4, 5, 6]
