"""A virtual clock: time moves only when RAC (or the test) sleeps or advances it."""

from __future__ import annotations

import asyncio
import threading


class VirtualClock:
    """A :class:`rac.Clock` whose sleeps return at once and advance virtual time.

    ``sleeps`` lists every wait asked for, so tests can assert on backoff without real time.
    """

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self._now = start
        self._lock = threading.Lock()
        self.sleeps: list[float] = []

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        """Move virtual time forward."""
        with self._lock:
            self._now += max(seconds, 0.0)

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.sleeps.append(seconds)
            self._now += max(seconds, 0.0)

    async def asleep(self, seconds: float) -> None:
        self.sleep(seconds)
        await asyncio.sleep(0)
