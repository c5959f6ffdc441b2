"""Virtual time: every wait in the benchmark advances a counter instead of sleeping."""

from __future__ import annotations


class VirtualClock:
    """A clock whose ``sleep`` advances time instantly; satisfies RAC's ``Clock`` protocol."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self._now = start
        self.slept = 0.0

    def now(self) -> float:
        """Current virtual time in seconds."""
        return self._now

    def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds`` (negative values are ignored)."""
        if seconds > 0:
            self._now += seconds

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` of virtual time."""
        if seconds > 0:
            self.slept += seconds
            self._now += seconds

    async def asleep(self, seconds: float) -> None:
        """Async form of :meth:`sleep`; never yields to real time."""
        self.sleep(seconds)


#: Virtual cost of one tool call (network round trip) in seconds.
TOOL_LATENCY_S = 0.2
#: Virtual cost of one policy step (one model call) in seconds.
POLICY_STEP_S = 1.5
