"""What only the PostgreSQL store does: migrating a log written by RAC 0.1 in place."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from rac.models import RecordStatus, RunInfo
from rac.stores.postgres import PostgresStore, split_url
from rac.stores.sql import MIGRATIONS
from rac.testing.conformance import make_record, postgres_test_url

LATEST = max(v for v, _ in MIGRATIONS)


@pytest.fixture
def url() -> Iterator[str]:
    url = postgres_test_url()
    yield url
    dsn, schema = split_url(url)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'.encode())


def test_a_v1_log_migrates_in_place(url: str) -> None:
    store = PostgresStore(url)
    store.create_run(RunInfo("old-run"))
    store.append(make_record("old-run", 1, status=RecordStatus.COMPLETED, effect="", undo=None))
    store.close()
    # Take the schema back to what RAC 0.1 wrote: migration 1 only.
    dsn, schema = split_url(url)
    with psycopg.connect(dsn, autocommit=True) as conn:
        for stmt in (f'ALTER TABLE "{schema}".rac_records DROP COLUMN effect',
                     f'ALTER TABLE "{schema}".rac_records DROP COLUMN undo',
                     f'ALTER TABLE "{schema}".rac_records DROP COLUMN call_id',
                     f'ALTER TABLE "{schema}".rac_runs DROP COLUMN report',
                     f'ALTER TABLE "{schema}".rac_records DROP COLUMN happened',
                     f'DROP TABLE "{schema}".rac_meta', f'DROP TABLE "{schema}".rac_pairs',
                     f'DELETE FROM "{schema}".rac_schema_migrations WHERE version > 1'):
            conn.execute(stmt.encode())

    again = PostgresStore(url)
    assert again.schema_version() == LATEST
    (old,) = again.get_records("old-run")
    assert (old.status, old.effect, old.undo) == (RecordStatus.COMPLETED, "", None)
    again.update_record("old-run", 1, effect="unsafe", undo={"booking_id": "FL-1"})
    assert again.get_records("old-run")[0].undo == {"booking_id": "FL-1"}
    again.close()
    third = PostgresStore(url)  # a second process starting up applies nothing twice
    assert third.schema_version() == LATEST
    third.close()


def _open_at_once(url: str, barrier: Any, errors: Any) -> None:
    """A process starting up: wait for the others, then open the log (and its new schema)."""
    barrier.wait()
    try:
        store = PostgresStore(url)
        store.close()
    except BaseException as e:  # noqa: BLE001 - reported to the parent
        errors.put(f"{type(e).__name__}: {e}")


def test_processes_opening_a_new_schema_at_once_all_succeed() -> None:
    """Issue 28: two (here four) processes opening a log whose schema does not exist yet, at
    the same instant: the schema and the migrations are made once, under one advisory lock, and
    nobody dies of a UniqueViolation (5 of 30 trials did)."""
    ctx = multiprocessing.get_context("fork")
    for trial in range(20):
        url = postgres_test_url()
        barrier, errors = ctx.Barrier(4), ctx.Queue()
        procs = [ctx.Process(target=_open_at_once, args=(url, barrier, errors))
                 for _ in range(4)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(120)
        failures = []
        while not errors.empty():
            failures.append(errors.get())
        try:
            assert [p.exitcode for p in procs] == [0, 0, 0, 0], f"trial {trial}: {failures}"
            assert failures == [], f"trial {trial}: {failures}"
            store = PostgresStore(url)
            assert store.schema_version() == LATEST
            store.close()
        finally:
            dsn, schema = split_url(url)
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'.encode())
