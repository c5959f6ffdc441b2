"""Regression (from a review of the core), the bug it guarded against: an in-doubt (pending, not in flight) action whose compensation args cannot be mapped goes
PENDING -> COMPENSATION_FAILED, which LEGAL_TRANSITIONS forbids: the rollback raises
RuntimeError midway and the older, completed effects are never compensated."""
import asyncio

import pytest

from rac.models import Record, RecordKind, RecordStatus, RunInfo, RunStatus


def test_recovery_of_in_doubt_record_does_not_abort(make_engine, world, store):
    engine = make_engine()
    # A dead process: flight completed, hotel intent written, outcome missing.
    flight = world.book_flight("ada", "PAR", "NYC")
    store.create_run(RunInfo("r1", "agent", RunStatus.RUNNING, 1.0, 1.0, owner=None))
    store.append(Record("r1", 1, "book_flight", RecordKind.ACTION, RecordStatus.COMPLETED,
                        args={"passenger": "ada", "origin": "PAR", "dest": "NYC"},
                        result=flight, attempts=1, idempotency_key="k1"))
    store.append(Record("r1", 2, "book_hotel", RecordKind.ACTION, RecordStatus.PENDING,
                        args={"guest": "ada", "city": "NYC", "nights": 2},
                        attempts=1, idempotency_key="k2"))
    (res,) = engine.recover()
    assert res.outcome != "error", res.reason
    assert world.live("flight") == []


def test_cancel_during_tool_then_rollback_compensates_the_rest(make_engine, world):
    engine = make_engine()
    started = asyncio.Event()

    async def slow_hotel(guest: str, city: str, nights: int) -> dict:
        started.set()
        await asyncio.sleep(10)
        return world.book_hotel(guest, city, nights)

    async def body(run):
        await run.acall("book_flight", passenger="ada", origin="PAR", dest="NYC")
        await run.acall(slow_hotel, guest="ada", city="NYC", nights=2)

    async def main():
        engine.registry.add("slow_hotel", "cancel_hotel")
        run = engine.run()

        async def agent():
            async with run:
                await body(run)

        t = asyncio.create_task(agent())
        await started.wait()
        t.cancel()
        with pytest.raises(asyncio.CancelledError):
            await t
        return run

    run = asyncio.run(main())
    # The flight completed and the run was aborted: it must be compensated.
    assert world.live("flight") == [], [(r.tool, r.status) for r in run.records()]
