"""Time as RAC sees it: an injectable clock, so backoff and leases are testable without real sleeps."""

from __future__ import annotations

import asyncio
import time
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    """What RAC needs of time: the current time, and a way to wait (blocking and async)."""

    def now(self) -> float:
        """Seconds since the epoch."""
        ...

    def sleep(self, seconds: float) -> None:
        """Block the calling thread for ``seconds``."""
        ...

    async def asleep(self, seconds: float) -> None:
        """Wait ``seconds`` without blocking the event loop."""
        ...


class SystemClock:
    """The real clock: ``time.time``, ``time.sleep`` and ``asyncio.sleep``."""

    #: ``time.time`` itself: read on every call, so no Python frame in between.
    now = staticmethod(time.time)

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)

    async def asleep(self, seconds: float) -> None:
        await asyncio.sleep(max(seconds, 0.0))
