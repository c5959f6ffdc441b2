"""Opening a log read-only: what the SQL stores do differently when a read command (``rac
runs``, ``rac show``, ...) opens a log with ``open_store(url, read_only=True)``.

A read-only open never creates or writes anything: a log that does not exist is an error naming
where it was looked for (no folder, no file, no schema is made); a file that is not a database
is an error saying so; a log written by a newer RAC (a schema version this one does not know)
is refused, by readers and writers alike, so nothing of this version ever writes to it; every
write method raises. A lock another process holds is waited for, up to ``wait`` seconds, and
the wait is announced once through ``on_wait`` (the CLI prints it on stderr).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from rac.errors import StoreError

T = TypeVar("T")

#: How long a read-only open waits for a lock another process holds (seconds).
DEFAULT_WAIT = 10.0
#: How long one try waits inside the database before RAC looks at the clock again (seconds).
WAIT_SLICE = 0.25


class ReadOnlyError(StoreError):
    """A write was asked of a log opened read-only."""


def refuse_write(where: str) -> ReadOnlyError:
    """The error every write of a read-only store raises."""
    return ReadOnlyError(f"the log {where} was opened read-only; nothing is written to it")


def check_version(where: str, version: int, latest: int) -> None:
    """Refuse a log whose schema is newer than this RAC's (readers and writers alike)."""
    if version > latest:
        raise StoreError(
            f"the log {where} was written by a newer RAC (schema version {version}; this "
            f"RAC knows up to {latest}): upgrade rac-core to use it; nothing was written to it")


class LockWait:
    """A bounded, announced wait for a lock another process holds.

    :meth:`run` calls a function until it stops raising one of ``locked`` (the backend's
    "the lock is held" errors), announcing the wait once through ``on_wait`` and giving up
    with a :class:`StoreError` after ``seconds``. Real time: the wait is for another process.
    """

    def __init__(self, where: str, seconds: float,
                 on_wait: Callable[[str], None] | None) -> None:
        self.where = where
        self.seconds = max(0.0, float(seconds))
        self.on_wait = on_wait
        self._announced = False

    @property
    def slice(self) -> float:
        """How long one try may wait inside the database."""
        return min(WAIT_SLICE, self.seconds) if self.seconds > 0 else 0.0

    def run(self, fn: Callable[[], T], locked: Callable[[BaseException], bool]) -> T:
        started: float | None = None
        while True:
            try:
                return fn()
            except Exception as e:
                if not locked(e):
                    raise
                now = time.monotonic()
                if started is None:
                    started = now - self.slice  # the first try already waited its slice
                    self._announce()
                if now - started >= self.seconds:
                    raise StoreError(
                        f"the log {self.where} stayed locked for {self.seconds:g} s (another "
                        "process holds it): try again later, or wait longer with --wait"
                    ) from e
                time.sleep(min(0.05, self.slice))

    def _announce(self) -> None:
        if self._announced:
            return
        self._announced = True
        text = (f"the log {self.where} is locked by another process; waiting up to "
                f"{self.seconds:g} s")
        if self.on_wait is not None:
            self.on_wait(text)
        else:
            from rac.events import emit

            emit("rac.store_locked", level="warning", store=self.where, status="waiting",
                 wait=self.seconds)


__all__ = ["DEFAULT_WAIT", "LockWait", "ReadOnlyError", "check_version", "refuse_write"]
