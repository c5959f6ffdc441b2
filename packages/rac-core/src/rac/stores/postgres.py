"""The PostgreSQL store: one transaction log shared by processes on several machines.

Needs psycopg 3 (``pip install 'rac-core[postgres]'``). One connection per thread; every write is
its own transaction, rolled back on any exception. Schema changes are versioned migrations,
applied under an advisory lock so that several processes starting at once migrate once.
A duplicate ``(run_id, seq)`` is a unique violation, raised as :class:`rac.errors.ConflictError`.

The URL is a libpq URL; the extra query parameter ``rac_schema`` puts RAC's tables in a schema
of their own (created if missing), e.g. ``postgresql://rac@db/app?rac_schema=rac``.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg import errors as pg_errors
from psycopg import sql

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

#: Schema migrations, applied in order; ``rac_schema_migrations`` records the versions applied.
MIGRATIONS: list[tuple[int, str]] = [
    (1, """
    CREATE TABLE IF NOT EXISTS rac_runs (
        run_id TEXT PRIMARY KEY,
        agent_id TEXT NOT NULL,
        status TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL,
        updated_at DOUBLE PRECISION NOT NULL,
        owner TEXT,
        lease_until DOUBLE PRECISION NOT NULL DEFAULT 0,
        summary TEXT,
        ord BIGSERIAL
    );
    CREATE INDEX IF NOT EXISTS rac_runs_status ON rac_runs(status);
    CREATE TABLE IF NOT EXISTS rac_records (
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
        compensable BOOLEAN NOT NULL,
        read_only BOOLEAN NOT NULL,
        note TEXT,
        created_at DOUBLE PRECISION NOT NULL,
        updated_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (run_id, seq)
    )
    """),
]

_SCHEMA_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
_MIGRATION_LOCK = 0x7AC0_0001


def split_url(url: str) -> tuple[str, str | None]:
    """The libpq URL without RAC's own query parameters, and the ``rac_schema`` it names."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    schema = None
    kept = []
    for k, v in query:
        if k == "rac_schema":
            schema = v
        else:
            kept.append((k, v))
    if schema is not None and not _SCHEMA_NAME.match(schema):
        raise StoreError(f"rac_schema {schema!r} is not a plain SQL identifier")
    scheme = "postgresql" if parts.scheme == "postgres" else parts.scheme
    return urlunsplit((scheme, parts.netloc, parts.path, urlencode(kept), parts.fragment)), schema


def _safe_url(url: str) -> str:
    """``url`` with any password replaced, for messages."""
    return re.sub(r"(://[^:/@]+:)[^@]*@", r"\1***@", url)


