"""Parallel calls in one scope: a call still running when a rollback starts is undone when it
completes. The async path never blocks the loop and shares every decision with the sync one."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

import rac
from rac.testing import TravelWorld, VirtualClock, assert_no_live_effects


def test_sibling_finishing_after_rollback_started_is_compensated(engine: rac.RAC,
                                                                  world: TravelWorld) -> None:
    rollback_started = threading.Event()
    hotel_entered = threading.Event()

    class Signal:
        @rac.hookimpl
        def rac_rollback_started(self, run_id: str, scope: str, seqs: list[int],
                                 reason: str) -> None:
            rollback_started.set()

    engine.register_plugin(Signal())

    def slow_hotel(args: dict[str, Any]) -> None:
        hotel_entered.set()
        assert rollback_started.wait(60)

    world.on_call("book_hotel", slow_hotel)
    world.fail("book_car", "permanent")
    with engine.run() as run:
        run.call("book_flight", passenger="a", origin="X", dest="Y")
        with ThreadPoolExecutor(2) as pool:
            hotel = pool.submit(run.call, "book_hotel", guest="a", city="Rome", nights=1)
            assert hotel_entered.wait(60)
            car = pool.submit(run.call, "book_car", driver="a", city="Rome")
            with pytest.raises(rac.ToolCallFailed) as failed:
                car.result(60)
            with pytest.raises(rac.ToolCallFailed) as undone:
                hotel.result(60)
    assert [u.tool for u in failed.value.report.in_flight] == ["book_hotel"]
    assert "completed after this run was rolled back" in str(undone.value)
    assert_no_live_effects(world)
    assert run.status is rac.RunStatus.COMPENSATED
    statuses = {r.tool: r.status for r in run.records() if r.kind is rac.RecordKind.ACTION}
    assert statuses["book_hotel"] is rac.RecordStatus.COMPENSATED


def test_many_threads_share_one_run(engine: rac.RAC, world: TravelWorld) -> None:
    with engine.run() as run, ThreadPoolExecutor(8) as pool:
        futures = [pool.submit(run.call, "book_hotel", guest=f"g{i}", city="Rome", nights=1)
                   for i in range(40)]
        for f in futures:
            f.result()
    recs = engine.store.get_records(run.run_id)
    assert sorted(r.seq for r in recs) == list(range(1, 41))
    assert len(world.live()) == 40


async def test_async_rollback_with_async_tools(make_engine: Any, clock: VirtualClock) -> None:
    live: dict[str, str] = {}

    async def reserve(item: str) -> dict[str, Any]:
        await asyncio.sleep(0)
        live[f"R-{item}1"] = item
        return {"reservation_id": f"R-{item}1"}

    async def release(reservation_id: str) -> dict[str, Any]:
        await asyncio.sleep(0)
        live.pop(reservation_id)
        return {"released": True}

    attempts = {"n": 0}

    async def pay(amount: float) -> dict[str, Any]:
        attempts["n"] += 1
        raise rac.TransientError("gateway timeout")

    engine = make_engine(tools=[reserve, release, pay], compensations={"reserve": "release"},
                         read_only=[])
    async with engine.run() as run:
        await run.acall(reserve, item="a")
        await run.acall(reserve, item="b")
        with pytest.raises(rac.ToolCallFailed) as failed:
            await run.acall(pay, amount=3.0)
    assert live == {} and attempts["n"] == 3 and clock.sleeps == [0.5, 1.0]
    assert [u.ref for u in failed.value.report.compensated] == ["R-b1", "R-a1"]


async def test_gathered_calls_with_sibling_in_flight(engine: rac.RAC, world: TravelWorld) -> None:
    started = asyncio.Event()
    release = asyncio.Event()

    class Signal:
        @rac.hookimpl
        def rac_rollback_started(self, run_id: str, scope: str, seqs: list[int],
                                 reason: str) -> None:
            release.set()

    engine.register_plugin(Signal())

    async def ainvoke(name: str, args: dict[str, Any]) -> Any:
        if name == "book_hotel":
            started.set()
            await release.wait()
        if name == "book_car":
            await started.wait()
        return await asyncio.to_thread(getattr(world, name), **args)

    world.fail("book_car", "permanent")
    async with engine.run() as run:
        hotel, car = await asyncio.gather(
            run.aexecute("book_hotel", {"guest": "a", "city": "Rome", "nights": 1}, ainvoke),
            run.aexecute("book_car", {"driver": "a", "city": "Rome"}, ainvoke))
    assert not car.ok and car.report is not None
    assert hotel.undone and not hotel.ok
    assert_no_live_effects(world)
    assert run.status is rac.RunStatus.COMPENSATED


async def test_backoff_never_blocks_the_event_loop(make_engine: Any) -> None:
    # A real clock with a long backoff: the loop must stay responsive while RAC waits.
    engine = make_engine(clock=rac.SystemClock(),
                         retry=rac.RetryPolicy(max_attempts=2, initial_delay=0.2, jitter=0))
    n = {"calls": 0}

    async def flaky(x: int) -> dict[str, Any]:
        n["calls"] += 1
        if n["calls"] == 1:
            raise rac.TransientError("busy")
        return {"ok": True}

    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while n["calls"] < 2:
            ticks += 1
            await asyncio.sleep(0.01)

    async with engine.run() as run:
        await asyncio.gather(run.acall(rac.Tool.from_function(flaky), x=1), ticker())
    assert ticks >= 5


async def test_cancellation_during_rollback_finishes_the_rollback(make_engine: Any) -> None:
    live = {"A-1", "A-2"}
    in_cancel = asyncio.Event()
    go = asyncio.Event()

    async def book(n: int) -> dict[str, Any]:
        return {"booking_id": f"A-{n}"}

    async def cancel(booking_id: str) -> dict[str, Any]:
        in_cancel.set()
        await go.wait()
        live.discard(booking_id)
        return {"cancelled": True}

    engine = make_engine(tools=[book, cancel], compensations={"book": "cancel"})

    async def agent() -> None:
        async with engine.run() as run:
            await run.acall("book", n=1)
            await run.acall("book", n=2)
            await run.arollback("abort")

    task = asyncio.create_task(agent())
    await in_cancel.wait()
    task.cancel()
    await asyncio.sleep(0)
    go.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert live == set()
