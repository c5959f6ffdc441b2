"""A turn left running (a resumed turn whose interrupted call stayed in doubt) and rolled back
later by a start-up ``rac recover`` is announced to the thread's next turn (issue 29): the model
hears what was undone before it answers, once, from the log, in a fresh process."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import SystemMessage
from langgraph.checkpoint.sqlite import SqliteSaver

import rac
from rac.testing import TravelWorld
from rac_langgraph import RACMiddleware
from rac_langgraph.testing import say, scripted_model, world_tools
from tests.adapters.langgraph.test_crash_resume import _crash, _engine, _resume

CFG: Any = {"configurable": {"thread_id": "t-crash"}}


def _next_turn(world: TravelWorld, eng: rac.RAC, threads: Path, text: str) -> Any:
    m = scripted_model(say(text))
    with sqlite3.connect(threads, check_same_thread=False) as conn:
        agent = create_agent(m, world_tools(world), middleware=[RACMiddleware(rac=eng)],
                             checkpointer=SqliteSaver(conn))
        agent.invoke({"messages": [("user", "So what is booked?")]}, CFG)
    return m


def _recover(log: Path, world: TravelWorld) -> Any:
    """A restart's `rac recover`: the turn left running is rolled back (the flight cancelled;
    the hotel, with nothing to undo it by, stays named)."""
    restarted = _engine(log, world)
    [recovered] = restarted.recover(stale_after=0.0)
    assert [b["kind"] for b in world.live()] == ["hotel"]
    restarted.close()
    return recovered


def _told_first(world: TravelWorld, log: Path, threads: Path, which: str) -> rac.RAC:
    """The next turn, in a fresh process (its engine returned, open): before it answers, the
    model hears that ``which`` turn was rolled back (what was undone, what was not)."""
    fresh = _engine(log, world)
    m = _next_turn(world, fresh, threads, "The flight was cancelled; the hotel may be live.")
    system = m.seen[0][0]
    assert isinstance(system, SystemMessage), m.seen[0]
    assert system.content.startswith(f"RAC: {which} turn of this conversation was rolled "
                                     "back"), system.content
    assert "book_flight FL-101" in system.content
    assert "Not undone" in system.content and "book_hotel" in system.content
    return fresh


def test_the_next_turn_hears_of_a_rollback_made_after_its_predecessor_ended(
        tmp_path: Path) -> None:
    world_path, log, threads = _crash(tmp_path, "after")  # the hotel booked, then the crash
    world = TravelWorld(str(world_path))

    # The thread is resumed without recovery: the hotel call is named in doubt, the run is
    # left running for `rac recover`; the turn ends.
    resumed = _engine(log, world)
    m1, _ = _resume(world, resumed, threads)
    assert "not run again" in str(m1.seen[-1][-1].content)
    [info] = resumed.store.list_runs()
    assert info.status is rac.RunStatus.RUNNING
    resumed.close()

    assert _recover(log, world).run_id == info.run_id
    fresh = _told_first(world, log, threads, "the previous")
    # Once: the turn after it hears nothing more.
    m3 = _next_turn(world, fresh, threads, "Nothing else changed.")
    assert not any(isinstance(x, SystemMessage) for x in m3.seen[0])
    fresh.close()
    later = _engine(log, world)
    m4 = _next_turn(world, later, threads, "Nothing else changed.")
    assert not any(isinstance(x, SystemMessage) for x in m4.seen[0])
    later.close()


def test_a_turn_rolled_back_within_itself_is_not_announced_again(tmp_path: Path) -> None:
    """The model heard the rollback report in its own turn: the next turn is not told twice."""
    world = TravelWorld()
    world.fail("book_car", "permanent", message="no cars left")
    eng = _engine(tmp_path / "rac.db", world)
    from rac_langgraph.testing import call, turn

    m = scripted_model(turn(call("book_flight", passenger="ann", origin="LHR", dest="CDG")),
                       turn(call("book_car", driver="ann", city="Paris")), say("No car."))
    threads = tmp_path / "threads.db"
    with sqlite3.connect(threads, check_same_thread=False) as conn:
        agent = create_agent(m, world_tools(world), middleware=[RACMiddleware(rac=eng)],
                             checkpointer=SqliteSaver(conn))
        agent.invoke({"messages": [("user", "trip")]}, CFG)
    assert [i.status for i in eng.store.list_runs()] == [rac.RunStatus.COMPENSATED]
    eng.close()
    fresh = _engine(tmp_path / "rac.db", world)
    m2 = _next_turn(world, fresh, threads, "Shall I try a rental?")
    assert not any(isinstance(x, SystemMessage) for x in m2.seen[0])
    fresh.close()


def test_a_rollback_found_after_later_turns_ran_is_told_once(tmp_path: Path) -> None:
    """The turn left running is rolled back only after the thread's next turn ran (that turn
    heard nothing: there was nothing yet): the turn after that hears of it, before it answers,
    as an earlier turn's; once, also in a fresh process (its answer carries the mark)."""
    world_path, log, threads = _crash(tmp_path, "after")
    world = TravelWorld(str(world_path))
    resumed = _engine(log, world)
    _resume(world, resumed, threads)  # the hotel call named in doubt, the run left running
    m1 = _next_turn(world, resumed, threads, "Your flight and hotel are booked.")
    assert not any(isinstance(x, SystemMessage) for x in m1.seen[0])
    resumed.close()

    _recover(log, world)
    _told_first(world, log, threads, "an earlier").close()
    later = _engine(log, world)
    m3 = _next_turn(world, later, threads, "Nothing else changed.")
    assert not any(isinstance(x, SystemMessage) for x in m3.seen[0])
    later.close()