class PostgresStore:
    """A transaction log in PostgreSQL, shared by many processes on many machines."""

    def __init__(self, url: str, *, schema: str | None = None,
                 connect_timeout: float = 10.0) -> None:
        self.url = url
        self._dsn, url_schema = split_url(url)
        self.schema = schema or url_schema
        if self.schema is not None and not _SCHEMA_NAME.match(self.schema):
            raise StoreError(f"schema {self.schema!r} is not a plain SQL identifier")
        self._connect_timeout = connect_timeout
        self._local = threading.local()
        self._all: list[psycopg.Connection[tuple[Any, ...]]] = []
        self._all_lock = threading.Lock()
        self._migrate()

    # -- connections and transactions -------------------------------------------------------
    def _conn(self) -> psycopg.Connection[tuple[Any, ...]]:
        conn: psycopg.Connection[tuple[Any, ...]] | None = getattr(self._local, "conn", None)
        if conn is not None and not conn.closed:
            return conn
        try:
            conn = psycopg.connect(self._dsn, autocommit=True,
                                   connect_timeout=max(1, int(self._connect_timeout)))
        except psycopg.Error as e:
            raise StoreError(f"cannot connect to the PostgreSQL log at "
                             f"{_safe_url(self.url)}: {e}") from e
        if self.schema is not None:
            conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(
                sql.Identifier(self.schema)))
            conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(self.schema)))
        self._local.conn = conn
        with self._all_lock:
            self._all.append(conn)
        return conn

    @contextmanager
    def _write(self) -> Iterator[psycopg.Connection[tuple[Any, ...]]]:
        """One transaction: committed when the block ends, rolled back on any exception."""
        conn = self._conn()
        try:
            with conn.transaction():
                yield conn
        except ConflictError:
            raise
        except pg_errors.UniqueViolation:
            raise
        except psycopg.Error as e:
            raise StoreError(f"PostgreSQL log {_safe_url(self.url)}: {e}") from e

    def _read(self, query: str | sql.Composed, params: Iterable[Any] = ()
              ) -> list[tuple[Any, ...]]:
        try:
            return self._conn().execute(query, list(params)).fetchall()
        except psycopg.Error as e:
            raise StoreError(f"PostgreSQL log {_safe_url(self.url)}: {e}") from e

    def _migrate(self) -> None:
        with self._write() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            conn.execute("CREATE TABLE IF NOT EXISTS rac_schema_migrations ("
                         "version INTEGER PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)")
            done = {r[0] for r in conn.execute("SELECT version FROM rac_schema_migrations")}
            for version, statements in MIGRATIONS:
                if version in done:
                    continue
                for stmt in statements.split(";"):
                    if stmt.strip():
                        conn.execute(stmt.encode())
                conn.execute("INSERT INTO rac_schema_migrations(version, applied_at) "
                             "VALUES (%s, %s)", (version, time.time()))

    def schema_version(self) -> int:
        """The highest migration applied to this database."""
        rows = self._read("SELECT MAX(version) FROM rac_schema_migrations")
        return int(rows[0][0] or 0)

    # -- runs --------------------------------------------------------------------------------
    def create_run(self, run: RunInfo) -> None:
        d = run.to_dict()
        try:
            with self._write() as conn:
                conn.execute(f"INSERT INTO rac_runs({','.join(RUN_COLUMNS)}) VALUES "
                             f"({','.join(['%s'] * len(RUN_COLUMNS))})".encode(),
                             [d[c] for c in RUN_COLUMNS])
        except pg_errors.UniqueViolation as e:
            raise ConflictError(f"run {run.run_id!r} already exists in the log") from e

    def get_run(self, run_id: str) -> RunInfo | None:
        rows = self._read(f"SELECT {','.join(RUN_COLUMNS)} FROM rac_runs WHERE run_id=%s",
                          (run_id,))
        return decode_run(rows[0]) if rows else None

    def list_runs(self, status: RunStatus | Iterable[RunStatus] | None = None,
                  limit: int | None = None) -> list[RunInfo]:
        wanted = _statuses(status)
        query = f"SELECT {','.join(RUN_COLUMNS)} FROM rac_runs"
        params: list[Any] = []
        if wanted is not None:
            query += " WHERE status = ANY(%s)"
            params.append([str(s) for s in wanted])
        query += " ORDER BY created_at DESC, ord DESC"
        if limit:
            query += " LIMIT %s"
            params.append(int(limit))
        return [decode_run(r) for r in self._read(query, params)]

    def update_run(self, run_id: str, **fields: Any) -> None:
        if not fields:
            return
        check_fields("run", fields, RUN_COLUMNS)
        cols = ", ".join(f"{k}=%s" for k in fields)
        vals = [str(v) if k == "status" else v for k, v in fields.items()]
        with self._write() as conn:
            cur = conn.execute(f"UPDATE rac_runs SET {cols} WHERE run_id=%s".encode(),
                               [*vals, run_id])
            if cur.rowcount == 0:
                raise KeyError(run_id)

    def claim_run(self, run_id: str, owner: str, now: float, lease_seconds: float) -> bool:
        # One UPDATE with the condition in its WHERE clause: PostgreSQL re-checks the condition
        # on the locked row, so of two racing claimers exactly one sees rowcount 1.
        with self._write() as conn:
            cur = conn.execute(
                "UPDATE rac_runs SET owner=%s, lease_until=%s WHERE run_id=%s AND "
                "(owner IS NULL OR owner=%s OR lease_until<=%s)",
                (owner, now + lease_seconds, run_id, owner, now))
            return cur.rowcount == 1

    # -- records -----------------------------------------------------------------------------
    def append(self, record: Record) -> None:
        try:
            with self._write() as conn:
                conn.execute(
                    f"INSERT INTO rac_records({','.join(RECORD_COLUMNS)}) VALUES "
                    f"({','.join(['%s'] * len(RECORD_COLUMNS))})".encode(),
                    record_row(record))
        except pg_errors.UniqueViolation as e:
            raise ConflictError(
                f"record {record.run_id}#{record.seq} already exists; refusing to overwrite it"
            ) from e

    def update_record(self, run_id: str, seq: int, **fields: Any) -> None:
        if not fields:
            return
        check_fields("record", fields, RECORD_COLUMNS)
        cols = ", ".join(f"{k}=%s" for k in fields)
        with self._write() as conn:
            cur = conn.execute(
                f"UPDATE rac_records SET {cols} WHERE run_id=%s AND seq=%s".encode(),
                [*(encode(k, v) for k, v in fields.items()), run_id, seq])
            if cur.rowcount == 0:
                raise KeyError(f"{run_id}#{seq}")

    def get_records(self, run_id: str) -> list[Record]:
        rows = self._read(f"SELECT {','.join(RECORD_COLUMNS)} FROM rac_records "
                          "WHERE run_id=%s ORDER BY seq", (run_id,))
        return [decode_record(r) for r in rows]

    def drop_schema(self) -> None:
        """Drop this store's schema and everything in it (tests use a schema per test)."""
        if self.schema is None:
            raise StoreError("drop_schema needs a store opened with its own rac_schema")
        with self._write() as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(
                sql.Identifier(self.schema)))

    def close(self) -> None:
        with self._all_lock:
            for conn in self._all:
                try:
                    conn.close()
                except psycopg.Error:
                    pass
            self._all.clear()
        self._local = threading.local()
