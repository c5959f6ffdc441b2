"""The SQL store base: every statement of the SQLite and PostgreSQL stores, written once.

:class:`SQLStore` implements the :class:`rac.stores.Store` protocol and the ``pairs`` and
``commit`` capabilities on top of a few primitives a backend supplies (one connection per
store, a write transaction, a read, how a duplicate key shows up). Every write is a list of
changes (:mod:`rac.stores.changes`) applied in one transaction; each status change is checked
against the lifecycle tables (:mod:`rac.lifecycle`) in the ``WHERE`` clause of its own
``UPDATE``, so the check costs no extra statement: a row count of 0 means the record is
missing or the change illegal, and only then is the row read to say which. :class:`Dialect` holds what differs in the
SQL text itself: placeholders, table names, column types, the column that orders runs by
insertion. Schema changes are versioned :data:`MIGRATIONS`, applied in order, each once.
"""

from __future__ import annotations

import functools
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, ClassVar

from rac.errors import ConflictError, StoreError
from rac.lifecycle import (
    COMPENSATION_TRANSITIONS,
    RECORD_TRANSITIONS,
    RUN_TRANSITIONS,
    LifecycleError,
)
from rac.models import PairRecord, Record, RecordKind, RecordStatus, RunInfo, RunStatus
from rac.sealing import KEY_ENV, Sealer, SealingError
from rac.stores.base import status_set
from rac.stores.capabilities import COMMIT, PAIRS, RUN_QUERY, RunFilter
from rac.stores.changes import (
    Append,
    Change,
    CreateRun,
    Fence,
    UpdateRecord,
    UpdateRun,
    lease_lost,
    status_changed,
)
from rac.stores.read_only import check_version
from rac.stores.rows import (
    PAIR_COLUMNS,
    RECORD_COLUMNS,
    RUN_COLUMNS,
    check_fields,
    decode_pair,
    decode_record,
    decode_run,
    encode,
    pair_row,
    record_row,
)


@dataclass(frozen=True)
class Dialect:
    """What the SQL text of one database engine needs that another's does not."""

    #: For messages: ``sqlite``, ``postgresql``.
    name: str
    #: The parameter placeholder (``?`` or ``%s``).
    param: str
    #: Prefix of every table name (PostgreSQL shares a database with the application).
    prefix: str
    #: Column types: a float, a boolean.
    real: str
    boolean: str
    #: True when booleans are stored as 0/1 integers.
    int_bools: bool
    #: The column that orders rows of the runs table by insertion (ties of ``created_at``).
    insertion_order: str
    #: Extra column definition the runs table needs for that order ("" when built in).
    order_column: str
    #: What makes a ``SELECT`` in a write transaction hold the row it read until the commit
    #: (PostgreSQL's ``FOR UPDATE``; "" where a write transaction holds the whole database, as
    #: SQLite's ``BEGIN IMMEDIATE`` does): a fence that checks the owner without renewing the
    #: lease keeps a concurrent claim out until the commit, as the renewing ``UPDATE`` does.
    row_lock: str = ""

    def table(self, name: str) -> str:
        """The full name of one of RAC's tables (``runs``, ``records``, ...)."""
        return self.prefix + name

    def params(self, n: int) -> str:
        """``n`` comma-separated placeholders."""
        return ",".join([self.param] * n)


