"""What only the PostgreSQL store does: migrating a log written by RAC 0.1 in place."""

from __future__ import annotations

from collections.abc import Iterator

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
