"""The SQLite store: RAC's embedded, durable default.

WAL journal, ``synchronous=FULL``, a busy timeout, every write of several statements inside
``BEGIN IMMEDIATE`` and rolled back on any exception (a commit that is one statement, such as a
call's intent with its fence folded in, is sent on its own: SQLite applies and commits a
statement atomically), and a versioned migrations table (``schema_migrations``). One
connection per store, shared by the store's threads under a lock (SQLite has one writer at a
time anyway): a framework that runs each turn's tools on fresh threads opens no new file
handle per turn. A process forked with the store open opens its own connection on first use.
The statements are :mod:`rac.stores.sql`'s; this module holds the connection, the
transactions and the file.

A commit asked for with ``durable=False`` runs under ``synchronous=NORMAL``: in WAL mode it is
not flushed to disk at once, so it survives a crash of the process (the operating system has
it) but a power cut may lose it; the next durable commit flushes it with its own.

``read_only=True`` (what read commands use, see :mod:`rac.stores.read_only`) opens an existing
file with SQLite's ``mode=ro`` and creates nothing; an older log is read through a copy
migrated in memory, so the file stays exactly as it was.

The log is private to its owner: a new database file is created with mode 0600 (SQLite gives
its ``-wal`` and ``-shm`` files the database file's mode) and any folder created for it, such
as ``.rac/``, with mode 0700. Existing files and folders keep their modes.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

from rac.errors import StoreError
from rac.stores.read_only import DEFAULT_WAIT, LockWait, check_version, refuse_write
from rac.stores.sql import LATEST_VERSION, MIGRATIONS, Dialect, SQLStore, migration_statements

T = TypeVar("T")

SQLITE = Dialect(name="sqlite", param="?", prefix="", real="REAL", boolean="INTEGER",
                 int_bools=True, insertion_order="rowid", order_column="")

#: Mode of a new log file (and, through SQLite, of its -wal and -shm files).
FILE_MODE = 0o600
#: Mode of a folder created to hold a log.
DIR_MODE = 0o700


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


def create_private(path: Path) -> None:
    """Create the folders (0700) and the empty file (0600) of a new log; leave existing ones
    as they are."""
    missing: list[Path] = []
    parent = path.parent
    while not parent.exists():
        missing.append(parent)
        parent = parent.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, DIR_MODE)
        except FileExistsError:
            continue
        os.chmod(folder, DIR_MODE)  # exactly 0700, whatever the umask
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return
    try:
        os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)


class SQLiteStore(SQLStore):
    """A transaction log in one SQLite file, safe for many threads and processes on one host.

    ``key`` seals undo data (default: ``RAC_LOG_KEY``; see :mod:`rac.sealing`).
    ``read_only`` opens an existing log for reading only, waiting up to ``wait`` seconds for
    a lock another process holds and announcing the wait through ``on_wait`` (see
    :mod:`rac.stores.read_only`).
    """

    dialect = SQLITE

    def __init__(self, path: str | Path, *, busy_timeout_ms: int = 30_000,
                 key: str | bytes | None = None, read_only: bool = False,
                 wait: float = DEFAULT_WAIT,
                 on_wait: Callable[[str], None] | None = None) -> None:
        p = str(path)
        self.read_only = read_only
        if p != ":memory:" and read_only:
            if not Path(p).expanduser().is_file():
                raise StoreError(f"no log at {p}: the file does not exist (nothing was "
                                 "created; check the store URL)")
        elif p != ":memory:":
            try:
                create_private(Path(p).expanduser())
            except OSError as e:
                raise StoreError(f"cannot create the SQLite log at {p!r}: {e}") from e
        self.path = p
        self.url = f"sqlite:///{p}"
        self._busy_timeout_ms = busy_timeout_ms
        self._wait = LockWait(p, wait, on_wait) if read_only else None
        #: an older log opened read-only: a copy migrated in memory, read instead of the file
        self._copy: sqlite3.Connection | None = None
        self._lock = threading.RLock()
        self._connection: sqlite3.Connection | None = None
        self._pid = os.getpid()
        self._synchronous = "FULL"
        self._open(key)

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> SQLiteStore:
        """Open the store a ``sqlite:///path`` URL names (keywords as for the class)."""
        return cls(path_from_url(url), **kwargs)

    # -- connections and transactions -------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        """The store's one connection, opened on first use (call under ``_lock``)."""
        if self._copy is not None:
            return self._copy
        conn = self._connection
        if conn is not None and self._pid == os.getpid():
            return conn
        try:
            conn = self._connect()
        except sqlite3.Error as e:
            raise self._error(e, "cannot open the SQLite log at") from e
        self._connection, self._pid, self._synchronous = conn, os.getpid(), "FULL"
        return conn

    def _connect(self) -> sqlite3.Connection:
        if self._wait is not None:  # read-only: SQLite itself refuses every write
            where = quote(str(Path(self.path).expanduser().absolute()))
            return sqlite3.connect(f"file:{where}?mode=ro", uri=True, isolation_level=None,
                                   timeout=self._wait.slice, check_same_thread=False)
        conn = sqlite3.connect(self.path, isolation_level=None,
                               timeout=self._busy_timeout_ms / 1000, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout={int(self._busy_timeout_ms)}")
        # Switching to WAL takes a lock: several processes opening the file at once retry.
        self._retry_locked(lambda: conn.execute("PRAGMA journal_mode=WAL"))
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA foreign_keys=ON")
        return conn

    def _error(self, e: sqlite3.Error, what: str = "SQLite log") -> StoreError:
        """One clear line for a SQLite error; a file that is not a database says so."""
        text = str(e)
        if "not a database" in text or "malformed" in text:
            return StoreError(f"{self.path} is not a RAC log (SQLite says: {text})")
        return StoreError(f"{what} {self.path!r}: {text}")

    def _check_readable(self) -> None:
        rows = self._read("SELECT name FROM sqlite_master WHERE type='table' AND name=?",
                          ("schema_migrations",))
        if not rows:
            raise StoreError(f"{self.path} has no RAC log in it (no RAC tables): check the "
                             "store URL")
        version = self.schema_version()
        check_version(self.path, version, LATEST_VERSION)
        if version < LATEST_VERSION:
            self._copy = self._migrated_copy()

    def _migrated_copy(self) -> sqlite3.Connection:
        """The log copied into memory and migrated there (the file is not touched)."""
        assert self._wait is not None
        source = self._conn()
        copy = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self._wait.run(lambda: source.backup(copy), _locked)
        done = {r[0] for r in copy.execute(self._sql.applied).fetchall()}
        for version, template in MIGRATIONS:
            if version not in done:
                for stmt in migration_statements(self.dialect, template):
                    copy.execute(stmt)
        return copy

    @contextmanager
    def _write(self, durable: bool = True) -> Iterator[sqlite3.Connection]:
        if self.read_only:
            raise refuse_write(self.path)
        with self._lock:
            conn = self._synced(durable)
            self._retry_locked(lambda: conn.execute("BEGIN IMMEDIATE"))
            try:
                yield conn
                self._retry_locked(lambda: conn.execute("COMMIT"))
            except BaseException:
                # Roll back on any failure, a failed COMMIT included, so the connection is
                # never left inside an open transaction. Never commit in a finally.
                if conn.in_transaction:
                    try:
                        conn.execute("ROLLBACK")
                    except sqlite3.Error:
                        pass
                raise

    def _synced(self, durable: bool) -> sqlite3.Connection:
        """The connection, set to flush its next commit to disk (``durable``) or not (call
        under ``_lock``)."""
        conn = self._conn()
        wanted = "FULL" if durable else "NORMAL"
        if self._synchronous != wanted:
            conn.execute(f"PRAGMA synchronous={wanted}")
            self._synchronous = wanted
        return conn

    @contextmanager
    def _write_one(self, durable: bool = True) -> Iterator[sqlite3.Connection]:
        """The connection for a commit of one statement, sent without ``BEGIN``/``COMMIT``:
        SQLite applies a statement atomically and commits it on its own (autocommit), taking
        the write lock as it begins (waiting for it up to the busy timeout), with the
        ``synchronous`` setting the commit asks for."""
        if self.read_only:
            raise refuse_write(self.path)
        with self._lock:
            conn = self._synced(durable)
            yield conn

    def _execute(self, conn: Any, query: str, params: Sequence[Any] = ()) -> Any:
        try:
            return conn.execute(query, params)
        except sqlite3.IntegrityError as e:
            if self._is_duplicate(e):
                raise  # the caller names the duplicate (a ConflictError)
            raise StoreError(f"SQLite log {self.path!r}: {e}") from e
        except sqlite3.Error as e:
            raise StoreError(f"SQLite log {self.path!r}: {e}") from e

    def _read(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        def once() -> list[tuple[Any, ...]]:
            with self._lock:
                rows: list[tuple[Any, ...]] = self._conn().execute(query, params).fetchall()
            return rows

        try:
            return self._wait.run(once, _locked) if self._wait is not None else once()
        except sqlite3.Error as e:
            raise self._error(e) from e

    def _is_duplicate(self, error: BaseException) -> bool:
        return isinstance(error, sqlite3.IntegrityError) and "UNIQUE" in str(error)

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

    def close(self) -> None:
        """Close the connection (a later use opens it again)."""
        with self._lock:
            conns = [self._copy, self._connection]
            self._copy = self._connection = None
            for conn in conns:
                if conn is not None and self._pid == os.getpid():
                    try:
                        conn.close()
                    except sqlite3.Error:
                        pass


def _locked(error: BaseException) -> bool:
    """True for SQLite's "another connection holds the lock" errors."""
    return isinstance(error, sqlite3.OperationalError) and (
        "locked" in str(error) or "busy" in str(error))
