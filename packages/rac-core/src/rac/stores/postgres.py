"""The PostgreSQL store: one transaction log shared by processes on several machines.

Needs psycopg 3 (the core's ``postgres`` extra). One connection per store, shared by its
threads under a lock; every write is its own transaction, rolled back on any exception. Schema
changes are versioned migrations, applied under an advisory lock so that several processes
starting at once migrate once; the schema itself is created under the same lock (two
processes creating it at the same instant would otherwise collide on its name). A commit asked
for with ``durable=False`` runs with ``synchronous_commit`` off: the server has it, but a crash
of the server may lose it.

A commit asked for with ``durable=False`` that only updates records and runs (a call's outcome,
a run's status, with their fences) is not sent on its own: it is held in this process and rides
with the next commit of the store (the next call's intent), so that a successful call costs one
``COMMIT``. What is held is written on its own, with ``synchronous_commit`` off, after at most
:data:`HOLD_SECONDS` if no commit comes, and before any read of this store, any other write,
``close()`` and the interpreter's exit. A crash of the process loses what is held, as a power
cut loses an unflushed commit on SQLite: a call whose outcome was lost is read by recovery as
"may have happened" (its intent without an outcome), never as "did not happen". A new run, a
new record, a compare-and-set and a fence alone (the heartbeat) are never held.
A duplicate ``(run_id, seq)`` is a unique violation, raised as :class:`rac.errors.ConflictError`.
The statements are :mod:`rac.stores.sql`'s; this module holds the connection and transactions.

The URL is a libpq URL; the extra query parameter ``rac_schema`` puts RAC's tables in a schema
of their own (created if missing), e.g. ``postgresql://rac@db/app?rac_schema=rac``.

``read_only=True`` (what read commands use, see :mod:`rac.stores.read_only`) connects with
``default_transaction_read_only`` on and creates nothing: a schema or log that is not there is
an error, and a log at an older schema version is refused until a writer migrates it.
"""

from __future__ import annotations

import atexit
import os
import re
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg import errors as pg_errors
from psycopg import sql

from rac.errors import StoreError
from rac.events import emit
from rac.stores.changes import Change, Fence, UpdateRecord, UpdateRun
from rac.stores.read_only import DEFAULT_WAIT, LockWait, check_version, refuse_write
from rac.stores.sql import LATEST_VERSION, Dialect, SQLStore

POSTGRES = Dialect(name="postgresql", param="%s", prefix="rac_", real="DOUBLE PRECISION",
                   boolean="BOOLEAN", int_bools=False, insertion_order="ord",
                   order_column=",\n        ord BIGSERIAL", row_lock=" FOR UPDATE")

_SCHEMA_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
_MIGRATION_LOCK = 0x7AC0_0001
#: The longest a commit asked for with ``durable=False`` waits in this process for the next
#: commit to ride with before it is sent on its own (seconds). Far below a lease (60 s by
#: default), so a run this process ended is never taken for an abandoned one.
HOLD_SECONDS = 0.2
#: The stores holding changes, written at the interpreter's exit.
_HOLDING: weakref.WeakSet[PostgresStore] = weakref.WeakSet()


def holdable(changes: Sequence[Change]) -> bool:
    """True for the changes a ``durable=False`` commit may hold back: updates of records and
    runs, with their fences. Never a new run or record (a duplicate is refused to the caller
    that wrote it), a compare-and-set (its caller learns whether it won), or a fence alone (the
    heartbeat learns at once that its run was lost)."""
    updates = False
    for change in changes:
        t = type(change)
        if t is UpdateRecord:
            assert isinstance(change, UpdateRecord)
            if change.expect is not None:
                return False
            updates = True
        elif t is UpdateRun:
            updates = True
        elif t is not Fence:
            return False
    return updates


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


