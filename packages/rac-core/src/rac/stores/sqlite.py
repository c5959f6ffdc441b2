"""The SQLite store: RAC's embedded, durable default.

WAL journal, ``synchronous=FULL``, a busy timeout, every write inside ``BEGIN IMMEDIATE`` and
rolled back on any exception, and a versioned migrations table. One connection per thread.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from rac.errors import ConflictError, StoreError
from rac.models import Record, RunInfo, RunStatus
from rac.stores.memory import _statuses
from rac.stores.rows import (
    RECORD_COLUMNS,
    RUN_COLUMNS,
    check_fields,
    decode_record,
    decode_run,
    encode,
    record_row,
)

T = TypeVar("T")

#: Schema migrations, applied in order; a database records the versions it has.
MIGRATIONS: list[tuple[int, str]] = [
    (1, """
    CREATE TABLE runs (
        run_id TEXT PRIMARY KEY,
        agent_id TEXT NOT NULL,
        status TEXT NOT NULL,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        owner TEXT,
        lease_until REAL NOT NULL DEFAULT 0,
        summary TEXT
    );
    CREATE INDEX runs_status ON runs(status);
    CREATE TABLE records (
        run_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        kind TEXT NOT NULL,
        tool TEXT NOT NULL,
        status TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        scope TEXT NOT NULL,
        args TEXT NOT NULL,
        result TEXT,
        error TEXT,
        attempts INTEGER NOT NULL,
        idempotency_key TEXT NOT NULL,
        depends_on TEXT NOT NULL,
        compensates INTEGER,
        alternative_of INTEGER,
        compensable INTEGER NOT NULL,
        read_only INTEGER NOT NULL,
        note TEXT,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        PRIMARY KEY (run_id, seq)
    );
    """),
]

def path_from_url(url: str) -> str:
    """The file path of a ``sqlite:///relative`` or ``sqlite:////absolute`` URL."""
    if not url.startswith("sqlite://"):
        raise StoreError(f"not a SQLite URL: {url!r} (expected sqlite:///path/to/file.db)")
    rest = url[len("sqlite://"):]
    if rest.startswith("/"):
        rest = rest[1:]
    if not rest:
        raise StoreError(f"SQLite URL {url!r} names no file (expected sqlite:///path/to/file.db)")
    return rest


