"""``tell_model`` on a resume from a mid-turn checkpoint (issue 29): the checkpointer kept the
steps up to the flight's tool step and lost the later ones (a remote database losing its last
writes); the process died inside the hotel call; ``rac recover`` cancelled the flight. The
resumed thread runs the model first, from that mid-turn checkpoint: the model hears the flight
is gone before it answers, and nothing is booked again."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import SystemMessage, ToolMessage
from langgraph.checkpoint.sqlite import SqliteSaver

import rac
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld, VirtualClock
from rac_langgraph import RACMiddleware
from rac_langgraph.testing import say, scripted_model, world_tools

CRASHED = 89
CHILD = '''
import os, sqlite3, sys
from langchain.agents import create_agent
from langgraph.checkpoint.sqlite import SqliteSaver
import rac
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld, VirtualClock
from rac_langgraph import RACMiddleware
from rac_langgraph.testing import ScriptedModel, call, say, turn, world_tools

world_path, log, threads, code = sys.argv[1:]
world = TravelWorld(world_path)
world.on_call("book_hotel", lambda args: os._exit(int(code)))


class KeepsUntilFlight(SqliteSaver):
    """Keeps the checkpoints up to the flight's tool step, loses the later ones."""

    def put(self, config, checkpoint, metadata, new_versions):
        if metadata.get("step", 0) <= 2:
            return super().put(config, checkpoint, metadata, new_versions)
        return {"configurable": {**config["configurable"], "checkpoint_id": checkpoint["id"]}}

    def put_writes(self, config, writes, task_id, task_path=""):
        return None  # a step's pending writes are lost with it


engine = rac.RAC(compensations=TRAVEL_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                 store=f"sqlite:///{log}", clock=VirtualClock(), load_entrypoints=False)
m = ScriptedModel(messages=iter([
    turn(call("book_flight", passenger="ann", origin="LHR", dest="CDG")),
    turn(call("book_hotel", guest="ann", city="Paris", nights=2))]))
agent = create_agent(m, world_tools(world), middleware=[RACMiddleware(rac=engine)],
                     checkpointer=KeepsUntilFlight(sqlite3.connect(threads,
                                                                   check_same_thread=False)))
agent.invoke({"messages": [("user", "flight and hotel to Paris")]},
             {"configurable": {"thread_id": "t-mid"}}, durability="sync")
sys.exit(1)
'''


@pytest.mark.parametrize("use_async", [False, True])
async def test_a_resume_from_a_mid_turn_checkpoint_tells_the_model_first(
        tmp_path: Path, use_async: bool) -> None:
    paths = tmp_path / "world.db", tmp_path / "rac.db", tmp_path / "threads.db"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    proc = subprocess.run([sys.executable, "-c", CHILD, *map(str, paths), str(CRASHED)],
                          env=env, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == CRASHED, proc.stderr[-3000:]
    world_path, log, threads = paths
    world = TravelWorld(str(world_path))
    eng = rac.RAC(compensations=TRAVEL_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                  store=f"sqlite:///{log}", clock=VirtualClock(), load_entrypoints=False,
                  tools=world.tools())
    [recovered] = eng.recover(stale_after=0.0)
    assert world.live() == [] and world.calls.get("cancel_flight") == 1

    m = scripted_model(say("Your flight was cancelled; nothing is booked."))
    cfg: Any = {"configurable": {"thread_id": "t-mid"}}
    if use_async:
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        async with AsyncSqliteSaver.from_conn_string(str(threads)) as saver:
            agent = create_agent(m, world_tools(world), middleware=[RACMiddleware(rac=eng)],
                                 checkpointer=saver)
            await agent.ainvoke(None, cfg)
    else:
        with sqlite3.connect(threads, check_same_thread=False) as conn:
            agent = create_agent(m, world_tools(world), middleware=[RACMiddleware(rac=eng)],
                                 checkpointer=SqliteSaver(conn))
            agent.invoke(None, cfg)

    [first] = m.seen
    # Resumed from the mid-turn checkpoint: the flight's answer is in the history...
    assert any(isinstance(x, ToolMessage) and "FL-101" in str(x.content) for x in first)
    # ...and before the model acts, it hears that it no longer holds.
    system = first[0]
    assert isinstance(system, SystemMessage), first
    assert system.content.startswith("RAC: this turn was rolled back"), system.content
    assert "book_flight FL-101" in system.content
    assert recovered.run_id in {i.run_id for i in eng.store.list_runs()}
    assert world.calls.get("book_flight", 0) == 0 and world.calls.get("book_hotel", 0) == 0
    # The hotel call was interrupted with nothing to undo it by: named, never called undone.
    assert "Not undone" in system.content and "book_hotel" in system.content.split(
        "Not undone")[1]
    info = eng.store.get_run(recovered.run_id)
    assert info is not None and info.status is rac.RunStatus.NEEDS_ATTENTION
