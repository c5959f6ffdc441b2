"""A resumed model that makes no tool call still hears of the rollback (``tell_model=True``).

With LangGraph's default ``durability="async"`` the checkpoints of the steps before a crash may
be lost; the resumed thread then asks the model again from an earlier step, and the model may
answer without calling a tool, so a rollback notice given as a tool answer would never reach it.
Here the first process loses every checkpoint after its input (a checkpointer that drops them:
the worst case of "async", made deterministic), books a flight, and dies inside the hotel call;
``rac recover`` undoes the flight; the resumed model is told before it answers."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

import rac
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld, VirtualClock
from rac_langgraph import RACMiddleware
from rac_langgraph.testing import call, say, scripted_model, turn, world_tools
from tests.adapters.langgraph.support import engine, model

CRASHED = 88
CHILD = '''
import os, sqlite3, sys
from langchain.agents import create_agent
from langgraph.checkpoint.sqlite import SqliteSaver
import rac
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld, VirtualClock
from rac_langgraph import RACMiddleware
from rac_langgraph.testing import ScriptedModel, call, say, turn, world_tools
from tests.adapters.langgraph.support import LosesSteps

world_path, log, threads, code = sys.argv[1:]
world = TravelWorld(world_path)
world.on_call("book_hotel", lambda args: os._exit(int(code)))


engine = rac.RAC(compensations=TRAVEL_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                 store=f"sqlite:///{log}", clock=VirtualClock(), load_entrypoints=False)
m = ScriptedModel(messages=iter([
    turn(call("book_flight", passenger="ann", origin="LHR", dest="CDG")),
    turn(call("book_hotel", guest="ann", city="Paris", nights=2))]))
agent = create_agent(m, world_tools(world), middleware=[RACMiddleware(rac=engine)],
                     checkpointer=LosesSteps(sqlite3.connect(threads, check_same_thread=False)))
agent.invoke({"messages": [("user", "flight and hotel to Paris")]},
             {"configurable": {"thread_id": "t-lost"}})
sys.exit(1)
'''


def _crash(tmp_path: Path) -> tuple[Path, Path, Path]:
    paths = tmp_path / "world.db", tmp_path / "rac.db", tmp_path / "threads.db"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    proc = subprocess.run([sys.executable, "-c", CHILD, *map(str, paths), str(CRASHED)],
                          env=env, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == CRASHED, proc.stderr[-3000:]
    return paths


def test_a_resumed_model_that_calls_no_tool_is_told_of_the_rollback(tmp_path: Path) -> None:
    world_path, log, threads = _crash(tmp_path)
    world = TravelWorld(str(world_path))
    eng = rac.RAC(compensations=TRAVEL_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                  store=f"sqlite:///{log}", clock=VirtualClock(), load_entrypoints=False,
                  tools=world.tools())
    [recovered] = eng.recover(stale_after=0.0)  # `rac recover` after the restart
    assert world.live() == [] and world.calls.get("cancel_flight") == 1

    m = scripted_model(say("Nothing is booked yet; shall I try again?"))
    with sqlite3.connect(threads, check_same_thread=False) as conn:
        agent = create_agent(m, world_tools(world),
                             middleware=[RACMiddleware(rac=eng, tell_model=True)],
                             checkpointer=SqliteSaver(conn))
        cfg: Any = {"configurable": {"thread_id": "t-lost"}}
        out = agent.invoke(None, cfg)  # the thread lost its steps: the model is asked again

    [first] = m.seen
    assert first[-1].type == "human"  # asked again from the input: no tool step survived
    system = first[0]
    assert isinstance(system, SystemMessage)
    assert system.content.startswith("RAC: this turn was rolled back")
    assert "book_flight FL-101" in system.content  # before it acts, it hears the flight is gone
    assert recovered.run_id in {i.run_id for i in eng.store.list_runs()}
    assert world.calls.get("book_flight", 0) == 0 and world.calls.get("book_hotel", 0) == 0
    assert out["messages"][-1].content == "Nothing is booked yet; shall I try again?"


def test_tell_model_changes_nothing_for_an_ordinary_thread() -> None:
    """Every turn of a checkpointed thread without a crash: no notice, the model's system
    message is its own, the bookings are made once."""
    world = TravelWorld()
    eng = engine()
    m = model(turn(call("book_flight", passenger="ann", origin="LHR", dest="CDG")),
              say("flight booked"), turn(call("book_hotel", guest="ann", city="Paris",
                                              nights=2)), say("hotel booked"))
    agent = create_agent(m, world_tools(world), system_prompt="You book trips.",
                         middleware=[RACMiddleware(rac=eng, tell_model=True)],
                         checkpointer=InMemorySaver())
    cfg: Any = {"configurable": {"thread_id": "t-ordinary"}}
    agent.invoke({"messages": [("user", "a flight")]}, cfg)
    agent.invoke({"messages": [("user", "and a hotel")]}, cfg)
    assert all(seen[0].content == "You book trips." for seen in m.seen)
    assert sorted(b["kind"] for b in world.live()) == ["flight", "hotel"]
    assert len(eng.store.list_runs()) == 2


async def test_the_notice_on_the_async_path(tmp_path: Path) -> None:
    """``ainvoke`` with an async checkpointer: the notice is found with ``await``."""
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    world_path, log, threads = _crash(tmp_path)
    world = TravelWorld(str(world_path))
    eng = rac.RAC(compensations=TRAVEL_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                  store=f"sqlite:///{log}", clock=VirtualClock(), load_entrypoints=False,
                  tools=world.tools())
    eng.recover(stale_after=0.0)
    m = scripted_model(say("Nothing is booked yet."))
    async with AsyncSqliteSaver.from_conn_string(str(threads)) as saver:
        agent = create_agent(m, world_tools(world),
                             middleware=[RACMiddleware(rac=eng, tell_model=True)],
                             checkpointer=saver)
        await agent.ainvoke(None, {"configurable": {"thread_id": "t-lost"}})
    [first] = m.seen
    assert isinstance(first[0], SystemMessage)
    assert "book_flight FL-101" in first[0].content
