"""Issue 14's crash harness: a LangGraph agent's process dies at a point of its turn (inside a
tool call before or after the effect, after RAC logged the outcome but before LangGraph saved
the step, during the model call between tools), then recovery and/or a resume of the thread run
in a fresh process. Checked against the world's own ledger and what the model was told last:
nothing live that the model was told is undone, nothing undone that it was told is booked, no
effect performed twice."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.checkpoint.sqlite import SqliteSaver

import rac
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld, VirtualClock
from rac_langgraph import RACMiddleware
from rac_langgraph.testing import call, say, scripted_model, turn, world_tools

CRASHED = 86
#: The first process: book a flight, then a hotel, dying at ``phase``.
CHILD = '''
import os, sqlite3, sys
from langchain.agents import create_agent
from langgraph.checkpoint.sqlite import SqliteSaver
import rac
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld, VirtualClock
from rac_langgraph import RACMiddleware
from rac_langgraph.testing import ScriptedModel, call, say, turn, world_tools
from tests.adapters.langgraph.test_crash_resume import HOTEL_LOOKUP, find_hotels_tool

world_path, log, threads, phase, code, lookup = sys.argv[1:]
CRASH_CODE = int(code)
world = TravelWorld(world_path)
plugins = []
if phase == "before":  # inside book_hotel, before its effect
    world.on_call("book_hotel", lambda args: os._exit(CRASH_CODE))
elif phase == "after":  # inside book_hotel, after its effect, before it returns
    real = world.book_hotel
    def book_hotel(guest: str, city: str, nights: int) -> dict:
        """Book a hotel room."""
        real(guest, city, nights)
        os._exit(CRASH_CODE)
    world.book_hotel = book_hotel
elif phase == "logged":  # after RAC logged the hotel's outcome, before LangGraph saved it
    class Crash:
        @rac.hookimpl
        def rac_record_written(self, record, previous):
            if record.tool == "book_hotel" and record.status == "completed":
                os._exit(CRASH_CODE)
    plugins.append(Crash())

compensations = dict(TRAVEL_COMPENSATIONS)
tools = world_tools(world)
if lookup == "1":  # book_hotel's calls can be reconciled through the guest's hotels
    compensations["book_hotel"] = HOTEL_LOOKUP
    tools.append(find_hotels_tool(world))

def script():
    yield turn(call("book_flight", passenger="ann", origin="LHR", dest="CDG"))
    if phase == "model":  # during the model call between the two tools
        os._exit(CRASH_CODE)
    yield turn(call("book_hotel", guest="ann", city="Paris", nights=2))
    yield say("Your flight and hotel are booked.")

engine = rac.RAC(compensations=compensations, read_only=[*TRAVEL_READ_ONLY, "find_hotels"],
                 store=f"sqlite:///{log}", clock=VirtualClock(), load_entrypoints=False,
                 plugins=plugins)
conn = sqlite3.connect(threads, check_same_thread=False)
agent = create_agent(ScriptedModel(messages=script()), tools,
                     middleware=[RACMiddleware(rac=engine)], checkpointer=SqliteSaver(conn))
# durability="sync": every step is checkpointed before the next runs, so the crash point is
# exactly the one named (with "async", LangGraph's default, the step before may be lost too,
# and the resumed thread asks the model again; see docs/langgraph.md)
agent.invoke({"messages": [("user", "flight and hotel to Paris")]},
             {"configurable": {"thread_id": "t-crash"}}, durability="sync")
sys.exit(1)
'''


#: book_hotel's lookup: the guest's live hotels in the city.
HOTEL_LOOKUP = rac.Compensation("cancel_hotel", args={"booking_id": "result.booking_id"},
                                lookup=rac.Lookup("find_hotels", args={"who": "args.guest"},
                                                  items="result.bookings",
                                                  match={"place": "args.city"}))


def find_hotels_fn(world: TravelWorld) -> Callable[[str], dict[str, Any]]:
    """The read tool of :data:`HOTEL_LOOKUP`, over ``world``."""

    def find_hotels(who: str) -> dict[str, Any]:
        """The guest's live hotel bookings (read-only)."""
        return world.find_bookings(who, "hotel")

    return find_hotels


