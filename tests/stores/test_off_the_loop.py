"""Issue 28: the async path never blocks its event loop on the log. The log's writes wait on
the disk (SQLite's fsync) or a server; an async run makes them on a worker thread, so other
coroutines go on meanwhile. The "slow fsync" here is a commit that cannot finish until the
event loop has run another coroutine: were the write made on the loop, the loop could never
run it and the write would wait in vain."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

import rac
from rac.stores import SQLiteStore
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld, VirtualClock

#: How long a commit waits for the loop to tick before it says the loop is blocked.
PATIENCE = 60.0


class SlowDisk:
    """Makes each commit of ``store`` wait until the event loop's ticker has seen it."""

    def __init__(self, store: SQLiteStore) -> None:
        self.arrived = threading.Event()
        self.go = threading.Event()
        self.waited = 0
        self.blocked: list[str] = []
        real = store.commit

        def commit(changes: Any, *, durable: bool = True) -> None:
            self.go.clear()
            self.arrived.set()
            if not self.go.wait(PATIENCE):
                self.blocked.append(f"a commit of {len(changes)} change(s) waited {PATIENCE} s: "
                                    "the event loop never ticked while it synced")
            else:
                self.waited += 1
            real(changes, durable=durable)

        store.commit = commit  # type: ignore[method-assign]

    async def ticker(self, stop: asyncio.Event) -> int:
        """Tick while the loop is free; let each waiting commit through. Returns the ticks."""
        ticks = 0
        while not stop.is_set():
            await asyncio.sleep(0.001)
            ticks += 1
            if self.arrived.is_set():
                self.arrived.clear()
                self.go.set()
        return ticks


async def _trip(tmp_path: Path, fail_hotel: bool) -> tuple[SlowDisk, int, TravelWorld]:
    world = TravelWorld()
    if fail_hotel:
        world.fail("book_hotel", "permanent", message="full")
    store = SQLiteStore(tmp_path / "log.db")
    disk = SlowDisk(store)
    engine = rac.RAC(compensations=TRAVEL_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                     tools=world.tools(), store=store, clock=VirtualClock(),
                     load_entrypoints=False)
    stop = asyncio.Event()
    ticking = asyncio.create_task(disk.ticker(stop))
    try:
        async with engine.run() as run:
            await run.acall("book_flight", passenger="ann", origin="SFO", dest="CDG")
            await run.acall("book_hotel", guest="ann", city="Paris", nights=2)
    except rac.ToolCallFailed:
        assert fail_hotel
    finally:
        stop.set()
        ticks = await ticking
    store.close()
    return disk, ticks, world


@pytest.mark.parametrize("fail_hotel", [False, True], ids=["calls", "rollback"])
async def test_the_loop_keeps_ticking_while_the_log_syncs(tmp_path: Path,
                                                         fail_hotel: bool) -> None:
    disk, ticks, world = await _trip(tmp_path, fail_hotel)
    assert disk.blocked == []
    assert disk.waited >= (6 if fail_hotel else 4)  # the run, the intents, outcomes, the undo
    assert ticks >= disk.waited
    assert [b["kind"] for b in world.live()] == ([] if fail_hotel else ["flight", "hotel"])


async def test_an_async_adapter_finishing_its_run_after_each_call_never_blocks_the_loop(
        tmp_path: Path) -> None:
    """LangGraph's and Semantic Kernel's async adapters finish the run after every call:
    ``afinish`` (and ``arelease``) write the log off the loop too."""
    world = TravelWorld()
    store = SQLiteStore(tmp_path / "log.db")
    disk = SlowDisk(store)
    engine = rac.RAC(compensations=TRAVEL_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                     tools=world.tools(), store=store, clock=VirtualClock(),
                     load_entrypoints=False)
    stop = asyncio.Event()
    ticking = asyncio.create_task(disk.ticker(stop))
    run = engine.run()
    try:
        for city in ("Paris", "Rome"):
            outcome = await run.aexecute(
                "book_hotel", {"guest": "ann", "city": city, "nights": 1},
                lambda name, a: run.tool(name).ainvoke(a))  # type: ignore[union-attr]
            assert outcome.ok
            assert await run.afinish()
        await run.arelease()
    finally:
        stop.set()
        await ticking
    store.close()
    assert disk.blocked == []
    assert disk.waited >= 5  # the run, two intents, two outcomes, two finishes
