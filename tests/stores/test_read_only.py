"""Opening a log read-only (what `rac runs`, `rac show` and every read command do): nothing is
ever created or written, a missing, corrupt or newer log is one clear error, and a locked one
is waited for within a bound, with the wait announced.

Run against real SQLite files and a real PostgreSQL server (a fresh schema per test)."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from rac.errors import StoreError
from rac.models import RecordStatus, RunInfo, RunStatus
from rac.stores import SQLiteStore, open_store
from rac.stores.postgres import PostgresStore, split_url
from rac.stores.sql import MIGRATIONS
from rac.testing.conformance import make_record
from tests.stores.support import exclusive_lock, fresh_postgres_url, postgres_runs_locked

LATEST = max(v for v, _ in MIGRATIONS)
GOLDEN = Path(__file__).parents[1] / "reliability" / "fixtures" / "golden-v0.1-log.db"


def digest(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` with a hash of its bytes: what a read must not change.

    SQLite's shared-memory index (``-shm``) and an empty write-ahead file (``-wal``) are left
    out: SQLite makes them beside a WAL-mode database to read it, read-only connections too,
    and they hold none of the log."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()
            and not p.name.endswith("-shm") and not (p.name.endswith("-wal")
                                                     and p.stat().st_size == 0)}


def written_log(path: Path) -> str:
    store = SQLiteStore(path)
    store.create_run(RunInfo("run-1", status=RunStatus.COMPLETED, created_at=1.0))
    store.append(make_record("run-1", 1, status=RecordStatus.COMPLETED))
    store.close()
    return f"sqlite:///{path}"


# -- SQLite -----------------------------------------------------------------------------------
def test_a_missing_sqlite_log_is_an_error_naming_it_and_nothing_is_created(
        tmp_path: Path) -> None:
    target = tmp_path / "typo" / "deeper" / "ops.db"
    with pytest.raises(StoreError, match=r"no log at .*typo/deeper/ops\.db"):
        open_store(f"sqlite:///{target}", read_only=True)
    assert list(tmp_path.iterdir()) == []


def test_a_read_only_open_reads_and_refuses_every_write(tmp_path: Path) -> None:
    url = written_log(tmp_path / "log.db")
    before = digest(tmp_path)
    store = open_store(url, read_only=True)
    assert [r.run_id for r in store.list_runs()] == ["run-1"]
    assert [r.seq for r in store.get_records("run-1")] == [1]
    with pytest.raises(StoreError, match="read-only"):
        store.update_run("run-1", status=RunStatus.RUNNING)
    with pytest.raises(StoreError, match="read-only"):
        store.append(make_record("run-1", 2))
    with pytest.raises(StoreError, match="read-only"):
        store.claim_run("run-1", "me", 0.0, 10.0)
    store.close()
    assert digest(tmp_path) == before


def test_a_corrupt_sqlite_log_is_one_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not a database at all " * 50)
    for read_only in (True, False):
        with pytest.raises(StoreError, match=r"bad\.db is not a RAC log") as err:
            open_store(f"sqlite:///{bad}", read_only=read_only)
        assert "\n" not in str(err.value)
    assert bad.read_bytes() == b"this is not a database at all " * 50


def test_an_empty_file_is_not_taken_for_an_empty_log(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    with pytest.raises(StoreError, match="no RAC log in it"):
        open_store(f"sqlite:///{empty}", read_only=True)
    assert empty.read_bytes() == b""


def mark_newer(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO schema_migrations(version, applied_at) VALUES (99, 0)")
    conn.commit()
    conn.close()


def test_a_log_of_a_newer_schema_is_refused_by_readers_and_writers(tmp_path: Path) -> None:
    url = written_log(tmp_path / "log.db")
    mark_newer(tmp_path / "log.db")
    before = digest(tmp_path)
    for read_only in (True, False):
        with pytest.raises(StoreError, match=f"newer RAC.*schema version 99.*{LATEST}"):
            open_store(url, read_only=read_only)
    assert digest(tmp_path) == before


def test_an_older_log_is_read_as_it_is_without_migrating_it(tmp_path: Path) -> None:
    copy = tmp_path / "golden.db"
    copy.write_bytes(GOLDEN.read_bytes())
    before = digest(tmp_path)
    store = open_store(f"sqlite:///{copy}", read_only=True)
    (info,) = store.list_runs()
    assert info.status is RunStatus.COMPENSATING
    assert [r.tool for r in store.get_records(info.run_id)] == [
        "book_flight", "book_hotel", "book_car", "cancel_hotel"]
    store.close()
    assert digest(tmp_path) == before


@pytest.fixture
def locked_log(tmp_path: Path) -> Iterator[tuple[str, object]]:
    """A log another process holds an exclusive lock on, until the test releases it."""
    url = written_log(tmp_path / "log.db")
    with exclusive_lock(tmp_path / "log.db") as release:
        yield url, release


def test_a_locked_log_is_waited_for_within_the_bound_and_the_wait_is_announced(
        locked_log: tuple[str, object]) -> None:
    url, _release = locked_log
    said: list[str] = []
    with pytest.raises(StoreError, match=r"stayed locked for 0\.3 s"):
        store = open_store(url, read_only=True, wait=0.3, on_wait=said.append)
        store.list_runs()
    assert len(said) == 1 and "locked by another process" in said[0] and "0.3 s" in said[0]


def test_a_lock_released_during_the_wait_lets_the_read_go_on(
        locked_log: tuple[str, object]) -> None:
    url, release = locked_log
    said: list[str] = []

    def announced(text: str) -> None:
        said.append(text)
        release.set()  # type: ignore[attr-defined]  # the writer finishes meanwhile

    store = open_store(url, read_only=True, wait=120.0, on_wait=announced)
    assert [r.summary for r in store.list_runs()] == ["held"]
    assert len(said) == 1
    store.close()


# -- PostgreSQL --------------------------------------------------------------------------------
@pytest.fixture
def pg_url() -> Iterator[str]:
    with fresh_postgres_url() as url:
        yield url


def schema_exists(url: str) -> bool:
    dsn, schema = split_url(url)
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute("SELECT 1 FROM pg_namespace WHERE nspname=%s",
                            (schema,)).fetchone() is not None


def test_a_missing_postgres_log_is_an_error_and_no_schema_is_created(pg_url: str) -> None:
    with pytest.raises(StoreError, match="no RAC log .*rac_schema"):
        open_store(pg_url, read_only=True)
    assert not schema_exists(pg_url)


def test_a_postgres_log_opened_read_only_refuses_writes(pg_url: str) -> None:
    writer = PostgresStore(pg_url)
    writer.create_run(RunInfo("run-1", status=RunStatus.COMPLETED))
    writer.close()
    store = open_store(pg_url, read_only=True)
    assert [r.run_id for r in store.list_runs()] == ["run-1"]
    with pytest.raises(StoreError, match="read-only"):
        store.update_run("run-1", status=RunStatus.RUNNING)
    store.close()
    again = PostgresStore(pg_url)
    assert again.get_run("run-1").status is RunStatus.COMPLETED  # type: ignore[union-attr]
    again.close()


def test_a_postgres_log_of_a_newer_schema_is_refused_and_never_written(pg_url: str) -> None:
    writer = PostgresStore(pg_url)
    writer.create_run(RunInfo("run-1", status=RunStatus.COMPLETED))
    writer.close()
    dsn, schema = split_url(pg_url)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'INSERT INTO "{schema}".rac_schema_migrations VALUES (99, 0)'.encode())
    for read_only in (True, False):
        with pytest.raises(StoreError, match="newer RAC.*schema version 99"):
            open_store(pg_url, read_only=read_only)
    with psycopg.connect(dsn, autocommit=True) as conn:
        versions = conn.execute(
            f'SELECT version FROM "{schema}".rac_schema_migrations ORDER BY 1'.encode()
        ).fetchall()
    assert [v for (v,) in versions] == [*range(1, LATEST + 1), 99]


def test_a_locked_postgres_log_is_waited_for_within_the_bound(pg_url: str) -> None:
    said: list[str] = []
    with postgres_runs_locked(pg_url), pytest.raises(StoreError,
                                                     match=r"stayed locked for 0\.5 s"):
        store = open_store(pg_url, read_only=True, wait=0.5, on_wait=said.append)
        store.list_runs()
    assert len(said) == 1 and "locked by another process" in said[0]
