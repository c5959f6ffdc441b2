"""Issue 14's crash harness, while interrupted: the agent's process dies (``os._exit``) while its
thread waits in an ``interrupt()``, either a tool's own (a person must confirm the hotel) or
RAC's approval of an irreversible call. After the restart, ``rac recover`` runs and the thread
resumes with the person's answer. Checked against the world's ledger and the model's last
message: the pause left the turn's run completed, so recovery undoes nothing; the resumed turn
is the same run, so a failure after the resume undoes what was booked before the pause; nothing
is done twice."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

import rac
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld, VirtualClock
from rac_langgraph import RACMiddleware
from rac_langgraph.testing import call, say, scripted_model, turn

CRASHED = 87
#: The first process: book a flight, then wait for a person (``kind``), and die while waiting.
CHILD = '''
import os, sqlite3, sys
from langchain.agents import create_agent
from langgraph.checkpoint.sqlite import SqliteSaver
import rac
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld, VirtualClock
from rac_langgraph import RACMiddleware
from rac_langgraph.testing import ScriptedModel, call, say, turn
from tests.adapters.langgraph.test_crash_interrupted import paused_tools

world_path, log, threads, kind, code = sys.argv[1:]
world = TravelWorld(world_path)
engine = rac.RAC(compensations=TRAVEL_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                 irreversible={"send_voucher": "approve"}, store=f"sqlite:///{log}",
                 clock=VirtualClock(), load_entrypoints=False)
second = (call("book_hotel", guest="ann", city="Paris", nights=2) if kind == "tool"
          else call("send_voucher", who="ann"))
m = ScriptedModel(messages=iter([
    turn(call("book_flight", passenger="ann", origin="LHR", dest="CDG")), turn(second)]))
conn = sqlite3.connect(threads, check_same_thread=False)
agent = create_agent(m, paused_tools(world), middleware=[RACMiddleware(rac=engine)],
                     checkpointer=SqliteSaver(conn))
out = agent.invoke({"messages": [("user", "flight and hotel to Paris")]},
                   {"configurable": {"thread_id": "t-paused"}}, durability="sync")
if out.get("__interrupt__"):  # waiting for the person: the process dies now
    os._exit(int(code))
sys.exit(1)
'''


def paused_tools(world: TravelWorld) -> list[Any]:
    """The world's booking tools, a hotel booking a person must confirm (an ``interrupt()``
    inside the tool), and an irreversible voucher (RAC asks for its approval)."""
    from langchain_core.tools import StructuredTool
    from langgraph.types import interrupt

    from rac_langgraph.testing import world_tools

    def book_hotel(guest: str, city: str, nights: int) -> dict[str, Any]:
        """Book a hotel once the guest confirmed it."""
        if interrupt({"confirm": f"{nights} nights in {city}"}) != "yes":
            raise rac.PermanentError("the guest did not confirm the hotel")
        return world.book_hotel(guest, city, nights)

    def send_voucher(who: str) -> dict[str, Any]:
        """E-mail a travel voucher (it cannot be taken back)."""
        with _outbox(world).open("a") as out:  # survives the process, like the world
            out.write(f"{who}\n")
        return {"voucher_for": who}

    return [*world_tools(world, ["book_flight", "cancel_flight", "cancel_hotel", "book_car",
                                 "cancel_car"]),
            StructuredTool.from_function(book_hotel), StructuredTool.from_function(send_voucher)]


def _outbox(world: TravelWorld) -> Path:
    return Path(world.path).with_name("outbox.txt")


def _sent(world: TravelWorld) -> list[str]:
    box = _outbox(world)
    return box.read_text().split() if box.exists() else []


def _crash_while_paused(tmp_path: Path, kind: str) -> tuple[Path, Path, Path]:
    paths = tmp_path / "world.db", tmp_path / "rac.db", tmp_path / "threads.db"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    proc = subprocess.run([sys.executable, "-c", CHILD, *map(str, paths), kind, str(CRASHED)],
                          env=env, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == CRASHED, proc.stderr[-3000:]
    return paths


def _restart(log: Path, world: TravelWorld) -> rac.RAC:
    return rac.RAC(compensations=TRAVEL_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                   irreversible={"send_voucher": "approve"}, store=f"sqlite:///{log}",
                   clock=VirtualClock(), load_entrypoints=False, tools=world.tools())


def _resume(world: TravelWorld, eng: rac.RAC, threads: Path, answer: str,
            *replies: Any) -> tuple[Any, Any]:
    m = scripted_model(*replies)
    with sqlite3.connect(threads, check_same_thread=False) as conn:
        agent = create_agent(m, paused_tools(world), middleware=[RACMiddleware(rac=eng)],
                             checkpointer=SqliteSaver(conn))
        out = agent.invoke(Command(resume=answer), {"configurable": {"thread_id": "t-paused"}},
                           durability="sync")
    return m, out


def _booked(world: TravelWorld, tool: str) -> int:
    return sum(1 for t, _, event in world.ledger() if t == tool and event == "book")


def _cancelled(world: TravelWorld, tool: str) -> int:
    return sum(1 for t, _, event in world.ledger() if t == tool and event == "cancel")


@pytest.mark.parametrize(("kind", "answer"), [("tool", "yes"), ("approval", "approve")])
def test_recover_then_resume_yes_then_a_failure_undoes_the_whole_turn(
        tmp_path: Path, kind: str, answer: str) -> None:
    world_path, log, threads = _crash_while_paused(tmp_path, kind)
    world = TravelWorld(str(world_path))
    assert _booked(world, "book_flight") == 1
    world.fail("book_car", "permanent", message="no cars left")
    eng = _restart(log, world)
    assert eng.recover(stale_after=0.0) == []  # a paused turn is completed: nothing undone
    assert [b["kind"] for b in world.live()] == ["flight"]

    m, out = _resume(world, eng, threads, answer,
                     turn(call("book_car", driver="ann", city="Paris")),
                     say("No car left: I cancelled the flight and the hotel."))
    assert _booked(world, "book_flight") == 1  # never twice
    assert _cancelled(world, "cancel_flight") == 1  # the same turn's failure undid it
    if kind == "tool":
        assert _booked(world, "book_hotel") == 1 and _cancelled(world, "cancel_hotel") == 1
    else:
        assert _sent(world) == ["ann"]  # approved after the restart: sent once
    assert world.live() == []
    [info] = eng.store.list_runs()  # the turn is one run across the crash
    [report] = [t for t in m.seen[-1] if getattr(t, "status", None) == "error"]
    assert "book_flight FL-101 (via cancel_flight)" in str(report.content)
    if kind == "tool":
        assert "book_hotel HT-102 (via cancel_hotel)" in str(report.content)
        assert info.status is rac.RunStatus.COMPENSATED
        assert "The world is back to how it was" in str(report.content)
    else:  # the voucher was sent and has no undo: named, never an all-clear
        assert "send_voucher" in str(report.content)
        assert "world is back" not in str(report.content)
        assert info.status is rac.RunStatus.NEEDS_ATTENTION
    assert out["messages"][-1].content == "No car left: I cancelled the flight and the hotel."


def test_recover_then_resume_deny_refuses_the_voucher_and_keeps_the_flight(
        tmp_path: Path) -> None:
    """Denied after the restart: the voucher never goes out, and the flight the model was told
    is booked stays booked."""
    world_path, log, threads = _crash_while_paused(tmp_path, "approval")
    world = TravelWorld(str(world_path))
    eng = _restart(log, world)
    assert eng.recover(stale_after=0.0) == []
    m, out = _resume(world, eng, threads, "deny", say("Your flight is booked; no voucher."))

    assert [b["kind"] for b in world.live()] == ["flight"] and _sent(world) == []
    assert _booked(world, "book_flight") == 1
    [told] = [t for t in m.seen[-1] if getattr(t, "status", None) == "error"]
    assert "approval was denied" in str(told.content)
    assert out["messages"][-1].content == "Your flight is booked; no voucher."


def test_recover_then_resume_no_undoes_the_turn_and_the_model_hears_it(
        tmp_path: Path) -> None:
    """The guest says no after the restart: the hotel tool fails, which rolls back the turn the
    flight was booked in (the same run, across the crash); the model is told the flight is
    undone, so it never tells the user it is booked."""
    world_path, log, threads = _crash_while_paused(tmp_path, "tool")
    world = TravelWorld(str(world_path))
    eng = _restart(log, world)
    assert eng.recover(stale_after=0.0) == []
    m, out = _resume(world, eng, threads, "no", say("Nothing is booked."))

    assert world.live() == [] and _booked(world, "book_hotel") == 0
    assert _booked(world, "book_flight") == 1 and _cancelled(world, "cancel_flight") == 1
    [told] = [t for t in m.seen[-1] if getattr(t, "status", None) == "error"]
    assert "did not confirm" in str(told.content)
    assert "book_flight FL-101 (via cancel_flight)" in str(told.content)
    assert out["messages"][-1].content == "Nothing is booked."