#: Schema migrations, applied in order; the migrations table records the versions a database
#: has. Placeholders in braces are filled from the dialect. Never edit a released migration:
#: add one.
MIGRATIONS: list[tuple[int, str]] = [
    (1, """
    CREATE TABLE IF NOT EXISTS {p}runs (
        run_id TEXT PRIMARY KEY,
        agent_id TEXT NOT NULL,
        status TEXT NOT NULL,
        created_at {real} NOT NULL,
        updated_at {real} NOT NULL,
        owner TEXT,
        lease_until {real} NOT NULL DEFAULT 0,
        summary TEXT{order_column}
    );
    CREATE INDEX IF NOT EXISTS {p}runs_status ON {p}runs(status);
    CREATE TABLE IF NOT EXISTS {p}records (
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
        compensable {boolean} NOT NULL,
        read_only {boolean} NOT NULL,
        note TEXT,
        created_at {real} NOT NULL,
        updated_at {real} NOT NULL,
        PRIMARY KEY (run_id, seq)
    )
    """),
    # The effect class of a call and its undo data (sealed text, see rac.sealing); a table of
    # facts about the log itself (the id of the key its undo data is sealed with).
    (2, """
    ALTER TABLE {p}records ADD COLUMN effect TEXT NOT NULL DEFAULT '';
    ALTER TABLE {p}records ADD COLUMN undo TEXT;
    CREATE TABLE IF NOT EXISTS {p}meta (
        name TEXT PRIMARY KEY,
        value TEXT NOT NULL
    )
    """),
    # Compensation pairs remembered durably (the ``pairs`` capability).
    (3, """
    CREATE TABLE IF NOT EXISTS {p}pairs (
        key TEXT PRIMARY KEY,
        tool TEXT NOT NULL,
        compensator TEXT NOT NULL,
        args TEXT NOT NULL,
        source TEXT NOT NULL,
        status TEXT NOT NULL,
        schema_hash TEXT NOT NULL,
        note TEXT,
        created_at {real} NOT NULL,
        updated_at {real} NOT NULL
    )
    """),
    # The framework's id of each call (a model's tool_call_id), so that a resumed agent's
    # repeated call finds its own record (see Record.call_id).
    (4, """
    ALTER TABLE {p}records ADD COLUMN call_id TEXT NOT NULL DEFAULT ''
    """),
    # Runs in the order query_runs pages them (newest first, keyset on created_at, run_id):
    # a page of a big log reads one page of the index, not every run.
    (5, """
    CREATE INDEX IF NOT EXISTS {p}runs_created ON {p}runs(created_at, run_id)
    """),
    # The text of the run's last rollback report, as the agent reads it (RunInfo.report):
    # what ``rac show`` and ``rac ui`` say the agent was told.
    (6, """
    ALTER TABLE {p}runs ADD COLUMN report TEXT
    """),
    # Whether each call happened (yes / no / maybe), kept through its undo, crashes and
    # resumes (see Record.happened); older records get it from the wording RAC wrote: a dead
    # letter's error ending in the in-doubt note, an in-doubt call's note, a compensation
    # that may have acted (issue 25). '%%' is a literal '%' to psycopg and, in a LIKE pattern,
    # the same wildcard as '%' to SQLite.
    (7, """
    ALTER TABLE {p}records ADD COLUMN happened TEXT NOT NULL DEFAULT '';
    UPDATE {p}records SET happened = CASE
        WHEN kind = 'compensation' AND status = 'pending' THEN 'maybe'
        WHEN kind = 'compensation' AND status = 'failed' AND (note LIKE 'may have taken effect%%'
            OR note LIKE 'in_doubt%%') THEN 'maybe'
        WHEN kind = 'compensation' AND status = 'failed' THEN 'no'
        WHEN kind = 'compensation' THEN 'yes'
        WHEN status IN ('pending', 'in_doubt') THEN 'maybe'
        WHEN status = 'failed' THEN 'no'
        WHEN error LIKE '%%(the call may or may not have taken effect)'
            OR error LIKE '%%(the call is in doubt: it may or may not have taken effect)'
            OR note LIKE 'may have happened%%' THEN 'maybe'
        ELSE 'yes' END
    """),
]

#: The newest schema version this RAC knows; a log with a newer one is refused.
LATEST_VERSION = max(version for version, _ in MIGRATIONS)
#: The name, in the meta table, of the id of the key the log's undo data is sealed with.
SEAL_MARKER = "seal_key_id"
_UNDO = RECORD_COLUMNS.index("undo")


def migration_statements(dialect: Dialect, template: str) -> list[str]:
    """The statements of one migration for ``dialect``."""
    text = template.format(p=dialect.prefix, real=dialect.real, boolean=dialect.boolean,
                           order_column=dialect.order_column)
    return [s.strip() for s in text.split(";") if s.strip()]