def find_hotels_tool(world: TravelWorld) -> BaseTool:
    """:func:`find_hotels_fn` as a LangChain tool."""
    return StructuredTool.from_function(find_hotels_fn(world))


def _crash(tmp_path: Path, phase: str, *, lookup: bool = False) -> tuple[Path, Path, Path]:
    paths = tmp_path / "world.db", tmp_path / "rac.db", tmp_path / "threads.db"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    proc = subprocess.run([sys.executable, "-c", CHILD, *map(str, paths), phase, str(CRASHED),
                           "1" if lookup else "0"],
                          env=env, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == CRASHED, proc.stderr[-3000:]
    return paths


def _engine(log: Path, world: TravelWorld, *, lookup: bool = False) -> rac.RAC:
    return rac.RAC(compensations={**TRAVEL_COMPENSATIONS,
                                  **({"book_hotel": HOTEL_LOOKUP} if lookup else {})},
                   read_only=[*TRAVEL_READ_ONLY, "find_hotels"],
                   store=f"sqlite:///{log}", clock=VirtualClock(), load_entrypoints=False,
                   tools=[*world.tools(), *([find_hotels_fn(world)] if lookup else [])])


def _resume(world: TravelWorld, eng: rac.RAC, threads: Path, *replies: Any,
            lookup: bool = False) -> tuple[Any, Any]:
    m = scripted_model(*(replies or [say("Here is where your trip stands.")]))
    tools = [*world_tools(world), *([find_hotels_tool(world)] if lookup else [])]
    with sqlite3.connect(threads, check_same_thread=False) as conn:
        agent = create_agent(m, tools, middleware=[RACMiddleware(rac=eng)],
                             checkpointer=SqliteSaver(conn))
        out = agent.invoke(None, {"configurable": {"thread_id": "t-crash"}})
    return m, out


def _last_hotel_answer(m: Any) -> str:
    answers = [t for t in m.seen[-1] if isinstance(t, ToolMessage) and t.name == "book_hotel"]
    return str(answers[-1].content)


def _kinds(world: TravelWorld) -> list[str]:
    return sorted(b["kind"] for b in world.live())


@pytest.mark.parametrize("phase", ["before", "after", "logged"])
def test_recover_then_resume_tells_the_model_what_was_undone(tmp_path: Path,
                                                             phase: str) -> None:
    """A crash during a tool call (its run is running): recovery rolls the turn back, and the
    resumed thread's model hears so before anything else; nothing is booked again."""
    world_path, log, threads = _crash(tmp_path, phase)
    world = TravelWorld(str(world_path))
    eng = _engine(log, world)
    [recovered] = eng.recover(stale_after=0.0)  # `rac recover` after the restart
    assert recovered.run_id.startswith("lg-")
    assert world.calls.get("cancel_flight") == 1
    m, out = _resume(world, eng, threads)

    told = _last_hotel_answer(m)
    assert told.startswith("RAC: this turn was rolled back"), told
    assert "book_flight FL-101" in told  # the model hears the flight is gone
    assert world.calls.get("book_flight", 0) == 0  # nothing booked again after the restart
    assert world.calls.get("book_hotel", 0) == 0
    if phase == "before":
        assert _kinds(world) == []
    elif phase == "after":  # booked as the process died, with no result to undo it by: named
        assert _kinds(world) == ["hotel"]
        assert "Not undone" in told and "book_hotel" in told.split("Not undone")[1]
    else:  # logged: the hotel's booking id was in the log, so it was undone too
        assert _kinds(world) == []
        assert "book_hotel HT-102" in told
    assert out["messages"][-1].content == "Here is where your trip stands."


@pytest.mark.parametrize("phase", ["before", "after"])
def test_resume_without_recovery_never_repeats_the_interrupted_call(tmp_path: Path,
                                                                    phase: str) -> None:
    """Resuming without recovery: the call the crash interrupted is not run again and is named
    in doubt; the run stays running for `rac recover`."""
    world_path, log, threads = _crash(tmp_path, phase)
    world = TravelWorld(str(world_path))
    eng = _engine(log, world)
    m, _ = _resume(world, eng, threads)

    told = _last_hotel_answer(m)
    assert "may or may not have taken effect" in told and "not run again" in told
    assert world.calls.get("book_hotel", 0) == 0  # the interrupted call is not repeated
    assert _kinds(world).count("flight") == 1  # still booked, as the model was told
    [info] = eng.store.list_runs()
    assert info.status is rac.RunStatus.RUNNING  # left to `rac recover`
    eng.recover(stale_after=0.0)
    assert "flight" not in _kinds(world)


def test_resume_after_the_outcome_was_logged_answers_from_the_log(tmp_path: Path) -> None:
    """The hotel was booked and logged, but LangGraph never saved the step: on resume the graph
    runs the call again and RAC answers it from the log (booked once), and the turn ends."""
    world_path, log, threads = _crash(tmp_path, "logged")
    world = TravelWorld(str(world_path))
    eng = _engine(log, world)
    m, out = _resume(world, eng, threads, say("Your flight and hotel are booked."))

    assert "HT-102" in _last_hotel_answer(m)
    assert world.calls.get("book_hotel", 0) == 0
    assert _kinds(world) == ["flight", "hotel"]  # as the model says, each booked once
    [info] = eng.store.list_runs()
    assert info.status is rac.RunStatus.COMPLETED
    assert eng.recover(stale_after=0.0) == []  # nothing for recovery to undo
    assert out["messages"][-1].content == "Your flight and hotel are booked."


@pytest.mark.parametrize("recover_first", [True, False])
def test_crash_during_the_model_call_resumes_the_turn(tmp_path: Path,
                                                      recover_first: bool) -> None:
    """A crash during the model call between tools leaves the turn's run completed: recovery
    leaves it alone, and the resumed thread goes on in the same run."""
    world_path, log, threads = _crash(tmp_path, "model")
    world = TravelWorld(str(world_path))
    eng = _engine(log, world)
    if recover_first:
        assert eng.recover(stale_after=0.0) == []
    m, out = _resume(world, eng, threads,
                     turn(call("book_hotel", guest="ann", city="Paris", nights=2)),
                     say("Your flight and hotel are booked."))
    assert _kinds(world) == ["flight", "hotel"]
    assert world.calls.get("book_flight", 0) == 0
    [info] = eng.store.list_runs()  # one turn, one run, across the crash
    assert [r.tool for r in eng.store.get_records(info.run_id)] == ["book_flight", "book_hotel"]
    assert out["messages"][-1].content == "Your flight and hotel are booked."


@pytest.mark.parametrize("phase", ["before", "after"])
def test_resume_reconciles_the_interrupted_call_through_its_lookup(tmp_path: Path,
                                                                   phase: str) -> None:
    """Resuming without recovery, book_hotel declares a lookup: RAC asks the world whether the
    interrupted call took effect. Found (the crash came after the booking): the model gets the
    booking found, and nothing is booked again. Absent (the crash came before it): the call
    runs, once. Either way the turn ends with one hotel, as the model says, and nothing for
    recovery to undo."""
    world_path, log, threads = _crash(tmp_path, phase, lookup=True)
    world = TravelWorld(str(world_path))
    assert len(world.live("hotel")) == (1 if phase == "after" else 0)
    eng = _engine(log, world, lookup=True)
    m, out = _resume(world, eng, threads, say("Your flight and hotel are booked."), lookup=True)

    [hotel] = world.live("hotel")  # one hotel: never booked twice
    assert [e for e in world.ledger() if e[0] == "book_hotel"] == [
        ("book_hotel", hotel["booking_id"], "book")]
    assert world.calls.get("book_hotel", 0) == (0 if phase == "after" else 1)
    told = _last_hotel_answer(m)
    assert hotel["booking_id"] in told and "in doubt" not in told
    assert out["messages"][-1].content == "Your flight and hotel are booked."
    assert _kinds(world) == ["flight", "hotel"]

    [info] = eng.store.list_runs()
    recs = [r for r in eng.store.get_records(info.run_id) if r.kind is rac.RecordKind.ACTION]
    hotels = [(str(r.status), r.note) for r in recs if r.tool == "book_hotel"]
    if phase == "after":
        assert hotels == [("completed", "reconciled on resume: find_hotels found the effect")]
    else:
        assert hotels[0][0] == "failed" and "reconciled on resume" in str(hotels[0][1])
        assert hotels[1][0] == "completed"
    assert info.status is rac.RunStatus.COMPLETED  # settled: nothing left for `rac recover`
    assert eng.recover(stale_after=0.0) == []
    assert _kinds(world) == ["flight", "hotel"]


async def test_async_resume_reconciles_the_interrupted_call(tmp_path: Path) -> None:
    """The same on the async path (``ainvoke``, an async checkpointer): the lookup runs
    through ``await``, the booking found is the answer, nothing is booked twice."""
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    world_path, log, threads = _crash(tmp_path, "after", lookup=True)
    world = TravelWorld(str(world_path))
    eng = _engine(log, world, lookup=True)
    m = scripted_model(say("Your flight and hotel are booked."))
    tools = [*world_tools(world), find_hotels_tool(world)]
    async with AsyncSqliteSaver.from_conn_string(str(threads)) as saver:
        agent = create_agent(m, tools, middleware=[RACMiddleware(rac=eng)], checkpointer=saver)
        out = await agent.ainvoke(None, {"configurable": {"thread_id": "t-crash"}})

    [hotel] = world.live("hotel")
    assert world.calls.get("book_hotel", 0) == 0
    assert hotel["booking_id"] in _last_hotel_answer(m)
    assert out["messages"][-1].content == "Your flight and hotel are booked."
    [info] = eng.store.list_runs()
    assert info.status is rac.RunStatus.COMPLETED


def test_resume_never_takes_an_earlier_stay_for_the_interrupted_call(tmp_path: Path) -> None:
    """The guest already had a hotel in Paris before the turn (issue 25: the lookup took it
    for the interrupted call's): the lookup's snapshot, taken with the call's intent, leaves
    it out, and the resumed model is given the booking the call made."""
    TravelWorld(str(tmp_path / "world.db")).book_hotel("ann", "Paris", 5)  # an earlier stay
    world_path, log, threads = _crash(tmp_path, "after", lookup=True)
    world = TravelWorld(str(world_path))
    earlier, made = (b["booking_id"] for b in world.live("hotel"))
    eng = _engine(log, world, lookup=True)
    m, _ = _resume(world, eng, threads, say("Your flight and hotel are booked."), lookup=True)

    told = _last_hotel_answer(m)
    assert made in told and earlier not in told and "in doubt" not in told
    assert world.calls.get("book_hotel", 0) == 0 and len(world.live("hotel")) == 2
    [info] = eng.store.list_runs()
    [rec] = [r for r in eng.store.get_records(info.run_id) if r.tool == "book_hotel"]
    assert rec.status is rac.RecordStatus.COMPLETED and rec.result["booking_id"] == made


def test_resume_keeps_a_call_in_doubt_when_its_lookup_cannot_tell(tmp_path: Path) -> None:
    """After the crash, another booking of the guest in Paris appeared (someone else booked
    too): the lookup shows two bookings that were not there before the interrupted call and
    nothing tells which is its own, so it is not run again and stays in doubt, with the
    lookup's reason, for `rac recover`."""
    world_path, log, threads = _crash(tmp_path, "after", lookup=True)
    TravelWorld(str(world_path)).book_hotel("ann", "Paris", 5)  # another booking, meanwhile
    world = TravelWorld(str(world_path))
    eng = _engine(log, world, lookup=True)
    m, _ = _resume(world, eng, threads, lookup=True)

    told = _last_hotel_answer(m)
    assert "may or may not have taken effect" in told and "2 effects" in told
    assert world.calls.get("book_hotel", 0) == 0 and len(world.live("hotel")) == 2
    [info] = eng.store.list_runs()
    assert info.status is rac.RunStatus.RUNNING  # left to `rac recover`
    [rec] = [r for r in eng.store.get_records(info.run_id) if r.tool == "book_hotel"]
    assert rec.status is rac.RecordStatus.PENDING
