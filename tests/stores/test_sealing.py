"""Undo data at rest: where it is stored, and encrypted with ``RAC_LOG_KEY`` (rac.sealing), on
real SQLite files and the PostgreSQL server."""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rac.errors import StoreError
from rac.models import RunInfo
from rac.sealing import KEY_ENV, SEALED_PREFIX, Sealer, SealingError, generate_key, parse_key
from rac.stores import SQLiteStore, Store, open_store
from rac.testing.conformance import (
    PLANTED_SECRET,
    make_record,
    postgres_test_url,
    sqlite_cells_holding,
    sqlite_raw_bytes,
    undo_sample,
)


def write_secret_records(store: Store, run_id: str = "run-1") -> None:
    """Two records whose undo data holds the planted secret (one appended, one updated)."""
    store.create_run(RunInfo(run_id))
    store.append(make_record(run_id, 1, undo=undo_sample(1)))
    store.append(make_record(run_id, 2))
    store.update_record(run_id, 2, undo=undo_sample(2))


# -- keys -------------------------------------------------------------------------------------
def test_generated_keys_are_32_urlsafe_bytes_and_distinct() -> None:
    a, b = generate_key(), generate_key()
    assert a != b and len(parse_key(a)) == 32
    assert len(parse_key(a.rstrip("="))) == 32  # padding optional


@pytest.mark.parametrize("bad", ["not base64 !!", "c2hvcnQ=", "x" * 80])
def test_a_malformed_key_is_refused_with_a_fix(bad: str, tmp_path: Path) -> None:
    with pytest.raises(SealingError, match=rf"{KEY_ENV}.*python -m rac.sealing"):
        SQLiteStore(tmp_path / "log.db", key=bad)