class Statements:
    """Every fixed SQL statement of the stores, built once per dialect."""

    def __init__(self, d: Dialect) -> None:
        runs, records, pairs = d.table("runs"), d.table("records"), d.table("pairs")
        migrations, meta = d.table("schema_migrations"), d.table("meta")
        p = d.param
        run_cols, rec_cols, pair_cols = (",".join(RUN_COLUMNS), ",".join(RECORD_COLUMNS),
                                         ",".join(PAIR_COLUMNS))
        self.create_migrations = (f"CREATE TABLE IF NOT EXISTS {migrations} ("
                                  f"version INTEGER PRIMARY KEY, applied_at {d.real} NOT NULL)")
        self.applied = f"SELECT version FROM {migrations}"
        self.record_migration = (f"INSERT INTO {migrations}(version, applied_at) "
                                 f"VALUES ({p}, {p})")
        self.schema_version = f"SELECT MAX(version) FROM {migrations}"
        self.insert_run = f"INSERT INTO {runs}({run_cols}) VALUES ({d.params(len(RUN_COLUMNS))})"
        self.get_run = f"SELECT {run_cols} FROM {runs} WHERE run_id={p}"
        self.list_runs = f"SELECT {run_cols} FROM {runs}"
        self.runs_order = f" ORDER BY created_at DESC, {d.insertion_order} DESC"
        self.limit = f" LIMIT {p}"
        # One UPDATE with the condition in its WHERE clause: the database re-checks it on the
        # locked row, so of two racing claimers exactly one sees a row count of 1.
        self.claim_run = (f"UPDATE {runs} SET owner={p}, lease_until={p} WHERE run_id={p} AND "
                          f"(owner IS NULL OR owner={p} OR lease_until<={p})")
        # A fence: the writes of a commit go through only while their owner holds the run.
        self.fence = f"UPDATE {runs} SET lease_until={p} WHERE run_id={p} AND owner={p}"
        self.fence_check = (f"SELECT 1 FROM {runs} WHERE run_id={p} AND owner={p}"
                            f"{d.row_lock}")
        self.run_owner = f"SELECT owner, status FROM {runs} WHERE run_id={p}"
        # A fence that renews nothing, folded into the write it guards: the condition that
        # the owner still holds the run (the row held until the commit, as fence_check holds
        # it), and the append that is made only under it.
        self.held_by = (f"EXISTS (SELECT 1 FROM {runs} WHERE run_id={p} AND owner={p}"
                        f"{d.row_lock})")
        self.append_held = (f"INSERT INTO {records}({rec_cols}) "
                            f"SELECT {d.params(len(RECORD_COLUMNS))} WHERE {self.held_by}")
        self.record_state = f"SELECT kind, status, tool FROM {records} WHERE run_id={p} AND seq={p}"
        self.append = (f"INSERT INTO {records}({rec_cols}) "
                       f"VALUES ({d.params(len(RECORD_COLUMNS))})")
        self.get_records = f"SELECT {rec_cols} FROM {records} WHERE run_id={p} ORDER BY seq"
        self.put_pair = (f"INSERT INTO {pairs}({pair_cols}) VALUES "
                         f"({d.params(len(PAIR_COLUMNS))}) ON CONFLICT(key) DO UPDATE SET "
                         + ", ".join(f"{c}=excluded.{c}" for c in PAIR_COLUMNS if c != "key"))
        self.get_pair = f"SELECT {pair_cols} FROM {pairs} WHERE key={p}"
        self.list_pairs = f"SELECT {pair_cols} FROM {pairs} ORDER BY created_at, key"
        self.get_meta = f"SELECT value FROM {meta} WHERE name={p}"
        self.put_meta = (f"INSERT INTO {meta}(name, value) VALUES ({p}, {p}) "
                         "ON CONFLICT(name) DO NOTHING")


#: A commit of at least this many changes (a batch of recovery's steps) is written with one
#: ``executemany`` per statement shape (see :meth:`SQLStore._apply_grouped`).
GROUPED_FROM = 16


