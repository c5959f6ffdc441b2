"""The crash harness at every write of a turn (issue 29): the agent's process is killed right
after the n-th record write of a flight-and-hotel turn (each call's intent and outcome), with and
without a lookup for the hotel; then `rac recover` and a resume of the thread run in a fresh
process, in both orders. After both: no booking made twice, nothing live that the model was told
is undone, nothing undone that the model was last told is booked."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, SystemMessage, ToolMessage

from rac.testing import TravelWorld
from rac_langgraph.testing import call, say, turn
from tests.adapters.langgraph.test_crash_resume import CRASHED, _engine, _resume

#: The first process: the turn of test_crash_resume's child, killed after the n-th record write.
CHILD = '''
import os, sys
import rac
from tests.adapters.langgraph import test_crash_points as here
n = int(sys.argv.pop())
class Kill:
    seen = 0
    @rac.hookimpl
    def rac_record_written(self, record, previous):
        Kill.seen += 1
        if Kill.seen == n:
            os._exit(here.CRASHED)
import tests.adapters.langgraph.test_crash_resume as crash
exec(compile(crash.CHILD.replace("plugins = []", "plugins = [Kill()]"), "child", "exec"))
'''
_IDS = re.compile(r"\b[A-Z]{2}-\d+\b")


def _crash_at(tmp_path: Path, n: int, lookup: bool) -> tuple[Path, Path, Path]:
    paths = tmp_path / "world.db", tmp_path / "rac.db", tmp_path / "threads.db"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    proc = subprocess.run([sys.executable, "-c", CHILD, *map(str, paths), "none", str(CRASHED),
                           "1" if lookup else "0", str(n)],
                          env=env, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == CRASHED, proc.stderr[-3000:]
    return paths


def _beliefs(seen: list[BaseMessage]) -> tuple[set[str], set[str]]:
    """(ids the model was told are booked, ids it was told are undone), from the last input it
    got: tool answers that succeeded, and RAC's notes and reports."""
    booked: set[str] = set()
    undone: set[str] = set()
    for m in seen:
        text = str(m.content)
        if isinstance(m, ToolMessage) and m.status != "error":
            booked |= set(_IDS.findall(text))
        if isinstance(m, ToolMessage | SystemMessage) and "RAC:" in text:
            for part in re.split(r"(?=RAC:)", text):
                if "Undone, newest first:" in part:
                    undone |= set(_IDS.findall(part.split("Undone, newest first:")[1]
                                              .split("Not undone")[0]))
                elif "was undone" in part:
                    undone |= set(_IDS.findall(part))
    return booked, undone


@pytest.mark.parametrize("lookup", [False, True])
@pytest.mark.parametrize("n", [1, 2, 3, 4])
@pytest.mark.parametrize("order", ["recover, resume", "resume, recover"])
def test_after_any_write_the_world_and_the_model_agree(tmp_path: Path, n: int, lookup: bool,
                                                       order: str) -> None:
    world_path, log, threads = _crash_at(tmp_path, n, lookup)
    world = TravelWorld(str(world_path))
    eng = _engine(log, world, lookup=lookup)
    replies: list[Any] = []
    if n <= 2:  # killed in the flight's call: the resumed model goes on to the hotel
        replies.append(turn(call("book_hotel", guest="ann", city="Paris", nights=2)))
    replies.append(say("Here is where your trip stands."))
    if order == "recover, resume":
        eng.recover(stale_after=0.0)
        m, _ = _resume(world, eng, threads, *replies, lookup=lookup)
    else:
        m, _ = _resume(world, eng, threads, *replies, lookup=lookup)
        eng.recover(stale_after=0.0)

    ledger = world.ledger()
    for tool in ("book_flight", "book_hotel"):
        made = [e for e in ledger if e[0] == tool]
        assert len(made) <= 1, f"{tool} made twice: {ledger}"
    live = {b["booking_id"] for b in world.live()}
    booked, undone = _beliefs(m.seen[-1])
    assert not (live & undone), f"live but told undone: {live & undone}; {ledger}"
    interrupted = "book_flight" if n <= 2 else "book_hotel"
    if not lookup or order == "recover, resume":
        # Never made again: not blindly, and never after recovery settled the turn (only a
        # lookup that shows the call had no effect, before recovery, lets it run).
        assert world.calls.get(interrupted, 0) == 0, "a call the turn made was made again"
    if order == "recover, resume":  # the model's last word came after recovery's
        gone = {e[1] for e in ledger if e[1]} - live
        assert not (gone & (booked - undone)), (
            f"undone but told booked: {gone & (booked - undone)}; {ledger}")
