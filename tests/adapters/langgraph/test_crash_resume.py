"""Issue 14's crash harness: a LangGraph agent's process dies inside a tool call (before or
after the effect), then recovery and/or a resume of the thread run in a fresh process. Checked
against the world's own ledger and what the model was told last: nothing live that the model
was told is undone, nothing undone that it was told is booked, no effect performed twice."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import ToolMessage
from langgraph.checkpoint.sqlite import SqliteSaver

import rac
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld, VirtualClock
from rac_langgraph import RACMiddleware
from rac_langgraph.testing import say, scripted_model, world_tools

CRASHED = 86
#: The first process: book a flight, then die inside book_hotel (before or after its effect).
CHILD = """
import os, sqlite3, sys
from langchain.agents import create_agent
from langgraph.checkpoint.sqlite import SqliteSaver
import rac
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld, VirtualClock
from rac_langgraph import RACMiddleware
from rac_langgraph.testing import call, say, scripted_model, turn, world_tools

world_path, log, threads, phase, code = sys.argv[1:]
CRASH_CODE = int(code)
world = TravelWorld(world_path)
if phase == "before":
    world.on_call("book_hotel", lambda args: os._exit(CRASH_CODE))
else:
    real = world.book_hotel
    def book_hotel(guest: str, city: str, nights: int) -> dict:
        '''Book a hotel room.'''
        real(guest, city, nights)
        os._exit(CRASH_CODE)
    world.book_hotel = book_hotel
engine = rac.RAC(compensations=TRAVEL_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                 store=f"sqlite:///{log}", clock=VirtualClock(), load_entrypoints=False)
m = scripted_model(
    turn(call("book_flight", passenger="ann", origin="LHR", dest="CDG")),
    turn(call("book_hotel", guest="ann", city="Paris", nights=2)),
    say("Your flight and hotel are booked."))
conn = sqlite3.connect(threads, check_same_thread=False)
agent = create_agent(m, world_tools(world), middleware=[RACMiddleware(rac=engine)],
                     checkpointer=SqliteSaver(conn))
agent.invoke({"messages": [("user", "flight and hotel to Paris")]},
             {"configurable": {"thread_id": "t-crash"}})
sys.exit(1)
"""


def _crash(tmp_path: Path, phase: str) -> tuple[Path, Path, Path]:
    paths = tmp_path / "world.db", tmp_path / "rac.db", tmp_path / "threads.db"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    proc = subprocess.run([sys.executable, "-c", CHILD, *map(str, paths), phase, str(CRASHED)], env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == CRASHED, proc.stderr[-3000:]
    return paths


def _engine(log: Path, world: TravelWorld) -> rac.RAC:
    return rac.RAC(compensations=TRAVEL_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                   store=f"sqlite:///{log}", clock=VirtualClock(), load_entrypoints=False,
                   tools=world.tools())


def _resume(world: TravelWorld, eng: rac.RAC, threads: Path) -> tuple[Any, Any]:
    import sqlite3

    m = scripted_model(say("Here is where your trip stands."))
    with sqlite3.connect(threads, check_same_thread=False) as conn:
        agent = create_agent(m, world_tools(world), middleware=[RACMiddleware(rac=eng)],
                             checkpointer=SqliteSaver(conn))
        out = agent.invoke(None, {"configurable": {"thread_id": "t-crash"}})
    return m, out


def _last_hotel_answer(m: Any) -> str:
    answers = [t for t in m.seen[-1] if isinstance(t, ToolMessage) and t.name == "book_hotel"]
    return str(answers[-1].content)


@pytest.mark.parametrize("phase", ["before", "after"])
def test_recover_then_resume_tells_the_model_what_was_undone(tmp_path: Path,
                                                             phase: str) -> None:
    world_path, log, threads = _crash(tmp_path, phase)
    world = TravelWorld(str(world_path))
    eng = _engine(log, world)
    [recovered] = eng.recover(stale_after=0.0)  # `rac recover` after the restart
    assert world.calls.get("cancel_flight") == 1
    m, out = _resume(world, eng, threads)

    told = _last_hotel_answer(m)
    assert told.startswith("RAC: this turn was rolled back"), told
    assert "book_flight FL-101" in told  # the model hears the flight is gone
    assert "flight" not in [b["kind"] for b in world.live()]
    assert world.calls.get("book_flight", 0) == 0  # nothing booked again after the restart
    assert world.calls.get("book_hotel", 0) == 0
    hotels = [b for b in world.live() if b["kind"] == "hotel"]
    if phase == "after":  # the hotel was booked when the process died: named, not hidden
        assert len(hotels) == 1 and "Not undone" in told and "book_hotel" in told
    else:
        assert hotels == []
    assert out["messages"][-1].content == "Here is where your trip stands."
    assert recovered.run_id.startswith("lg-")


@pytest.mark.parametrize("phase", ["before", "after"])
def test_resume_without_recovery_never_repeats_the_interrupted_call(tmp_path: Path,
                                                                    phase: str) -> None:
    world_path, log, threads = _crash(tmp_path, phase)
    world = TravelWorld(str(world_path))
    eng = _engine(log, world)
    m, _ = _resume(world, eng, threads)

    told = _last_hotel_answer(m)
    assert "may or may not have taken effect" in told and "not run again" in told
    assert world.calls.get("book_hotel", 0) == 0  # the interrupted call is not repeated
    assert [b["kind"] for b in world.live()].count("flight") == 1  # still booked, as told
    [info] = eng.store.list_runs()
    assert info.status is rac.RunStatus.RUNNING  # left to `rac recover`
    [recovered] = eng.recover(stale_after=0.0)
    assert "flight" not in [b["kind"] for b in world.live()]