def fold_fences(changes: Sequence[Change]) -> list[tuple[Change, Fence | None]]:
    """The statements of a commit, fewer: a fence that renews no lease and is followed by a
    write of a record of its run (an append, an update with fields) becomes a condition of
    that write, one statement instead of two (the write's row count says whether the run was
    held, and the run's row stays held until the commit); a fence that renews no lease of a
    run already fenced in the same commit is dropped (its row is held already, and in SQLite
    the whole database is). Each change with the fence folded into it, in order."""
    out: list[tuple[Change, Fence | None]] = []
    fenced: set[tuple[str, str]] = set()
    waiting: Fence | None = None
    for change in changes:
        t = type(change)
        if t is Fence:
            assert isinstance(change, Fence)
            if change.lease_until is None and (change.run_id, change.owner) in fenced:
                continue
            if waiting is not None:
                out.append((waiting, None))
            waiting = None
            fenced.add((change.run_id, change.owner))
            if change.lease_until is None:
                waiting = change
            else:
                out.append((change, None))
            continue
        if waiting is not None:
            if (isinstance(change, Append) and change.record.run_id == waiting.run_id) or (
                    isinstance(change, UpdateRecord) and change.run_id == waiting.run_id
                    and change.fields):
                out.append((change, waiting))
                waiting = None
                continue
            out.append((waiting, None))
            waiting = None
        out.append((change, None))
    if waiting is not None:
        out.append((waiting, None))
    return out


@functools.cache
def statements(dialect: Dialect) -> Statements:
    """The statements of ``dialect`` (built on first use)."""
    return Statements(dialect)


@functools.lru_cache(maxsize=256)
def update_statement(dialect: Dialect, table: str, fields: tuple[str, ...], key: str) -> str:
    """``UPDATE table SET f1=?, ... WHERE key`` for checked field names (never user text)."""
    p = dialect.param
    cols = ", ".join(f"{k}={p}" for k in fields)
    return f"UPDATE {dialect.table(table)} SET {cols} WHERE {key}"


def legal_previous(table: dict[Any, frozenset[Any]], new: Any, *, same_is_change: Any = None
                   ) -> list[str]:
    """The statuses from which ``new`` may be written under ``table`` (writing the status a
    row already has is no change, and legal, except ``same_is_change``), sorted."""
    found = {str(p) for p, nexts in table.items() if new in nexts}
    if new is not same_is_change:
        found.add(str(new))
    return sorted(found)


def _in(values: list[str]) -> str:
    # Status names are RAC's own enum values (lower-case words), never user text.
    return "status IN (" + ", ".join(f"'{v}'" for v in values) + ")" if values else "1=0"


@functools.cache
def record_guard(new: RecordStatus) -> str:
    """The ``WHERE`` condition that lets a record's status become ``new`` only from a status
    the lifecycle tables allow (actions and compensations have a table each)."""
    action = legal_previous(RECORD_TRANSITIONS, new, same_is_change=RecordStatus.COMPENSATING)
    comp = legal_previous(COMPENSATION_TRANSITIONS, new)
    kind = f"'{RecordKind.COMPENSATION}'"
    return f"((kind={kind} AND {_in(comp)}) OR (kind<>{kind} AND {_in(action)}))"


@functools.cache
def run_guard(new: RunStatus) -> str:
    """The ``WHERE`` condition that lets a run's status become ``new`` only from a status the
    lifecycle table allows."""
    return _in(legal_previous(RUN_TRANSITIONS, new))


