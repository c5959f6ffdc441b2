"""Regression (from a review of the core), the bug it guarded against: `_shielded` re-raises CancelledError when the shielded compensation finished in the same
loop iteration as the cancel (`if task.done(): raise`): the finished compensation's result is
lost, the error is thrown into the rollback, and the remaining compensations never run."""
import asyncio

import pytest

from rac.models import RecordStatus


def test_cancel_as_compensation_finishes_does_not_stop_rollback(make_engine, world):
    holder = {}

    async def acancel_hotel(booking_id: str) -> dict:
        res = world.cancel_hotel(booking_id)
        holder["task"].cancel()  # cancellation lands just as the compensation completes
        return res

    engine = make_engine(compensations={"book_flight": "cancel_flight", "book_hotel": "acancel_hotel"},
                         tools=[*world.tools(), acancel_hotel])

    async def main():
        run = engine.run()

        async def agent():
            async with run:
                await run.acall("book_flight", passenger="ada", origin="PAR", dest="NYC")
                await run.acall("book_hotel", guest="ada", city="NYC", nights=2)
                raise RuntimeError("agent gave up")

        holder["task"] = asyncio.create_task(agent())
        with pytest.raises((asyncio.CancelledError, RuntimeError)):
            await holder["task"]
        return run

    run = asyncio.run(main())
    st = {r.tool: r.status for r in run.records()}
    assert world.live() == [], st
    assert st["book_hotel"] is RecordStatus.COMPENSATED, st
