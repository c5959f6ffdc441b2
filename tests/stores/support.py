"""Helpers of the store tests: a fresh PostgreSQL schema, and another process holding a SQLite
log's lock."""

from __future__ import annotations

import multiprocessing
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: Bound on waiting for a helper process; generous for a loaded 2-core machine.
TIMEOUT = 120


def drop_schema(url: str) -> None:
    """Drop the PostgreSQL schema a test URL names (whatever is in it, or nothing)."""
    import psycopg

    from rac.stores.postgres import split_url

    dsn, schema = split_url(url)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'.encode())


@contextmanager
def fresh_postgres_url() -> Iterator[str]:
    """The URL of a schema of its own on the test server (skips without one), dropped after."""
    from rac.testing.conformance import postgres_test_url

    url = postgres_test_url()
    try:
        yield url
    finally:
        drop_schema(url)


def _hold_exclusive(path: str, ready: object, release: object) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA locking_mode=EXCLUSIVE")
    conn.execute("BEGIN EXCLUSIVE")
    conn.execute("UPDATE runs SET summary='held'")
    ready.set()  # type: ignore[attr-defined]
    release.wait(TIMEOUT)  # type: ignore[attr-defined]
    conn.execute("COMMIT")
    conn.close()


@contextmanager
def exclusive_lock(path: Path) -> Iterator[object]:
    """Another process holds an exclusive lock on the SQLite log at ``path`` (having set every
    run's summary to ``held``, not yet committed) until the event yielded is set."""
    ctx = multiprocessing.get_context("spawn")
    ready, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_hold_exclusive, args=(str(path), ready, release))
    holder.start()
    try:
        assert ready.wait(TIMEOUT), f"the lock holder did not start within {TIMEOUT} s"
        yield release
    finally:
        release.set()
        holder.join(TIMEOUT)


@contextmanager
def postgres_runs_locked(url: str) -> Iterator[None]:
    """A PostgreSQL log at ``url`` with one run, whose runs table another session holds under
    an ACCESS EXCLUSIVE lock while the block runs."""
    import psycopg

    from rac.models import RunInfo, RunStatus
    from rac.stores.postgres import PostgresStore, split_url

    writer = PostgresStore(url)
    writer.create_run(RunInfo("run-1", status=RunStatus.COMPLETED))
    writer.close()
    dsn, schema = split_url(url)
    holder = psycopg.connect(dsn)
    try:
        holder.execute(f'LOCK TABLE "{schema}".rac_runs IN ACCESS EXCLUSIVE MODE'.encode())
        yield
    finally:
        holder.rollback()
        holder.close()
