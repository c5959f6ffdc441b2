"""Exactly once across processes is by ``tool_call_id`` (issue 29): after a crash and a resume in
a fresh process, a call the turn already made is answered from the log, and a new call that
happens to be identical (a second room, by design) runs. A call whose step the checkpointer lost
(the model, asked again, makes it under a new id) is still answered from the log."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from langchain.agents import create_agent
from langchain_core.messages import ToolMessage
from langgraph.checkpoint.sqlite import SqliteSaver

import rac
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld, VirtualClock
from rac_langgraph import RACMiddleware
from rac_langgraph.testing import call, say, scripted_model, turn, world_tools

CRASHED = 87
HOTEL = {"guest": "ann", "city": "Paris", "nights": 2}
#: The first process books a room, then dies in the model call after it. With "lost", its
#: checkpointer keeps only the input checkpoint (as a remote database may, at a crash).
CHILD = '''
import os, sqlite3, sys
from langchain.agents import create_agent
from langgraph.checkpoint.sqlite import SqliteSaver
import rac
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld, VirtualClock
from rac_langgraph import RACMiddleware
from rac_langgraph.testing import ScriptedModel, call, say, turn, world_tools
from tests.adapters.langgraph.support import LosesSteps

world_path, log, threads, code, keep = sys.argv[1:]
world = TravelWorld(world_path)


def script():
    yield turn(call("book_hotel", guest="ann", city="Paris", nights=2))
    os._exit(int(code))

engine = rac.RAC(compensations=TRAVEL_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                 store=f"sqlite:///{log}", clock=VirtualClock(), load_entrypoints=False)
conn = sqlite3.connect(threads, check_same_thread=False)
saver = SqliteSaver(conn) if keep == "kept" else LosesSteps(conn)
agent = create_agent(ScriptedModel(messages=script()), world_tools(world),
                     middleware=[RACMiddleware(rac=engine)], checkpointer=saver)
agent.invoke({"messages": [("user", "two rooms in Paris")]},
             {"configurable": {"thread_id": "t-twice"}}, durability="sync")
sys.exit(1)
'''


def _crash(tmp_path: Path, keep: str) -> tuple[Path, Path, Path]:
    paths = tmp_path / "world.db", tmp_path / "rac.db", tmp_path / "threads.db"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    proc = subprocess.run([sys.executable, "-c", CHILD, *map(str, paths), str(CRASHED), keep],
                          env=env, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == CRASHED, proc.stderr[-3000:]
    return paths


@pytest.mark.parametrize("keep", ["kept", "lost"])
def test_an_identical_second_call_runs_and_a_repeated_one_does_not(tmp_path: Path,
                                                                   keep: str) -> None:
    world_path, log, threads = _crash(tmp_path, keep)
    world = TravelWorld(str(world_path))
    [first_room] = [b["booking_id"] for b in world.live("hotel")]
    eng = rac.RAC(compensations=TRAVEL_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                  store=f"sqlite:///{log}", clock=VirtualClock(), load_entrypoints=False,
                  tools=world.tools())
    # Resumed, the model makes a booking_hotel call identical to the first: with the first
    # call's step kept, it is the second room the user asked for; with it lost, the model was
    # asked again from the input and this is the first call made anew.
    m = scripted_model(turn(call("book_hotel", **HOTEL)), say("Booked."))
    with sqlite3.connect(threads, check_same_thread=False) as conn:
        agent = create_agent(m, world_tools(world), middleware=[RACMiddleware(rac=eng)],
                             checkpointer=SqliteSaver(conn))
        agent.invoke(None, {"configurable": {"thread_id": "t-twice"}})

    booked = [e for e in world.ledger() if e[0] == "book_hotel"]
    answers = [str(t.content) for t in m.seen[-1] if isinstance(t, ToolMessage)]
    if keep == "kept":
        assert len(booked) == 2 and len(world.live("hotel")) == 2
        [second_room] = [b["booking_id"] for b in world.live("hotel")
                         if b["booking_id"] != first_room]
        assert first_room in answers[0] and second_room in answers[1], answers
    else:
        assert len(booked) == 1 and len(world.live("hotel")) == 1
        [answer] = answers
        assert first_room in answer, answer  # the logged result, not a second booking
    [info] = eng.store.list_runs()
    recs = [r for r in eng.store.get_records(info.run_id) if r.kind is rac.RecordKind.ACTION]
    assert all(r.call_id for r in recs)
    assert len(recs) == (2 if keep == "kept" else 1)
