"""Regression (from a review of the core), the bug it guarded against: a cancellation during a (non-shielded) retry backoff is thrown into the flow at
`yield Sleep(...)` in `_attempts`, which is outside the try that calls `_interrupted`: the record
stays in `_in_flight` forever, the rollback dooms it, and the run stays COMPENSATING."""
import asyncio

import pytest

from rac.models import RunStatus
from rac.testing import VirtualClock


class BlockingClock(VirtualClock):
    def __init__(self):
        super().__init__()
        self.sleeping = None

    async def asleep(self, seconds):
        self.sleeping.set()
        await asyncio.sleep(10)


def test_cancel_in_backoff_leaves_no_record_in_flight(make_engine, world):
    clock = BlockingClock()
    engine = make_engine(clock=clock)
    world.fail("book_hotel", "transient", times=1)

    async def main():
        clock.sleeping = asyncio.Event()
        run = engine.run()

        async def agent():
            async with run:
                await run.acall("book_flight", passenger="ada", origin="PAR", dest="NYC")
                await run.acall("book_hotel", guest="ada", city="NYC", nights=2)

        t = asyncio.create_task(agent())
        await clock.sleeping.wait()
        t.cancel()
        with pytest.raises(asyncio.CancelledError):
            await t
        return run

    run = asyncio.run(main())
    assert world.live() == []
    assert run.in_flight == set()
    assert run.status in (RunStatus.COMPENSATED, RunStatus.NEEDS_ATTENTION), run.status
