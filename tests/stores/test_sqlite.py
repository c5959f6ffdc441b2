"""What only the SQLite store does: private files, durability settings, migrating old files."""

from __future__ import annotations

import shutil
import sqlite3
import stat
from pathlib import Path

import pytest

from rac.errors import StoreError
from rac.models import RecordStatus
from rac.stores import SQLiteStore, open_store
from rac.stores.sql import MIGRATIONS
from rac.testing.conformance import make_record

GOLDEN = Path(__file__).parents[1] / "reliability" / "fixtures" / "golden-v0.1-log.db"
LATEST = max(v for v, _ in MIGRATIONS)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_new_log_and_its_folder_are_private_to_the_owner(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    store = open_store("sqlite:///.rac/rac.db")
    store.append(make_record("run-1", 1))  # a write: the -wal and -shm files exist now
    db = tmp_path / ".rac" / "rac.db"
    files = [db, db.with_name("rac.db-wal"), db.with_name("rac.db-shm")]
    assert all(f.exists() for f in files)
    assert {f.name: mode(f) for f in files} == {f.name: 0o600 for f in files}
    assert mode(tmp_path / ".rac") == 0o700
    store.close()


def test_every_created_folder_is_private(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "a" / "b" / "log.db")
    assert (mode(tmp_path / "a"), mode(tmp_path / "a" / "b")) == (0o700, 0o700)
    assert mode(tmp_path / "a" / "b" / "log.db") == 0o600
    store.close()


def test_existing_files_and_folders_keep_their_modes(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o750)
    shared.chmod(0o750)
    db = shared / "log.db"
    SQLiteStore(db).close()
    db.chmod(0o640)
    SQLiteStore(db).close()
    assert (mode(shared), mode(db)) == (0o750, 0o640)


def test_durability_settings(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "log.db", busy_timeout_ms=1234)
    conn = store._conn()
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 1234
    store.close()


def test_a_failed_write_rolls_back_and_leaves_no_open_transaction(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "log.db")
    store.append(make_record("run-1", 1))
    with pytest.raises(StoreError, match="unknown record field"):
        store.update_record("run-1", 1, status=RecordStatus.COMPLETED, not_a_field=1)
    with pytest.raises(StoreError, match="not JSON-safe"):
        store.update_record("run-1", 1, result={"at": object()})
    assert not store._conn().in_transaction
    (rec,) = store.get_records("run-1")
    assert rec.status is RecordStatus.PENDING
    store.close()


def test_a_v1_log_migrates_in_place(tmp_path: Path) -> None:
    """A log written by RAC 0.1 gains the new columns and tables; its records read back with
    an empty effect and no undo data, and new records keep theirs."""
    db = tmp_path / "old.db"
    shutil.copy(GOLDEN, db)
    before = sqlite3.connect(db)
    assert [r[0] for r in before.execute("SELECT version FROM schema_migrations")] == [1]
    n_records = before.execute("SELECT COUNT(*) FROM records").fetchone()[0]
    before.close()

    store = SQLiteStore(db)
    assert store.schema_version() == LATEST
    (run,) = store.list_runs()
    old = store.get_records(run.run_id)
    assert len(old) == n_records
    assert all((r.effect, r.undo, r.call_id) == ("", None, "") for r in old)
    store.append(make_record(run.run_id, 99, effect="unsafe", undo={"booking_id": "FL-9"}))
    assert store.get_records(run.run_id)[-1].undo == {"booking_id": "FL-9"}
    store.close()
    again = SQLiteStore(db)  # reopening applies nothing twice
    assert again.schema_version() == LATEST
    again.close()
    versions = [r[0] for r in sqlite3.connect(db).execute(
        "SELECT version FROM schema_migrations ORDER BY version")]
    assert versions == sorted(v for v, _ in MIGRATIONS)


def test_bad_urls_are_named(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="names no file"):
        open_store("sqlite://")
    with pytest.raises(StoreError, match="unknown store URL"):
        open_store("mysql://x")
