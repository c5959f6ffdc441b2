"""RAC's filters never block the event loop on the log (issue 30): the auto function
invocation filter closes an invocation's run with ``Run.afinish``, so while the log's write
waits (a slow disk, a busy server) other tasks of the loop run."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path

import rac
from rac.models import RunStatus
from rac.testing import TravelWorld
from rac_semantic_kernel import enable_rac
from tests.adapters.semantic_kernel.support import FLIGHT, travel_kernel, trip_agent

#: A safety net against a hang: the gate normally opens at once.
WAIT = 10.0


class SlowCompletion:
    """Holds the write that marks a run completed until the loop has ticked (a RAC plugin;
    the hook runs on the thread that wrote the status)."""

    def __init__(self) -> None:
        self.writing = threading.Event()
        self.gate = threading.Event()
        self.opened_in_time: bool | None = None

    @rac.hookimpl
    def rac_run_status_changed(self, run_id: str, status: RunStatus,
                               previous: RunStatus | None) -> None:
        if status is RunStatus.COMPLETED and self.opened_in_time is None:
            self.writing.set()
            self.opened_in_time = self.gate.wait(WAIT)


async def test_the_loop_keeps_ticking_while_the_log_writes(
        world: TravelWorld, make_engine: Callable[..., rac.RAC], tmp_path: Path) -> None:
    slow = SlowCompletion()
    engine = make_engine(store=f"sqlite:///{tmp_path / 'rac.db'}", plugins=[slow])
    agent, _ = trip_agent(travel_kernel(world), [[FLIGHT], "Booked."])
    enable_rac(agent, rac=engine)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while not slow.gate.is_set():
            ticks += 1
            if slow.writing.is_set():
                slow.gate.set()  # the loop ran while the write was held: let it go
            await asyncio.sleep(0)

    ticking = asyncio.create_task(ticker())
    try:
        await agent.get_response(messages="A flight.")  # no run open: the filter's own
    finally:
        slow.gate.set()
        await ticking
    assert slow.opened_in_time is True, "the event loop was blocked by the log's write"
    [info] = engine.store.list_runs()
    assert info.status is RunStatus.COMPLETED
    engine.store.close()
