"""An async graph never waits on RAC's log on its event loop: every write of a turn (the run's
row, each call's intent and outcome, the run completed after each tool step) and every read
of it (finding a checkpointed turn's run, an earlier turn's rollback) is made while the loop
goes on running other coroutines.

The log's commits wait until the loop has run on, as a slow disk would keep them: a commit made
on the loop's own thread is recorded as such (and not kept waiting: the loop could not run on),
and one whose loop does not run on meanwhile is recorded as blocked, after a real-time guard of
30 s that only a stalled loop ever reaches (nothing here depends on the machine's speed)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langgraph.checkpoint.memory import InMemorySaver

import rac
from rac.stores.sqlite import SQLiteStore
from rac.testing import TravelWorld
from rac_langgraph import RACMiddleware, tool_node
from tests.adapters.langgraph import support as lg

GUARD = 30.0


class WaitsForTheLoop(SQLiteStore):
    """A SQLite log whose every commit made while a loop is watched waits until the loop has
    ticked twice more (see the module's docs)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.ticks = 0
        self.watching = False
        self.loop_thread: int | None = None
        self.commits = 0
        self.on_the_loop: list[str] = []
        self.blocked: list[str] = []

    def commit(self, changes: Sequence[Any], *, durable: bool = True) -> None:
        if self.watching:
            self.commits += 1
            what = ", ".join(type(c).__name__ for c in changes)
            if threading.get_ident() == self.loop_thread:
                self.on_the_loop.append(what)  # waiting here would wait forever
                return super().commit(changes, durable=durable)
            start, deadline = self.ticks, time.monotonic() + GUARD
            while self.ticks < start + 2:
                if time.monotonic() > deadline:
                    self.blocked.append(what)
                    break
                time.sleep(0.001)
        super().commit(changes, durable=durable)

    def get_run(self, run_id: str) -> Any:
        self._on_loop("get_run")
        return super().get_run(run_id)

    def get_records(self, run_id: str) -> Any:
        self._on_loop("get_records")
        return super().get_records(run_id)

    def _on_loop(self, what: str) -> None:
        if self.watching and threading.get_ident() == self.loop_thread:
            self.on_the_loop.append(what)


async def _watched(store: WaitsForTheLoop, work: Any) -> None:
    """Run ``work`` while a coroutine ticks the loop."""
    done = asyncio.Event()

    async def ticker() -> None:
        while not done.is_set():
            store.ticks += 1
            await asyncio.sleep(0.001)

    store.loop_thread = threading.get_ident()
    tick = asyncio.create_task(ticker())
    store.watching = True
    try:
        await work
    finally:
        store.watching = False
        done.set()
        await tick


@pytest.mark.parametrize("hand_built", [False, True])
async def test_an_async_turn_writes_its_log_off_the_event_loop(tmp_path: Path,
                                                               hand_built: bool) -> None:
    """Without a checkpointer: every commit of the turn, its rollback's too, off the loop."""
    world = TravelWorld()
    world.fail("book_car", "permanent")
    store = WaitsForTheLoop(tmp_path / "rac.db")
    eng = lg.engine(store=store)
    m = lg.model(lg.turn(lg.call("book_flight", **lg.FLIGHT)),
                 lg.turn(lg.call("book_hotel", **lg.HOTEL)),
                 lg.turn(lg.call("book_car", **lg.CAR)), lg.say("Nothing is booked."))
    tools = lg.world_tools(world)
    if hand_built:
        agent = lg.agent_graph(m, tool_node(tools, rac=eng))
    else:
        agent = create_agent(m, tools, middleware=[RACMiddleware(rac=eng)])
    await _watched(store, agent.ainvoke({"messages": [("user", "Book me a trip")]}))

    assert store.blocked == [] and store.on_the_loop == []
    # the turn was written, steps completed, and rolled back: the writes were the real ones
    assert store.commits >= 8
    [info] = store.list_runs()
    assert info.status is rac.RunStatus.COMPENSATED and world.live() == []
    store.close()


async def test_a_checkpointed_async_thread_reads_the_log_off_the_event_loop(
        tmp_path: Path) -> None:
    """With a checkpointer, finding a turn's run reads the log (is it a run to continue?), and
    a new turn reads it for an earlier turn's rollback: off the loop too, in two turns."""
    world = TravelWorld()
    store = WaitsForTheLoop(tmp_path / "rac.db")
    eng = lg.engine(store=store)
    m = lg.model(lg.turn(lg.call("book_flight", **lg.FLIGHT)), lg.say("Booked."),
                 lg.turn(lg.call("book_hotel", **lg.HOTEL)), lg.say("Booked too."))
    agent = create_agent(m, lg.world_tools(world), middleware=[RACMiddleware(rac=eng)],
                         checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t-async"}}
    for text in ("Book me a flight", "And a hotel"):
        await _watched(store, agent.ainvoke({"messages": [("user", text)]}, config))
    assert store.blocked == [] and store.on_the_loop == []
    assert [r.status for r in store.list_runs()] == [rac.RunStatus.COMPLETED] * 2
    assert sorted(b["kind"] for b in world.live()) == ["flight", "hotel"]
    store.close()