class SQLStore(ABC):
    """A transaction log in a SQL database: the statements and row handling of every SQL store.

    A backend supplies one connection per store and the primitives below; everything else,
    migrations included, is here. Undo data is sealed with ``key`` (default: ``RAC_LOG_KEY``,
    see :mod:`rac.sealing`).
    """

    dialect: ClassVar[Dialect]
    #: Optional capabilities beyond the Store protocol (see :mod:`rac.stores.capabilities`).
    capabilities: frozenset[str] = frozenset({PAIRS, RUN_QUERY, COMMIT})
    #: Writes wait on a disk or a server: async callers write from a worker thread.
    blocking: bool = True
    url: str
    #: True when opened read-only (see :mod:`rac.stores.read_only`): every write raises.
    read_only: bool = False

    # -- what a backend supplies ---------------------------------------------------------------
    @abstractmethod
    def _write(self, durable: bool = True) -> AbstractContextManager[Any]:
        """A write transaction yielding a connection: committed when the block ends, rolled
        back on any exception. ``durable=False``: the commit may skip the flush to disk (it
        survives the process, not necessarily a power cut)."""

    def _write_one(self, durable: bool = True) -> AbstractContextManager[Any]:
        """A connection for a commit that is one statement, which the database applies
        atomically on its own: a backend that can send it without ``BEGIN``/``COMMIT``
        (autocommit) saves two statements (default: :meth:`_write`)."""
        return self._write(durable)

    @abstractmethod
    def _execute(self, conn: Any, query: str, params: Sequence[Any] = ()) -> Any:
        """Run one statement on ``conn``; the cursor (its ``rowcount`` is read)."""

    @abstractmethod
    def _read(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The rows of one query, outside any write transaction."""

    @abstractmethod
    def _is_duplicate(self, error: BaseException) -> bool:
        """True when ``error`` is the database refusing a duplicate primary key."""

    def _lock_migrations(self, conn: Any) -> None:  # noqa: B027 - optional hook
        """Serialise migrations between processes when the write transaction does not."""

    def _check_readable(self) -> None:  # noqa: B027 - optional hook
        """A read-only open: check that the log exists and can be read as it is (see
        :mod:`rac.stores.read_only`); raise StoreError naming what is wrong."""

    # -- opening --------------------------------------------------------------------------------
    def _open(self, key: str | bytes | None) -> None:
        """Migrate the schema (read-only: check it) and check the log key; called once by the
        backend's __init__."""
        self._sql = statements(self.dialect)
        self._sealer = Sealer(key) if key is not None else Sealer.from_env()
        if self.read_only:
            self._check_readable()
        else:
            self._migrate()
        self._check_key()

    def _migrate(self) -> None:
        with self._write() as conn:
            self._lock_migrations(conn)
            self._execute(conn, self._sql.create_migrations)
            done = {r[0] for r in self._execute(conn, self._sql.applied).fetchall()}
            check_version(self._display_url(), max(done, default=0), LATEST_VERSION)
            for version, template in MIGRATIONS:
                if version in done:
                    continue
                for stmt in migration_statements(self.dialect, template):
                    self._execute(conn, stmt)
                self._execute(conn, self._sql.record_migration, (version, time.time()))

    def _check_key(self) -> None:
        """Refuse a log sealed with another key, or opened without the key it is sealed with;
        the first keyed open of a log marks it with the key's id."""
        marker = self._marker()
        if self._sealer.encrypts and marker is None and not self.read_only:
            with self._write() as conn:
                self._execute(conn, self._sql.put_meta, (SEAL_MARKER, self._sealer.key_id))
            marker = self._marker()
        if marker is None:
            return
        if not self._sealer.encrypts:
            raise SealingError(
                f"the log {self._display_url()} keeps its undo data encrypted (key id {marker}) "
                f"and {KEY_ENV} is not set: set it to the log's key")
        if marker != self._sealer.key_id:
            raise SealingError(
                f"the log {self._display_url()} is sealed with key id {marker}, but {KEY_ENV} is "
                f"key id {self._sealer.key_id}: wrong key")

    def _marker(self) -> str | None:
        rows = self._read(self._sql.get_meta, (SEAL_MARKER,))
        return str(rows[0][0]) if rows else None

    def _display_url(self) -> str:
        return self.url

    def schema_version(self) -> int:
        """The highest migration applied to this database."""
        rows = self._read(self._sql.schema_version)
        return int(rows[0][0] or 0)

    # -- runs ----------------------------------------------------------------------------------
    def create_run(self, run: RunInfo) -> None:
        self.commit([CreateRun(run)])

    def get_run(self, run_id: str) -> RunInfo | None:
        rows = self._read(self._sql.get_run, (run_id,))
        return decode_run(rows[0]) if rows else None

    def list_runs(self, status: RunStatus | Iterable[RunStatus] | None = None,
                  limit: int | None = None) -> list[RunInfo]:
        wanted = status_set(status)
        query = self._sql.list_runs
        params: list[Any] = []
        if wanted is not None:
            query += f" WHERE status IN ({self.dialect.params(len(wanted))})"
            params += sorted(str(s) for s in wanted)
        query += self._sql.runs_order
        if limit:
            query += self._sql.limit
            params.append(int(limit))
        return [decode_run(r) for r in self._read(query, params)]

    def query_runs(self, where: RunFilter, limit: int = 50) -> list[RunInfo]:
        """Runs matching ``where``, newest first (the ``run_query`` capability): one query,
        keyset-paged on ``(created_at, run_id)``."""
        p = self.dialect.param
        clauses: list[str] = []
        params: list[Any] = []
        if where.status is not None:
            clauses.append(f"status IN ({self.dialect.params(len(where.status))})")
            params += sorted(str(s) for s in where.status)
        if where.agent is not None:
            clauses.append(f"agent_id={p}")
            params.append(where.agent)
        if where.tool is not None:
            records = self.dialect.table("records")
            clauses.append(f"EXISTS (SELECT 1 FROM {records} x WHERE x.run_id="
                           f"{self.dialect.table('runs')}.run_id AND x.tool={p})")
            params.append(where.tool)
        if where.since is not None:
            clauses.append(f"created_at>={p}")
            params.append(where.since)
        if where.until is not None:
            clauses.append(f"created_at<{p}")
            params.append(where.until)
        if where.after is not None:
            clauses.append(f"(created_at<{p} OR (created_at={p} AND run_id<{p}))")
            params += [where.after[0], where.after[0], where.after[1]]
        query = self._sql.list_runs
        if clauses:
            query += " WHERE " + " AND ".join(clauses)
        query += f" ORDER BY created_at DESC, run_id DESC LIMIT {p}"
        params.append(int(limit))
        return [decode_run(r) for r in self._read(query, params)]

    def update_run(self, run_id: str, **fields: Any) -> None:
        if fields:
            self.commit([UpdateRun(run_id, fields)])

    def claim_run(self, run_id: str, owner: str, now: float, lease_seconds: float) -> bool:
        with self._write() as conn:
            cur = self._execute(conn, self._sql.claim_run,
                                (owner, now + lease_seconds, run_id, owner, now))
            return bool(cur.rowcount == 1)

    # -- records -------------------------------------------------------------------------------
    def append(self, record: Record) -> None:
        self.commit([Append(record)])

    def update_record(self, run_id: str, seq: int, **fields: Any) -> None:
        if fields:
            self.commit([UpdateRecord(run_id, seq, fields)])

    def get_records(self, run_id: str) -> list[Record]:
        rows = self._read(self._sql.get_records, (run_id,))
        return [decode_record(r, self._sealer.unseal(r[_UNDO], f"{run_id}#{r[1]}"))
                for r in rows]

    # -- the changes of a step, in one transaction (the ``commit`` capability) ----------------
    def flush(self) -> None:  # noqa: B027 - SQLite holds nothing
        """Write what this store holds back of its ``durable=False`` commits (PostgreSQL holds
        them for the next commit, see :mod:`rac.stores.postgres`; SQLite holds none)."""

    def commit(self, changes: Sequence[Change], *, durable: bool = True) -> None:
        """Write ``changes`` in order in one transaction: all or none (see
        :mod:`rac.stores.changes`)."""
        if not changes:
            return
        self._check_changes(changes)
        if len(changes) >= GROUPED_FROM:
            try:
                with self._write(durable) as conn:
                    self._apply_grouped(conn, changes)
                return
            except Exception:  # noqa: BLE001, S110 - written again one by one, which names it
                pass
        current: Change | None = None
        steps = fold_fences(changes)
        try:
            with (self._write_one if len(steps) == 1 else self._write)(durable) as conn:
                for current, fence in steps:
                    self._apply(conn, current, fence)
        except Exception as e:
            if self._is_duplicate(e):
                if type(current) is CreateRun:
                    raise ConflictError(f"run {current.run.run_id!r} already exists in the "
                                        "log") from e
                if type(current) is Append:
                    raise ConflictError(f"record {current.record.run_id}#{current.record.seq}"
                                        " already exists; refusing to overwrite it") from e
            raise

    @staticmethod
    def _check_changes(changes: Sequence[Change]) -> None:
        """Refuse bad field names before anything is sent."""
        for change in changes:
            if type(change) is UpdateRecord:
                check_fields("record", change.fields, RECORD_COLUMNS)
            elif type(change) is UpdateRun:
                check_fields("run", change.fields, RUN_COLUMNS)

    def _apply_grouped(self, conn: Any, changes: Sequence[Change]) -> None:
        """Apply a long list of changes (a batch of recovery's steps) with one
        ``executemany`` per statement shape: the changes of one row stay in their order (the
        n-th change of each row is in the n-th layer), changes of different rows commute.
        Raises on anything unexpected (a row count that does not add up, a duplicate), and
        the caller then applies the changes one by one, which names the failing one."""
        layers: list[list[Change]] = []
        seen: dict[tuple[Any, ...], int] = {}
        for change in changes:
            key: tuple[Any, ...]
            if isinstance(change, UpdateRecord):
                key = (change.run_id, change.seq)
            elif isinstance(change, Append):
                key = (change.record.run_id, change.record.seq)
            else:
                key = ("run",)  # the runs' rows: few changes, kept in order among themselves
            n = seen.get(key, 0)
            seen[key] = n + 1
            if n == len(layers):
                layers.append([])
            layers[n].append(change)
        for layer in layers:
            groups: dict[str, list[Sequence[Any]]] = {}
            for change in layer:
                if isinstance(change, Append):
                    groups.setdefault(self._sql.append, []).append(
                        self._append_row(change.record))
                elif isinstance(change, UpdateRecord) and change.fields \
                        and change.expect is None:
                    query, params = self._record_update(change)
                    groups.setdefault(query, []).append(params)
                else:
                    self._apply(conn, change)
            for query, rows in groups.items():
                count = self._execute_many(conn, query, rows)
                if query != self._sql.append and count != len(rows):
                    raise LifecycleError(f"{len(rows) - count} of {len(rows)} updates refused")

    def _execute_many(self, conn: Any, query: str, rows: list[Sequence[Any]]) -> int:
        """Run one statement for each parameter row; the rows it changed in all."""
        cur = conn.executemany(query, rows)
        return int(cur.rowcount)

    def _append_row(self, record: Record) -> list[Any]:
        context = f"{record.run_id}#{record.seq}"
        return record_row(record, lambda undo: self._sealer.seal(undo, context),
                          int_bools=self.dialect.int_bools)

    def _record_update(self, change: UpdateRecord) -> tuple[str, list[Any]]:
        """The ``UPDATE`` of a record change (no compare-and-set) and its parameters."""
        p = self.dialect.param
        new = change.fields.get("status")
        context = f"{change.run_id}#{change.seq}"
        values = [self._sealer.seal(v, context) if k == "undo"
                  else encode(k, v, int_bools=self.dialect.int_bools)
                  for k, v in change.fields.items()]
        key = f"run_id={p} AND seq={p}"
        where = key if new is None else f"{key} AND {record_guard(RecordStatus(new))}"
        return (update_statement(self.dialect, "records", tuple(change.fields), where),
                [*values, change.run_id, change.seq])

    def _apply(self, conn: Any, change: Change, fence: Fence | None = None) -> None:
        """Apply one change; ``fence``: the fence folded into it (see :func:`fold_fences`)."""
        t = type(change)
        if t is Append:
            assert isinstance(change, Append)
            if fence is None:
                self._execute(conn, self._sql.append, self._append_row(change.record))
            elif self._execute(conn, self._sql.append_held, [
                    *self._append_row(change.record), fence.run_id, fence.owner]
                    ).rowcount == 0:
                self._fence(conn, fence)  # raises: the run is not held
                raise StoreError(f"record {change.record.run_id}#{change.record.seq} was "
                                 "not written, though its run is held")
        elif t is UpdateRecord:
            assert isinstance(change, UpdateRecord)
            self._update_record(conn, change, fence)
        elif t is UpdateRun:
            assert isinstance(change, UpdateRun)
            self._update_run(conn, change)
        elif t is Fence:
            assert isinstance(change, Fence)
            self._fence(conn, change)
        elif t is CreateRun:
            assert isinstance(change, CreateRun)
            d = change.run.to_dict()
            self._execute(conn, self._sql.insert_run, [d[c] for c in RUN_COLUMNS])
        else:
            raise TypeError(f"not a change of the log: {change!r}")

    def _update_record(self, conn: Any, change: UpdateRecord, fence: Fence | None = None
                       ) -> None:
        p = self.dialect.param
        new = change.fields.get("status")
        status = RecordStatus(new) if new is not None else None
        context = f"{change.run_id}#{change.seq}"
        values = [self._sealer.seal(v, context) if k == "undo"
                  else encode(k, v, int_bools=self.dialect.int_bools)
                  for k, v in change.fields.items()]
        guard = record_guard(status) if status is not None else None
        if change.expect is not None:  # compare-and-set: RAC's own enum value, never user text
            expected = f"status='{RecordStatus(change.expect)}'"
            guard = expected if guard is None else f"{guard} AND {expected}"
        params = [*values, change.run_id, change.seq]
        if fence is not None:
            guard = self._sql.held_by if guard is None else f"{guard} AND {self._sql.held_by}"
            params += (fence.run_id, fence.owner)
        if self._update(conn, "records", change.fields, f"run_id={p} AND seq={p}", guard,
                        params):
            return
        if fence is not None:
            self._fence(conn, fence)  # raises if the run is not held: that refused it
        rows = self._execute(conn, self._sql.record_state,
                             (change.run_id, change.seq)).fetchall()
        if not rows:
            raise KeyError(context)
        kind, previous, tool = rows[0]
        if change.expect is not None and previous != str(change.expect):
            raise status_changed(change, previous)
        raise LifecycleError(f"illegal status change of {context} ({tool}, {kind}): "
                             f"{previous} -> {status}; the log refused it")

    def _update_run(self, conn: Any, change: UpdateRun) -> None:
        new = change.fields.get("status")
        status = RunStatus(new) if new is not None else None
        values = [str(v) if k == "status" else v for k, v in change.fields.items()]
        guard = run_guard(status) if status is not None else None
        if self._update(conn, "runs", change.fields, f"run_id={self.dialect.param}", guard,
                        [*values, change.run_id]):
            return
        rows = self._execute(conn, self._sql.run_owner, (change.run_id,)).fetchall()
        if not rows:
            raise KeyError(change.run_id)
        raise LifecycleError(f"illegal status change of run {change.run_id}: {rows[0][1]} -> "
                             f"{status}; the log refused it")

    def _update(self, conn: Any, table: str, fields: Mapping[str, Any], key: str,
                guard: str | None, params: list[Any]) -> bool:
        """One ``UPDATE`` of checked ``fields`` where ``key`` (and the status ``guard``); True
        if it changed a row (False: the row is missing, or the guard refused the change)."""
        if not fields:
            return True
        where = key if guard is None else f"{key} AND {guard}"
        query = update_statement(self.dialect, table, tuple(fields), where)
        return bool(self._execute(conn, query, params).rowcount != 0)

    def _fence(self, conn: Any, fence: Fence) -> None:
        if fence.lease_until is None:
            held = bool(self._execute(conn, self._sql.fence_check,
                                      (fence.run_id, fence.owner)).fetchall())
        else:
            held = self._execute(conn, self._sql.fence, (fence.lease_until, fence.run_id,
                                                         fence.owner)).rowcount != 0
        if held:
            return
        rows = self._execute(conn, self._sql.run_owner, (fence.run_id,)).fetchall()
        if not rows:
            raise KeyError(fence.run_id)
        raise lease_lost(fence.run_id, fence.owner, rows[0][0])

    # -- pairs (the ``pairs`` capability) ------------------------------------------------------
    def put_pair(self, pair: PairRecord) -> None:
        """Write ``pair``, replacing every field of the pair with the same key."""
        with self._write() as conn:
            self._execute(conn, self._sql.put_pair, pair_row(pair))

    def get_pair(self, key: str) -> PairRecord | None:
        """The pair with this key, or None."""
        rows = self._read(self._sql.get_pair, (key,))
        return decode_pair(rows[0]) if rows else None

    def list_pairs(self) -> list[PairRecord]:
        """Every pair, oldest first."""
        return [decode_pair(r) for r in self._read(self._sql.list_pairs)]