def test_missing_cryptography_names_the_extra(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cryptography.hazmat.primitives.ciphers.aead", None)
    monkeypatch.setenv(KEY_ENV, generate_key())
    with pytest.raises(StoreError, match=r"the core's 'crypto' extra \(from a checkout: pip install "
                       r"'./packages/rac-core\[crypto\]'\)"):
        open_store(f"sqlite:///{tmp_path / 'log.db'}")


# -- SQLite files -----------------------------------------------------------------------------
def test_without_a_key_undo_data_is_only_in_the_undo_column(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    db = tmp_path / "log.db"
    store = SQLiteStore(db)
    write_secret_records(store)
    assert [r.undo for r in store.get_records("run-1")] == [undo_sample(1), undo_sample(2)]
    store.close()
    assert PLANTED_SECRET.encode() in sqlite_raw_bytes(db)
    assert sqlite_cells_holding(db, PLANTED_SECRET) == {"records.undo"}


def test_with_a_key_the_file_holds_no_planted_secret(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, generate_key())
    db = tmp_path / "log.db"
    store = open_store(f"sqlite:///{db}")
    write_secret_records(store)
    assert PLANTED_SECRET.encode() not in sqlite_raw_bytes(db)  # WAL included, before a checkpoint
    assert [r.undo for r in store.get_records("run-1")] == [undo_sample(1), undo_sample(2)]
    store.close()
    assert PLANTED_SECRET.encode() not in sqlite_raw_bytes(db)
    assert sqlite_cells_holding(db, PLANTED_SECRET) == set()
    undo = [r[0] for r in sqlite3.connect(db).execute("SELECT undo FROM records")]
    assert all(u.startswith(SEALED_PREFIX) for u in undo)
    # A fresh process with the same key reads the exact values back.
    again = open_store(f"sqlite:///{db}")
    assert [r.undo for r in again.get_records("run-1")] == [undo_sample(1), undo_sample(2)]
    again.close()


def test_a_sealed_log_opened_without_its_key_is_refused(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "log.db"
    store = SQLiteStore(db, key=generate_key())
    write_secret_records(store)
    store.close()
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(SealingError, match=rf"encrypted .*{KEY_ENV} is not set"):
        SQLiteStore(db)


def test_a_sealed_log_opened_with_a_wrong_key_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "log.db"
    store = SQLiteStore(db, key=generate_key())
    write_secret_records(store)
    store.close()
    with pytest.raises(SealingError, match="wrong key"):
        SQLiteStore(db, key=generate_key())


def test_a_sealed_value_moved_to_another_record_is_refused(tmp_path: Path) -> None:
    key = generate_key()
    db = tmp_path / "log.db"
    store = SQLiteStore(db, key=key)
    write_secret_records(store)
    store.close()
    conn = sqlite3.connect(db)
    conn.execute("UPDATE records SET undo=(SELECT undo FROM records WHERE seq=1) WHERE seq=2")
    conn.commit()
    conn.close()
    store = SQLiteStore(db, key=key)
    with pytest.raises(SealingError, match="run-1#2 cannot be decrypted"):
        store.get_records("run-1")
    store.close()


def test_records_written_before_the_key_stay_readable(tmp_path: Path) -> None:
    db = tmp_path / "log.db"
    plain = SQLiteStore(db, key=None)
    plain.append(make_record("run-1", 1, undo=undo_sample(1)))
    plain.close()
    sealed = SQLiteStore(db, key=generate_key())
    sealed.append(make_record("run-1", 2, undo=undo_sample(2)))
    assert [r.undo for r in sealed.get_records("run-1")] == [undo_sample(1), undo_sample(2)]
    sealed.close()


def test_sealer_without_a_key_writes_plain_json() -> None:
    sealer = Sealer(None)
    assert not sealer.encrypts
    assert sealer.seal({"b": 1, "a": "✈"}, "r#1") == '{"b":1,"a":"✈"}'
    assert sealer.unseal(sealer.seal(undo_sample(3), "r#3"), "r#3") == undo_sample(3)
    assert sealer.seal(None, "r#1") is None and sealer.unseal(None, "r#1") is None


# -- PostgreSQL -------------------------------------------------------------------------------
@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh schema on the test server, dropped afterwards whatever key it was sealed with."""
    import psycopg

    from rac.stores.postgres import split_url

    url = postgres_test_url()
    yield url
    dsn, schema = split_url(url)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'.encode())


def test_postgres_seals_undo_data_with_a_key(pg_url: str,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import psycopg

    from rac.stores.postgres import PostgresStore, split_url

    key = generate_key()
    store = PostgresStore(pg_url, key=key)
    write_secret_records(store)
    assert [r.undo for r in store.get_records("run-1")] == [undo_sample(1), undo_sample(2)]
    store.close()
    dsn, schema = split_url(pg_url)
    with psycopg.connect(dsn, autocommit=True) as conn:
        cells = conn.execute(f'SELECT undo, args, result FROM "{schema}".rac_records'.encode()
                             ).fetchall()
    assert len(cells) == 2 and all(str(u).startswith(SEALED_PREFIX) for u, _, _ in cells)
    assert not any(PLANTED_SECRET in str(c) for row in cells for c in row)

    with pytest.raises(SealingError, match="wrong key"):
        PostgresStore(pg_url, key=generate_key())
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(SealingError, match=f"{KEY_ENV} is not set"):
        PostgresStore(pg_url)
    monkeypatch.setenv(KEY_ENV, key)
    again = open_store(pg_url)
    assert [r.undo for r in again.get_records("run-1")] == [undo_sample(1), undo_sample(2)]
    again.close()


# -- a fresh process --------------------------------------------------------------------------
CHILD = """
import os, sys
from rac.models import RunInfo
from rac.stores import open_store
from rac.testing.conformance import make_record, undo_sample
store = open_store(sys.argv[1])
store.create_run(RunInfo("run-1"))
store.append(make_record("run-1", 1, undo=undo_sample(1)))
os._exit(86)  # dies hard right after the write: no close, no checkpoint
"""


@pytest.mark.parametrize("sealed", [False, True], ids=["plain", "sealed"])
def test_undo_data_survives_a_hard_exit(tmp_path: Path, sealed: bool,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != KEY_ENV}
    if sealed:
        env[KEY_ENV] = generate_key()
    url = f"sqlite:///{tmp_path / 'log.db'}"
    done = subprocess.run([sys.executable, "-c", CHILD, url], env=env, timeout=120)
    assert done.returncode == 86
    assert (PLANTED_SECRET.encode() in sqlite_raw_bytes(tmp_path / "log.db")) is not sealed
    if sealed:
        monkeypatch.setenv(KEY_ENV, env[KEY_ENV])
    else:
        monkeypatch.delenv(KEY_ENV, raising=False)
    store = open_store(url)
    assert [r.undo for r in store.get_records("run-1")] == [undo_sample(1)]
    store.close()


def test_python_m_rac_sealing_prints_a_usable_key(tmp_path: Path) -> None:
    import subprocess

    out = subprocess.run([sys.executable, "-m", "rac.sealing"], capture_output=True, text=True,
                         check=True, timeout=120)
    key = out.stdout.strip()
    assert len(parse_key(key)) == 32
    store = SQLiteStore(tmp_path / "log.db", key=key)
    store.append(make_record("run-1", 1, undo=undo_sample(1)))
    assert store.get_records("run-1")[0].undo == undo_sample(1)
    store.close()