class SQLiteStore:
    """A transaction log in one SQLite file, safe for many threads and processes on one host."""

    def __init__(self, path: str | Path, *, busy_timeout_ms: int = 30_000) -> None:
        p = str(path)
        if p != ":memory:":
            Path(p).expanduser().parent.mkdir(parents=True, exist_ok=True)
        self.path = p
        self.url = f"sqlite:///{p}"
        self._busy_timeout_ms = busy_timeout_ms
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._all_lock = threading.Lock()
        self._migrate()

    @classmethod
    def from_url(cls, url: str) -> SQLiteStore:
        """Open the store a ``sqlite:///path`` URL names."""
        return cls(path_from_url(url))

    # -- connections and transactions -------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = sqlite3.connect(self.path, isolation_level=None,
                                       timeout=self._busy_timeout_ms / 1000,
                                       check_same_thread=False)
            except sqlite3.Error as e:
                raise StoreError(f"cannot open the SQLite log at {self.path!r}: {e}") from e
            conn.execute(f"PRAGMA busy_timeout={int(self._busy_timeout_ms)}")
            # Switching to WAL takes a lock: several processes opening the file at once retry.
            self._retry_locked(lambda: conn.execute("PRAGMA journal_mode=WAL"))
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute("PRAGMA foreign_keys=ON")
            self._local.conn = conn
            with self._all_lock:
                self._all.append(conn)
        return conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        conn = self._conn()
        self._retry_locked(lambda: conn.execute("BEGIN IMMEDIATE"))
        try:
            yield conn
            self._retry_locked(lambda: conn.execute("COMMIT"))
        except BaseException:
            # Roll back on any failure, a failed COMMIT included, so the connection is never
            # left inside an open transaction. Never commit in a finally.
            if conn.in_transaction:
                try:
                    conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
            raise

    def _retry_locked(self, fn: Callable[[], T]) -> T:
        deadline = time.monotonic() + self._busy_timeout_ms / 1000
        delay = 0.001
        while True:
            try:
                return fn()
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) and "busy" not in str(e):
                    raise StoreError(f"SQLite log {self.path!r}: {e}") from e
                if time.monotonic() > deadline:
                    raise StoreError(
                        f"SQLite log {self.path!r} stayed locked for "
                        f"{self._busy_timeout_ms} ms: {e}") from e
                time.sleep(delay)  # real contention between processes, not test time
                delay = min(delay * 2, 0.05)

    def _migrate(self) -> None:
        with self._write() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations ("
                         "version INTEGER PRIMARY KEY, applied_at REAL NOT NULL)")
            done = {r[0] for r in conn.execute("SELECT version FROM schema_migrations")}
            for version, sql in MIGRATIONS:
                if version in done:
                    continue
                for stmt in sql.split(";"):
                    if stmt.strip():
                        conn.execute(stmt)
                conn.execute("INSERT INTO schema_migrations(version, applied_at) VALUES (?, ?)",
                             (version, time.time()))

    def schema_version(self) -> int:
        """The highest migration applied to this database."""
        row = self._conn().execute("SELECT MAX(version) FROM schema_migrations").fetchone()
        return int(row[0] or 0)

    # -- runs --------------------------------------------------------------------------------
    def create_run(self, run: RunInfo) -> None:
        d = run.to_dict()
        try:
            with self._write() as conn:
                conn.execute(f"INSERT INTO runs({','.join(RUN_COLUMNS)}) VALUES "
                             f"({','.join('?' * len(RUN_COLUMNS))})",
                             [d[c] for c in RUN_COLUMNS])
        except sqlite3.IntegrityError as e:
            raise ConflictError(f"run {run.run_id!r} already exists in the log") from e

    def get_run(self, run_id: str) -> RunInfo | None:
        row = self._conn().execute(f"SELECT {','.join(RUN_COLUMNS)} FROM runs WHERE run_id=?",
                                   (run_id,)).fetchone()
        return decode_run(row) if row else None

    def list_runs(self, status: RunStatus | Iterable[RunStatus] | None = None,
                  limit: int | None = None) -> list[RunInfo]:
        wanted = _statuses(status)
        sql = f"SELECT {','.join(RUN_COLUMNS)} FROM runs"
        params: list[Any] = []
        if wanted is not None:
            sql += f" WHERE status IN ({','.join('?' * len(wanted))})"
            params += [str(s) for s in wanted]
        sql += " ORDER BY created_at DESC, rowid DESC"
        if limit:
            sql += " LIMIT ?"
            params.append(int(limit))
        return [decode_run(r) for r in self._conn().execute(sql, params).fetchall()]

    def update_run(self, run_id: str, **fields: Any) -> None:
        if not fields:
            return
        check_fields("run", fields, RUN_COLUMNS)
        cols = ", ".join(f"{k}=?" for k in fields)
        vals = [str(v) if k == "status" else v for k, v in fields.items()]
        with self._write() as conn:
            cur = conn.execute(f"UPDATE runs SET {cols} WHERE run_id=?", [*vals, run_id])
            if cur.rowcount == 0:
                raise KeyError(run_id)

    def claim_run(self, run_id: str, owner: str, now: float, lease_seconds: float) -> bool:
        with self._write() as conn:
            cur = conn.execute(
                "UPDATE runs SET owner=?, lease_until=? WHERE run_id=? AND "
                "(owner IS NULL OR owner=? OR lease_until<=?)",
                (owner, now + lease_seconds, run_id, owner, now))
            return cur.rowcount == 1

    # -- records -----------------------------------------------------------------------------
    def append(self, record: Record) -> None:
        try:
            with self._write() as conn:
                conn.execute(
                    f"INSERT INTO records({','.join(RECORD_COLUMNS)}) VALUES "
                    f"({','.join('?' * len(RECORD_COLUMNS))})",
                    record_row(record, int_bools=True))
        except sqlite3.IntegrityError as e:
            raise ConflictError(
                f"record {record.run_id}#{record.seq} already exists; refusing to overwrite it"
            ) from e

    def update_record(self, run_id: str, seq: int, **fields: Any) -> None:
        if not fields:
            return
        check_fields("record", fields, RECORD_COLUMNS)
        cols = ", ".join(f"{k}=?" for k in fields)
        with self._write() as conn:
            cur = conn.execute(f"UPDATE records SET {cols} WHERE run_id=? AND seq=?",
                               [*(encode(k, v, int_bools=True) for k, v in fields.items()), run_id, seq])
            if cur.rowcount == 0:
                raise KeyError(f"{run_id}#{seq}")

    def get_records(self, run_id: str) -> list[Record]:
        rows = self._conn().execute(
            f"SELECT {','.join(RECORD_COLUMNS)} FROM records WHERE run_id=? ORDER BY seq",
            (run_id,)).fetchall()
        return [decode_record(r) for r in rows]

    def close(self) -> None:
        with self._all_lock:
            for conn in self._all:
                try:
                    conn.close()
                except sqlite3.Error:
                    pass
            self._all.clear()
        self._local = threading.local()