class PostgresStore(SQLStore):
    """A transaction log in PostgreSQL, shared by many processes on many machines.

    ``key`` seals undo data (default: ``RAC_LOG_KEY``; see :mod:`rac.sealing`).
    ``read_only`` opens an existing log for reading only, waiting up to ``wait`` seconds for
    a lock another session holds and announcing the wait through ``on_wait`` (see
    :mod:`rac.stores.read_only`).
    """

    dialect = POSTGRES

    def __init__(self, url: str, *, schema: str | None = None,
                 connect_timeout: float = 10.0, key: str | bytes | None = None,
                 read_only: bool = False, wait: float = DEFAULT_WAIT,
                 on_wait: Callable[[str], None] | None = None) -> None:
        self.url = url
        self.read_only = read_only
        self._wait = LockWait(_safe_url(url), wait, on_wait) if read_only else None
        self._dsn, url_schema = split_url(url)
        self.schema = schema or url_schema
        if self.schema is not None and not _SCHEMA_NAME.match(self.schema):
            raise StoreError(f"schema {self.schema!r} is not a plain SQL identifier")
        self._connect_timeout = connect_timeout
        self._lock = threading.RLock()
        self._connection: psycopg.Connection[tuple[Any, ...]] | None = None
        self._pid = os.getpid()
        #: changes of ``durable=False`` commits waiting for the next commit, and the timer
        #: that writes them if none comes (see the module's docstring)
        self._held: list[Change] = []
        self._timer: threading.Timer | None = None
        self._held_pid = os.getpid()
        self._open(key)

    # -- held commits ---------------------------------------------------------------------------
    def commit(self, changes: Sequence[Change], *, durable: bool = True) -> None:
        """Write ``changes`` in one transaction (see :meth:`SQLStore.commit`), with whatever
        this store holds in front of them; hold them instead when ``durable`` is False and
        they may wait (see the module's docstring)."""
        if not changes:
            return
        with self._lock:
            self._own_held()
            if not durable and not self.read_only and holdable(changes):
                self._check_changes(changes)
                self._held.extend(changes)
                if self._timer is None:
                    self._timer = threading.Timer(HOLD_SECONDS, self._flush_held)
                    self._timer.daemon = True
                    self._timer.start()
                    _HOLDING.add(self)
                return
            held = self._take_held()
            if held:
                try:
                    super().commit([*held, *changes], durable=durable)
                    return
                except Exception:  # noqa: BLE001 - each part again on its own, which names it
                    self._write_held(held)
            super().commit(changes, durable=durable)

    def _own_held(self) -> None:
        """In a process forked from the one that made this store, forget what the parent
        holds (the parent writes it) and its timer (call under ``_lock``)."""
        if self._held_pid != os.getpid():
            self._held, self._timer, self._held_pid = [], None, os.getpid()

    def _take_held(self) -> list[Change]:
        """What is held, no longer held (call under ``_lock``)."""
        held, self._held = self._held, []
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        return held

    def flush(self) -> None:
        """Write what this store holds now (see the module's docstring)."""
        self._flush_held()

    def _flush_held(self) -> None:
        """Write what is held now, on its own."""
        with self._lock:
            self._own_held()
            held = self._take_held()
            if held:
                self._write_held(held)

    def _write_held(self, held: list[Change]) -> None:
        """Commit held changes on their own; a refusal (the run was lost to another process,
        the server is gone) is told as an event, never raised to an unrelated caller: what it
        held is then missing from the log, and its calls read as in doubt."""
        try:
            super().commit(held, durable=False)
        except Exception as e:  # noqa: BLE001
            runs = sorted({getattr(c, "run_id", "") for c in held})
            emit("rac.store", level="warning", status="held_commit_lost", runs=runs,
                 error=f"{type(e).__name__}: {e}"[:500])

    # -- connections and transactions -------------------------------------------------------
    def _conn(self) -> psycopg.Connection[tuple[Any, ...]]:
        """The store's one connection, opened on first use (call under ``_lock``)."""
        conn = self._connection
        if conn is not None and not conn.closed and self._pid == os.getpid():
            return conn
        extra: dict[str, Any] = {}
        if self._wait is not None:  # read-only: the server itself refuses every write
            extra["options"] = ("-c default_transaction_read_only=on "
                                f"-c lock_timeout={max(1, int(self._wait.slice * 1000))}")
        try:
            conn = psycopg.connect(self._dsn, autocommit=True,
                                   connect_timeout=max(1, int(self._connect_timeout)), **extra)
        except psycopg.Error as e:
            raise StoreError(f"cannot connect to the PostgreSQL log at "
                             f"{_safe_url(self.url)}: {e}") from e
        if self.schema is not None and self._wait is not None:
            conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(self.schema)))
        elif self.schema is not None:
            try:
                with conn.transaction():
                    # The lock migrations take: creating the schema races like they do.
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
                    conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(
                        sql.Identifier(self.schema)))
                conn.execute(sql.SQL("SET search_path TO {}").format(
                    sql.Identifier(self.schema)))
            except psycopg.Error as e:
                conn.close()
                raise StoreError(f"cannot open the schema {self.schema!r} of the PostgreSQL "
                                 f"log at {_safe_url(self.url)}: {e}") from e
        self._connection, self._pid = conn, os.getpid()
        return conn

    @contextmanager
    def _write(self, durable: bool = True) -> Iterator[psycopg.Connection[tuple[Any, ...]]]:
        """One transaction: committed when the block ends, rolled back on any exception."""
        if self.read_only:
            raise refuse_write(_safe_url(self.url))
        with self._lock:
            if self._held:  # a write other than a commit (a claim, a pair): what is held first
                self._flush_held()
            conn = self._conn()
            try:
                with conn.transaction():
                    if not durable:
                        conn.execute(b"SET LOCAL synchronous_commit TO OFF")
                    yield conn
            except pg_errors.UniqueViolation:
                raise  # the caller names the duplicate (a ConflictError)
            except psycopg.Error as e:
                raise StoreError(f"PostgreSQL log {_safe_url(self.url)}: {e}") from e

    @contextmanager
    def _write_one(self, durable: bool = True) -> Iterator[psycopg.Connection[tuple[Any, ...]]]:
        """The connection for a durable commit of one statement, sent on its own: the
        connection is in autocommit, so the server runs it as its own transaction and
        commits it (waiting for the WAL flush), with no ``BEGIN`` and ``COMMIT`` round trips.
        A commit that need not wait for the flush takes :meth:`_write` (its ``SET LOCAL``)."""
        if not durable:
            with self._write(durable) as conn:
                yield conn
            return
        if self.read_only:
            raise refuse_write(_safe_url(self.url))
        with self._lock:
            if self._held:
                self._flush_held()
            conn = self._conn()
            try:
                yield conn
            except pg_errors.UniqueViolation:
                raise
            except psycopg.Error as e:
                raise StoreError(f"PostgreSQL log {_safe_url(self.url)}: {e}") from e

    def _execute(self, conn: Any, query: str, params: Sequence[Any] = ()) -> Any:
        return conn.execute(query.encode(), list(params))

    def _execute_many(self, conn: Any, query: str, rows: list[Sequence[Any]]) -> int:
        with conn.cursor() as cur:
            cur.executemany(query.encode(), [list(r) for r in rows])
            return int(cur.rowcount)

    def _read(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        def once() -> list[tuple[Any, ...]]:
            with self._lock:
                if self._held:  # this store reads its own writes
                    self._flush_held()
                return self._conn().execute(query.encode(), list(params)).fetchall()

        try:
            return self._wait.run(once, _locked) if self._wait is not None else once()
        except psycopg.Error as e:
            raise StoreError(f"PostgreSQL log {_safe_url(self.url)}: {e}") from e

    def _check_readable(self) -> None:
        where = _safe_url(self.url)
        rows = self._read("SELECT to_regclass(%s)", (self.dialect.table("schema_migrations"),))
        if not rows or rows[0][0] is None:
            place = f"rac_schema={self.schema}" if self.schema else "its search_path"
            raise StoreError(f"no RAC log at {where} ({place} holds no RAC tables; nothing "
                             "was created): check the store URL")
        version = self.schema_version()
        check_version(where, version, LATEST_VERSION)
        if version < LATEST_VERSION:
            raise StoreError(f"the log at {where} is at schema version {version} (this RAC "
                             f"reads {LATEST_VERSION}): a command that writes (such as "
                             "`rac recover`) migrates it first")

    def _is_duplicate(self, error: BaseException) -> bool:
        return isinstance(error, pg_errors.UniqueViolation)

    def _lock_migrations(self, conn: Any) -> None:
        # Several processes starting at once: the first migrates, the others wait and skip.
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))

    def _display_url(self) -> str:
        return _safe_url(self.url)

    def drop_schema(self) -> None:
        """Drop this store's schema and everything in it (tests use a schema per test)."""
        if self.schema is None:
            raise StoreError("drop_schema needs a store opened with its own rac_schema")
        with self._write() as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(
                sql.Identifier(self.schema)))

    def close(self) -> None:
        """Write what is held, close the connection (a later use opens it again)."""
        with self._lock:
            self._flush_held()
            conn, self._connection = self._connection, None
            if conn is not None and self._pid == os.getpid():
                try:
                    conn.close()
                except psycopg.Error:
                    pass


def _locked(error: BaseException) -> bool:
    """True when a statement gave up waiting for a lock another session holds."""
    return isinstance(error, pg_errors.LockNotAvailable)


@atexit.register
def _flush_at_exit() -> None:
    """What the stores still hold, written before the interpreter exits."""
    for store in list(_HOLDING):
        try:
            store._flush_held()
        except Exception:  # noqa: BLE001, S110 - exiting: the calls read as in doubt
            pass
