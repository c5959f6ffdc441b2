"""The floor under any durable log: bare SQLite commits of one row, flushed to disk.

A turn whose log must survive a crash pays for its flushed commits, whatever writes them. The
adapters' overhead suites time, in the same rounds as the turns, the commits a RAC turn flushes
(counted with :func:`durable_commits`) made directly with ``sqlite3`` on the same disk, opened
as RAC's SQLite store opens its log (WAL, ``synchronous=FULL``, each write in ``BEGIN
IMMEDIATE`` ... ``COMMIT``), one row each, on the calling thread: what RAC costs beyond that is
its own. The split is approximate on a busy disk: a flush waits for whatever the file system
must write with it (RAC's unflushed commits of the previous turn, other processes' writes), so
the floor's commits and RAC's can each pay for the other's; compare the CPU times too.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


class FsyncFloor:
    """``commits`` flushed commits of one row each to a SQLite file of its own."""

    def __init__(self, path: Path, commits: int) -> None:
        self.commits = commits
        self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=FULL")
        self._conn.execute("CREATE TABLE IF NOT EXISTS rows (id INTEGER PRIMARY KEY, v TEXT)")
        self._n = 0

    def __call__(self) -> None:
        """Make the commits (each flushed before it returns)."""
        conn = self._conn
        for _ in range(self.commits):
            self._n += 1
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO rows (v) VALUES (?)", (f"intent {self._n}",))
            conn.execute("COMMIT")

    async def acall(self) -> None:
        """:meth:`__call__`, awaitable (on the event loop's thread: the least it can cost)."""
        self()

    def close(self) -> None:
        self._conn.close()


@contextmanager
def durable_commits(store: Any) -> Iterator[Callable[[], int]]:
    """Count the flushed commits ``store`` makes inside the block (``store.commit(...,
    durable=True)``, the store API's durable write); gives a function reading the count."""
    count = [0]
    commit = store.commit

    def counting(changes: Any, *, durable: bool = True) -> None:
        count[0] += bool(durable)
        commit(changes, durable=durable)

    store.commit = counting
    try:
        yield lambda: count[0]
    finally:
        del store.commit
