"""Runs: one transaction scope of an agent, with the logic of a call under RAC.

A :class:`Run` writes an intent record before each tool call and its outcome after, retries
transient failures, tries declared alternatives, and when a call fails for good rolls back the
current scope: every completed side effect, newest first, dependents before what they depend on.
Scopes nest (:meth:`Run.scope`); a failure rolls back only the innermost one.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import os
import random
from _thread import RLock as _RLock
from collections.abc import Awaitable, Callable, Iterable
from contextvars import ContextVar, Token
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

from rac.classify import Classification, ErrorKind, default_detect_result_error
from rac.dependencies import DependencyIndex, first_result_id
from rac.effects import Flow, Invoke, Sleep, drive_async, drive_sync
from rac.errors import (
    CompensationMappingError,
    ConfigurationError,
    NoCompensationError,
    ToolCallFailed,
)
from rac.events import info_enabled, run_logger
from rac.mapping import IDEMPOTENCY_PARAM, copies_fields, field_plan, map_positional
from rac.models import (
    LEGAL_TRANSITIONS,
    Record,
    RecordKind,
    RecordStatus,
    RunInfo,
    RunStatus,
)
from rac.ordering import dependents_of, rollback_order
from rac.registry import Compensation
from rac.report import AttemptedAlternative, RecoveryReport, UndoneAction
from rac.retry import RetryPolicy
from rac.serialize import _redact_text, plain_copy, store_value
from rac.tools import Tool, ToolSet

if TYPE_CHECKING:
    from rac.engine import RAC

Invoker = Callable[[str, dict[str, Any]], Any]
AsyncInvoker = Callable[[str, dict[str, Any]], Awaitable[Any]]

_CURRENT_RUN: ContextVar[Run | None] = ContextVar("rac_current_run", default=None)
_CURRENT_SCOPE: ContextVar[tuple[Run, str] | None] = ContextVar("rac_current_scope", default=None)


# Enum members as module globals: reading ``RecordStatus.X`` costs a class lookup each time.
_ACTION = RecordKind.ACTION
_COMPENSATED = RecordStatus.COMPENSATED
_COMPENSATING = RecordStatus.COMPENSATING
_COMPENSATION = RecordKind.COMPENSATION
_COMPENSATION_FAILED = RecordStatus.COMPENSATION_FAILED
_COMPLETED = RecordStatus.COMPLETED
_FAILED = RecordStatus.FAILED
_PENDING = RecordStatus.PENDING
_R_COMPENSATED = RunStatus.COMPENSATED
_R_COMPENSATING = RunStatus.COMPENSATING
_R_COMPLETED = RunStatus.COMPLETED
_R_NEEDS_ATTENTION = RunStatus.NEEDS_ATTENTION
_R_RUNNING = RunStatus.RUNNING

#: The depends_on of every record that depends on nothing: one list, never changed (a record
#: is copied, lists and all, before anything outside its run sees it), so that a run's log does
#: not hold one empty list per record for the garbage collector to walk.
_NO_DEPS: list[int] = []

# Tuples, not sets: hashing an enum member runs Python code, comparing it does not.
_BAD = (_FAILED, _COMPENSATION_FAILED)
_IDLE = (_R_COMPLETED, _R_COMPENSATED, _R_NEEDS_ATTENTION)
#: LEGAL_TRANSITIONS as pairs of member ids, checked without hashing enum members.
_LEGAL = frozenset((id(a), id(b)) for a, targets in LEGAL_TRANSITIONS.items() for b in targets)


#: Run ids: a generator seeded from the OS, re-seeded in every forked child (a forked worker
#: must not repeat its parent's ids); os.urandom per run is a system call.
_IDS = random.Random(os.urandom(16))
os.register_at_fork(after_in_child=lambda: _IDS.seed(os.urandom(16)))


@functools.lru_cache(maxsize=1024)
def _key_prefix(run_id: str) -> str:
    """15 hex digits that stand for the run in its idempotency keys: a generated run id's own
    random digits, else a hash of the id."""
    digits = run_id[4:]
    if len(run_id) == 19 and run_id.startswith("run-") and all(c in _HEX for c in digits):
        return digits
    return hashlib.blake2b(run_id.encode(), digest_size=8).hexdigest()[:15]


_HEX = frozenset("0123456789abcdef")


def idempotency_key(run_id: str, seq: int, kind: str) -> str:
    """The key of one step: stable across retries and recovery, different across runs.

    24 characters: a hash of the run id, ``a`` (action) or ``c`` (compensation), the seq."""
    return f"{_key_prefix(run_id)}{kind[:1]}{seq:08x}"


def _in_scope(record_scope: str, scope: str) -> bool:
    return scope == "0" or record_scope == scope or record_scope.startswith(scope + ".")


def _ref(rec: Record) -> str | None:
    """A short handle for an action in a report: the first id its result holds."""
    found = first_result_id(rec.result)
    return found if type(found) is str or found is None else str(found)


def _error_text(err: BaseException) -> str:
    text = str(err) or type(err).__name__
    return _redact_text(text)[:2000]


@dataclass
class CallOutcome:
    """What became of one tool call under RAC.

    ``ok`` is True when a tool (the requested one or an alternative, named by ``tool``) succeeded;
    ``result`` is its raw return value and ``value`` the normalised one. When ``ok`` is False,
    ``message`` is what the agent should be told: the rendered ``report`` after a rollback, or
    why the call was refused.
    """

    # Not slotted: the defaults below are class attributes, so the outcome of a successful call
    # (every call's path) sets only the fields that differ (see Run.execute).

    ok: bool
    tool: str
    seq: int
    result: Any = None
    value: Any = None
    error: BaseException | None = None
    report: RecoveryReport | None = None
    message: str | None = None
    refused: bool = False
    undone: bool = False


_new = object.__new__


class _Failure:
    __slots__ = ("tool", "seq", "error", "kind", "attempts")

    def __init__(self, tool: str, seq: int, error: BaseException, kind: ErrorKind,
                 attempts: int) -> None:
        self.tool, self.seq, self.error, self.kind, self.attempts = tool, seq, error, kind, attempts


class _Prepared:
    """A compensation whose intent record is written: what to call, with what."""

    __slots__ = ("rec", "comp", "tool", "args", "crec")

    def __init__(self, rec: Record, comp: Compensation, tool: Tool, args: dict[str, Any],
                 crec: Record) -> None:
        self.rec = rec
        self.comp = comp
        self.tool = tool
        self.args = args
        self.crec = crec

    def invoke(self) -> Invoke:
        """The effect that calls the compensator (shielded: a rollback never stops midway)."""
        return Invoke(self.tool.call or self.tool.invoke, self.tool.ainvoke, self.args, True)


class _Retry:
    """A compensation begun inline whose first attempt failed (``first``), or that can only be
    awaited (``first`` is None): the flow takes it from there."""

    __slots__ = ("prep", "first")

    def __init__(self, prep: _Prepared, first: tuple[bool, Any] | None) -> None:
        self.prep, self.first = prep, first


#: How one tool's actions are undone: compensation, compensating tool, whether mapped
#: arguments are fit for the log as they are, fields to copy into them (see Run._plan).
_Plan = tuple["Compensation | None", "Tool | None", bool, "list[tuple[str, bool, str]] | None"]
#: Per rollback: tool name -> its plan.
_Plans = dict[str, _Plan]


class Run:
    """One transaction scope: the calls an agent made in one invocation, and their log.

    Open it with ``with engine.run() as run`` or ``async with engine.run() as run``. Call tools
    with :meth:`call` / :meth:`acall`, or from an adapter with :meth:`execute` /
    :meth:`aexecute`. Leaving the block normally marks the run completed; leaving it with an
    exception rolls the run back and lets the exception go on.
    """

    #: The report of this run's last rollback, if any.
    last_report: RecoveryReport | None = None
    # Defaults every run starts with, as class attributes (an adapter may open a run per agent
    # turn): a run sets its own when one changes.
    _rng_instance: random.Random | None = None
    _started = False
    _events: Any = None
    _info = True  # whether info-level events go anywhere (set when the run starts)
    _nested = False  # set once a nested scope is opened (see execute)
    _scopes_opened = 0
    _tokens: list[tuple[Token[Run | None], Token[tuple[Run, str] | None]]] | None = None
    #: The memory store's row of this run, which the run changes in place (see _start).
    _row: RunInfo | None = None
    #: Seqs of calls an interruption (not a framework's control flow) left pending: in doubt
    #: until recovery settles them, so finish() leaves the run running.
    _in_doubt: frozenset[int] = frozenset()

    def __init__(self, engine: RAC, *, run_id: str | None = None, agent_id: str | None = None,
                 tools: Iterable[Tool | Callable[..., Any]] | None = None) -> None:
        self.engine = engine
        if run_id:
            self.run_id = run_id
            self._key_prefix = _key_prefix(run_id)
        else:  # 60 random bits: the id, and as they are, the prefix of its idempotency keys
            bits = f"{_IDS.getrandbits(60):015x}"
            self.run_id = f"run-{bits}"
            self._key_prefix = bits
        self.agent_id = agent_id or engine.agent_id
        self.status = _R_RUNNING
        self._tools: dict[str, Tool] = {}
        self._lock = _RLock()
        self._seq = itertools.count(1)
        self._raw: dict[int, tuple[dict[str, Any], Any]] = {}
        self._in_flight: set[int] = set()
        # seq -> scope of the rollback that started while the call was running: undone when it
        # completes. Seqs a rollback (or an undo) is compensating are claimed, so no two
        # rollbacks ever compensate one effect.
        self._doomed: dict[int, str] = {}
        self._claimed: set[int] = set()
        self._active_rollbacks: list[str] = []
        self._deps = DependencyIndex()
        # A store that holds the run's own record objects (the memory store) needs no update
        # calls: changing a record is writing it.
        self._shared = bool(getattr(engine.store, "shares_records", False))
        #: seq -> record; with the memory store, its own table of this run from the start on
        self._records: dict[int, Record] = {}
        if tools:
            self.add_tools(tools)

    @property
    def _rng(self) -> random.Random:
        """Jitter for backoff, seeded by the run id (made on first use: seeding costs)."""
        if self._rng_instance is None:
            self._rng_instance = random.Random(self.run_id)
        return self._rng_instance

    # -- tools ---------------------------------------------------------------------------------
    def add_tools(self, tools: Iterable[Tool | Callable[..., Any]] | ToolSet) -> None:
        """Make tools callable in this run (for compensations and alternatives), checking the
        engine's declarations that concern them. A :class:`rac.ToolSet` of this engine that
        passed that check under the current declarations is added without another."""
        if type(tools) is ToolSet and tools.engine is self.engine:
            registry = self.engine.registry
            if tools.checked_at == registry.version or self._check_tool_set(tools):
                with self._lock:
                    self._tools.update(tools.by_name)
                return
        adapt = self.engine.adapt_tool
        new = [t if type(t) is Tool else adapt(t) for t in tools]
        with self._lock:
            for t in new:
                self._tools[t.name] = t
        self.engine.registry.check_known(
            set(self._tools) | set(self.engine.tools), only_for=[t.name for t in new])

    def _check_tool_set(self, tools: ToolSet) -> bool:
        """Check a tool set against the declarations with the engine's tools alone, and
        remember that it passed; False if it needs this run's other tools (the general path
        checks with them)."""
        engine = self.engine
        version = engine.registry.version
        try:
            engine.registry.check_known(set(tools.by_name) | set(engine.tools),
                                        only_for=list(tools.by_name))
        except ConfigurationError:
            return False
        tools.checked_at = version
        return True

    def tool(self, name: str) -> Tool | None:
        """The tool called ``name`` in this run or the engine, or None."""
        return self._tools.get(name) or self.engine.tools.get(name)

    # -- opening and closing ---------------------------------------------------------------------
    def _start(self) -> None:
        if self._started:
            return
        with self._lock:  # the first calls of a run may come from several threads at once
            if not self._started:
                self._open()

    def _open(self) -> None:
        """Write the run's row and start its events (once, under the lock)."""
        now = self.engine.clock.now()
        row = RunInfo(self.run_id, self.agent_id, _R_RUNNING, now, now, self.engine.owner)
        if self._shared:  # the memory store keeps this row and table as the log's
            self._records = self.engine.store.adopt_run(row)  # type: ignore[attr-defined]
            self._row = row  # (see _set_status)
        else:
            self.engine.store.create_run(row)
        # Whether info events go anywhere, decided once for the run; the bound logger itself
        # is made when the first event is emitted.
        self._info = info_enabled()
        self._started = True
        if self._info:
            self._event("rac.run", status=str(_R_RUNNING), agent_id=self.agent_id)
        if self.engine._notify_runs:
            self.engine.hook.rac_run_status_changed(run_id=self.run_id,
                                                    status=_R_RUNNING, previous=None)

    def __enter__(self) -> Run:
        self._start()
        if self._tokens is None:
            self._tokens = []
        self._tokens.append((_CURRENT_RUN.set(self), _CURRENT_SCOPE.set((self, "0"))))
        return self

    def _pop_tokens(self) -> tuple[Token[Run | None], Token[tuple[Run, str] | None]]:
        if not self._tokens:
            raise RuntimeError(f"run {self.run_id} was left without being entered")
        return self._tokens.pop()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        tokens = self._pop_tokens()
        try:
            reason = self._abort_reason(exc)
            if reason is not None:
                self.rollback(reason=reason)
            else:
                self._finish()
        finally:
            self._reset_context(tokens)

    async def __aenter__(self) -> Run:
        return self.__enter__()

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        tokens = self._pop_tokens()
        try:
            reason = self._abort_reason(exc)
            if reason is not None:
                await self.arollback(reason=reason)
            else:
                self._finish()
        finally:
            self._reset_context(tokens)

    def _abort_reason(self, exc: BaseException | None) -> str | None:
        """Why the run must be rolled back as it closes, or None if it needs no rollback."""
        if exc is None or self._already_rolled_back(exc):
            return None
        return f"the run was aborted by {type(exc).__name__}: {_error_text(exc)}"

    @staticmethod
    def _reset_context(tokens: tuple[Token[Run | None], Token[tuple[Run, str] | None]]) -> None:
        run_token, scope_token = tokens
        _CURRENT_SCOPE.reset(scope_token)
        _CURRENT_RUN.reset(run_token)

    def _already_rolled_back(self, exc: BaseException) -> bool:
        """True when an exception leaving the run needs no second rollback: the run's own
        failure already rolled it back, or it is rolled back with nothing live since."""
        if isinstance(exc, ToolCallFailed) and exc.report.run_id == self.run_id \
                and exc.report.scope == "0":
            return True
        with self._lock:
            if self.status not in (_R_COMPENSATED, _R_NEEDS_ATTENTION):
                return False
            return not any(
                r.kind is _ACTION and not r.read_only and r.compensable
                and (r.status is _COMPLETED
                     or (r.status is _PENDING and r.seq not in self._in_flight))
                for r in self._records.values())

    @property
    def busy(self) -> bool:
        """True while a call of this run is under way (its intent written, its outcome not
        yet); :meth:`finish` leaves a busy run running."""
        return bool(self._in_flight)

    def finish(self) -> bool:
        """Mark the run completed, for adapters whose framework has no block to wrap the run
        in; True if it is completed now.

        Only a running run that is idle is marked: while a call of it is under way
        (:attr:`busy`), or after an interruption (a crash, a cancellation) left a call in
        doubt, it stays running, the second case for ``rac recover``; a rolled-back run keeps
        its status. The run stays joinable: a later call sets it running again."""
        if not self._started:
            self._start()
        with self._lock:
            if self.status is _R_RUNNING and not self._in_flight and not self._in_doubt:
                self._set_status(_R_COMPLETED)
            return self.status is _R_COMPLETED

    def _finish(self) -> None:
        with self._lock:
            if self.status is _R_RUNNING:
                self._set_status(_R_COMPLETED)

    def scope(self) -> Scope:
        """A nested transaction scope: a failure inside it rolls back only what it did."""
        parent = self.current_scope()
        self._nested = True
        with self._lock:
            self._scopes_opened += 1
            n = self._scopes_opened
        return Scope(self, f"{parent}.{n}")

    def current_scope(self) -> str:
        """The id of the innermost scope open in this context ("0" is the run itself)."""
        cur = _CURRENT_SCOPE.get()
        return cur[1] if cur is not None and cur[0] is self else "0"

    # -- log helpers -----------------------------------------------------------------------------
    def records(self) -> list[Record]:
        """Copies of this run's records, in seq order."""
        with self._lock:
            return [self._records[s].copy() for s in sorted(self._records)]

    def _set_status(self, status: RunStatus) -> None:
        previous = self.status
        if previous is status:
            return
        self.status = status
        row = self._row
        if row is not None:  # the log's own row (memory store): changed in place
            row.status = status
            row.updated_at = self.engine.clock.now()
        else:
            self.engine.store.update_run(self.run_id, status=status,
                                         updated_at=self.engine.clock.now())
        if self._info or status is _R_NEEDS_ATTENTION:
            self._event("rac.run", level="warning" if status is _R_NEEDS_ATTENTION else "info",
                        status=str(status), previous=str(previous))
        if self.engine._notify_runs:
            self.engine.hook.rac_run_status_changed(run_id=self.run_id, status=status,
                                                    previous=previous)

    def _append(self, rec: Record) -> None:
        if not self._shared:  # else the table below is the log's
            self.engine.store.append(rec)
        self._records[rec.seq] = rec
        if self._info or rec.status in _BAD or self.engine._notify_records:
            self._emit_record(rec, None)

    def _update(self, rec: Record, **fields: Any) -> None:
        """Write changed fields of a record to the store, then to the in-memory copy; a status
        change is checked against :data:`LEGAL_TRANSITIONS` and emits one event."""
        previous = rec.status
        new = fields.get("status")
        if new is not None and new is not previous and (id(previous), id(new)) not in _LEGAL:
            raise RuntimeError(f"illegal status change of {self.run_id}#{rec.seq} ({rec.tool}): "
                               f"{previous} -> {new}")
        fields["updated_at"] = self.engine.clock.now()
        if not self._shared:
            self.engine.store.update_record(self.run_id, rec.seq, **fields)
        for k, v in fields.items():
            setattr(rec, k, v)
        if new is not None and new is not previous:
            self._emit_record(rec, previous)

    def _logger(self) -> Any:
        if self._events is None:
            self._events = run_logger(run_id=self.run_id)[0]
        return self._events

    def _event(self, event: str, *, level: str = "info", **fields: Any) -> None:
        """Emit one event on this run's logger (``run_id`` is bound)."""
        if level != "info" or self._info:  # the logger is made for the first event emitted
            getattr(self._logger(), level)(event, **fields)

    def _set_status_of(self, rec: Record, status: RecordStatus, now: float,
                       **more: Any) -> None:
        """The status changes of the compensation path, which are legal by construction
        (checked here once, cheaply): store first, then the in-memory record, then the event."""
        previous = rec.status
        if (id(previous), id(status)) not in _LEGAL:
            raise RuntimeError(f"illegal status change of {self.run_id}#{rec.seq} ({rec.tool}): "
                               f"{previous} -> {status}")
        if not self._shared:
            self.engine.store.update_record(self.run_id, rec.seq, status=status, updated_at=now,
                                            **more)
        rec.status = status
        rec.updated_at = now
        for k, v in more.items():
            setattr(rec, k, v)
        if self._info or status in _BAD or self.engine._notify_records:
            self._emit_record(rec, previous)

    def _emit_record(self, rec: Record, previous: RecordStatus | None) -> None:
        status = rec.status
        events = self._events if self._events is not None else self._logger()
        bad = status in _BAD
        if bad or self._info:  # an info event nobody receives is not built
            (events.warning if bad else events.info)(
                "rac.record", seq=rec.seq, tool=rec.tool, kind=str.__str__(rec.kind),
                status=str.__str__(status), agent_id=rec.agent_id, attempts=rec.attempts,
                error=rec.error)
        if self.engine._notify_records:
            self.engine.hook.rac_record_written(record=rec.copy(),
                                                previous=str(previous) if previous else None)

    # -- the call flow ---------------------------------------------------------------------------
    def _begin(self, tool: str, args: dict[str, Any], agent_id: str | None, scope: str,
               depends_on: Iterable[int], alternative_of: int | None
               ) -> tuple[Record, bool, dict[str, Any]]:
        """Write the intent record of a call (the first half of the write-ahead log). Returns
        it, True if the call is refused (``no_compensation="refuse"``), and RAC's own copy of
        the arguments."""
        engine = self.engine
        read_only = tool in engine.registry.read_only
        now = engine.clock.now()
        # RAC keeps the call's arguments (to map a compensation from) and the log stores a
        # redacted copy; when nothing needs redacting one copy serves both (neither changes).
        raw_args = plain_copy(args)
        if raw_args is None:
            stored_args = store_value(args, engine.max_value_chars)
            raw_args = dict(args)
        else:
            stored_args = raw_args
        self._lock.acquire()  # not `with`: measurably cheaper on this path
        try:
            if self._active_rollbacks or self._doomed or self.status is not _R_RUNNING:
                self._begin_unusual(scope)
            seq = next(self._seq)
            deps = self._deps.dependencies(args) or _NO_DEPS
            if depends_on:
                deps = sorted(set(deps) | set(depends_on))
            # Record(run_id, seq, tool, ACTION, PENDING, ...), field by field: every call
            # writes one, and the constructor's frame and argument passing cost a few percent
            rec = _new(Record)
            rec.run_id = self.run_id
            rec.seq = seq
            rec.tool = tool
            rec.kind = _ACTION
            rec.status = _PENDING
            rec.agent_id = agent_id or self.agent_id
            rec.scope = scope
            rec.args = stored_args
            rec.result = None
            rec.error = None
            rec.attempts = 1
            rec.idempotency_key = f"{self._key_prefix}a{seq:08x}"
            rec.depends_on = deps
            rec.compensates = None
            rec.alternative_of = alternative_of
            rec.compensable = True
            rec.read_only = read_only
            rec.note = None
            rec.created_at = now
            rec.updated_at = now
            rec.effect = ""
            rec.undo = None
            if self._active_rollbacks:
                for active in self._active_rollbacks:
                    if _in_scope(scope, active):  # a rollback of this scope is under way
                        self._doomed[seq] = active
                        break
            refused = False
            if not read_only and (tool not in engine.registry.pairs if engine._pairs_direct
                                  else engine.resolve_compensation(rec) is None):
                refused = self._uncompensable(rec)
            if not self._shared:  # _append, spelled out (a shared table is the log's)
                engine.store.append(rec)
            self._records[seq] = rec
            if self._info or refused or engine._notify_records:
                self._emit_record(rec, None)
            if raw_args is not stored_args:  # else the log's copy is RAC's (see _compensate)
                self._raw[seq] = (raw_args, None)
            if not refused:
                self._in_flight.add(seq)
        finally:
            self._lock.release()
        return rec, refused, raw_args

    def _begin_unusual(self, scope: str) -> None:
        """Before a call starts in a run that is not simply running: an idle run (completed,
        or rolled back with nothing left in flight) becomes running again."""
        if self.status in _IDLE and not self._doomed:
            self._set_status(_R_RUNNING)

    def _uncompensable(self, rec: Record) -> bool:
        """Apply the ``no_compensation`` policy to a side-effecting call with no compensator;
        True if the call is refused."""
        policy = self.engine.no_compensation
        if policy == "assume_read_only":
            rec.read_only = True
            return False
        rec.compensable = False
        if policy == "refuse":
            rec.attempts = 0
            rec.status = _FAILED
            rec.error = (f"refused: {rec.tool} has side effects and no compensation is "
                         "declared (no_compensation='refuse')")
            return True
        self._event("rac.no_compensation", level="warning", seq=rec.seq, tool=rec.tool,
                    status="completed_uncompensable")
        return False

    def _call_args(self, tool: str, args: dict[str, Any], rec: Record) -> dict[str, Any]:
        t = self.tool(tool)
        if t is not None and t.params and "idempotency_key" in t.params \
                and "idempotency_key" not in args:
            return {**args, "idempotency_key": rec.idempotency_key}
        return args

    def _attempts(self, tool: str, rec: Record, invoke: Invoke, policy: RetryPolicy,
                  *, shielded: bool = False, first: tuple[bool, Any] | None = None
                  ) -> Flow[tuple[bool, Any, Any, BaseException | None, Classification | None]]:
        """Call until success, a permanent failure, or the attempts run out. Returns
        ``(ok, raw, value, error, classification)``. ``first`` is the outcome of a first attempt
        already made (by the fast path of :meth:`execute`)."""
        engine = self.engine
        attempt = 0
        while True:
            attempt += 1
            if attempt == 1:
                rec.attempts = 1
            else:
                self._update(rec, attempts=attempt)
            if first is not None:
                (ok, raw), first = first, None
            else:
                try:
                    ok, raw = yield invoke
                except BaseException as e:
                    self._interrupted(rec, e)
                    raise
            value = None
            if ok:
                value = raw
                if engine._normalizes:
                    value = engine.normalize_result(tool, raw)
                err = engine.detect_result_error(tool, value)
                if err is None:
                    return True, raw, value, None, None
            else:
                err = raw
            cls = engine.hook.rac_classify_error(tool=tool, error=err)
            if cls is None:
                cls = Classification(ErrorKind.PERMANENT)
            if cls.transient and attempt < policy.max_attempts:
                delay = policy.delay(attempt, retry_after=cls.retry_after, rng=self._rng)
                self._event("rac.retry", seq=rec.seq, tool=tool, status="retrying",
                            attempt=attempt, delay=delay, error=_error_text(err))
                try:
                    yield Sleep(delay, shielded)
                except BaseException as e:
                    self._interrupted(rec, e)
                    raise
                continue
            return False, raw if ok else None, value, err, cls

    def _interrupted(self, rec: Record, exc: BaseException) -> None:
        """A BaseException or a framework control-flow exception stopped the call: the record
        stays pending (in doubt) unless the adapter declared the exception a pass-through."""
        with self._lock:
            self._in_flight.discard(rec.seq)
            if isinstance(exc, self.engine.passthrough):
                if rec.status is _PENDING:
                    self._update(rec, status=_FAILED,
                                 error=f"interrupted by {type(exc).__name__}; not a failure",
                                 note="passthrough")
            elif rec.status is _PENDING:  # in doubt: only recovery may settle it
                self._in_doubt = self._in_doubt | {rec.seq}
            self._settle_doomed(rec.seq)

    def _call_flow(self, name: str, args: dict[str, Any], agent_id: str | None,
                   depends_on: Iterable[int], call: Invoker,
                   acall: AsyncInvoker | None, *, scope: str | None = None,
                   resume: tuple[Record, tuple[bool, Any]] | None = None) -> Flow[CallOutcome]:
        """The whole life of one call: attempts, alternatives, and the rollback if all fail.
        ``resume`` continues a call whose record was begun and first attempt made already."""
        engine = self.engine
        scope = self.current_scope() if scope is None else scope
        first: _Failure | None = None
        tried: list[AttemptedAlternative] = []
        first_seq: int | None = None
        for tool in [name, *engine.registry.alternatives.get(name, ())]:
            first_attempt: tuple[bool, Any] | None = None
            if resume is not None:
                (rec, first_attempt), refused, resume = resume, False, None
                own_args = self._raw[rec.seq][0] if rec.seq in self._raw else rec.args
            else:
                rec, refused, own_args = self._begin(tool, args, agent_id, scope, depends_on,
                                                     first_seq)
            if first_seq is None:
                first_seq = rec.seq
            if refused:
                return CallOutcome(False, tool, rec.seq, refused=True, message=rec.error,
                                   error=NoCompensationError(rec.error or ""))
            call_args = self._call_args(tool, args, rec)
            invoke = Invoke(functools.partial(call, tool),
                            functools.partial(acall, tool) if acall else None, call_args)
            ok, raw, value, err, cls = yield from self._attempts(tool, rec, invoke, engine.retry,
                                                                 first=first_attempt)
            if ok:
                return (yield from self._complete(rec, own_args, raw, value))
            assert err is not None and cls is not None
            with self._lock:
                self._in_flight.discard(rec.seq)
                self._update(rec, status=_FAILED, error=_error_text(err),
                             attempts=rec.attempts,
                             result=store_value(value, engine.max_value_chars))
                doomed = self._settle_doomed(rec.seq)
            if doomed:
                # The scope was rolled back while this call ran: no alternative, no second
                # rollback; the caller is told the scope is already undone.
                return CallOutcome(False, tool, rec.seq, error=err, undone=True, message=(
                    f"RAC: {tool} failed ({_error_text(err)}) after this run was rolled back; "
                    "nothing of it is live. Replan from a clean state."))
            if first is None:
                first = _Failure(tool, rec.seq, err, cls.kind, rec.attempts)
            else:
                tried.append(AttemptedAlternative(tool=tool, error=_error_text(err),
                                                  attempts=rec.attempts))
        assert first is not None
        report = yield from self._rollback_flow(scope, reason=f"{first.tool} failed",
                                                failure=first, alternatives=tried,
                                                sync=acall is None)
        return CallOutcome(False, first.tool, first.seq, error=first.error, report=report,
                           message=engine.render(report))

    def _succeeded(self, rec: Record, args: dict[str, Any], value: Any) -> bool:
        """Record a success; True if the scope was rolled back while the call ran (doomed)."""
        engine = self.engine
        result = plain_copy(value)
        if result is None:  # the log holds a redacted copy: RAC keeps the value itself
            result = store_value(value, engine.max_value_chars)
            keep = True
        else:
            keep = args is not rec.args
        self._lock.acquire()  # not `with`: measurably cheaper on this path
        try:
            self._in_flight.discard(rec.seq)
            if rec.status is not _PENDING:
                raise RuntimeError(f"illegal status change of {self.run_id}#{rec.seq} "
                                   f"({rec.tool}): {rec.status} -> completed")
            # The common case of _update, spelled out: it is on every call's path.
            now = engine.clock.now()
            if not self._shared:
                engine.store.update_record(self.run_id, rec.seq, status=_COMPLETED,
                                           attempts=rec.attempts, result=result, updated_at=now)
            rec.status = _COMPLETED
            rec.result = result
            rec.updated_at = now
            if self._info or engine._notify_records:
                self._emit_record(rec, _PENDING)
            if keep:
                self._raw[rec.seq] = (args, value)
            if not rec.read_only:  # arguments the log copied as they were are flat
                self._deps.add_result(rec.seq, value, args, args is rec.args)
            if rec.seq in self._doomed:
                self._claimed.add(rec.seq)  # its undo is ours: no rollback may take it
                return True
            return False
        finally:
            self._lock.release()

    def _complete(self, rec: Record, args: dict[str, Any], raw: Any,
                  value: Any) -> Flow[CallOutcome]:
        if not self._succeeded(rec, args, value):
            return CallOutcome(True, rec.tool, rec.seq, result=raw, value=value)
        return (yield from self._undo_doomed(rec, raw, value))

    def _undo_doomed(self, rec: Record, raw: Any, value: Any) -> Flow[CallOutcome]:
        # The scope was rolled back while this call was running: undo it now.
        try:
            undone = yield from self._compensate_flow(rec)
        finally:
            with self._lock:
                self._claimed.discard(rec.seq)
                self._settle_doomed(rec.seq)
        msg = (f"RAC: {rec.tool} completed after this run was rolled back, so it was undone "
               f"too ({undone[0]}). Replan from a clean state.")
        return CallOutcome(False, rec.tool, rec.seq, result=raw, value=value, undone=True,
                           message=msg)

    def _settle_doomed(self, seq: int) -> bool:
        """Forget that ``seq`` was doomed (its call ended); once no doomed call or rollback is
        left, give the run its final status. Call with the lock held. True if it was doomed."""
        scope = self._doomed.pop(seq, None)
        if scope is None:
            return False
        if not self._active_rollbacks and self.status is _R_COMPENSATING:
            self._set_status(self._run_status_for(scope))
        return True

    def _run_status_for(self, scope: str) -> RunStatus:
        """The run's status once a rollback of ``scope`` is over: a nested scope that rolled
        back cleanly leaves its parent running."""
        status = self._status_after_rollback(scope)
        return _R_RUNNING if scope != "0" and status is _R_COMPENSATED else status

    # -- rollback --------------------------------------------------------------------------------
    def _rollback_flow(self, scope: str, *, reason: str, failure: _Failure | None = None,
                       alternatives: list[AttemptedAlternative] | None = None,
                       sync: bool = False) -> Flow[RecoveryReport]:
        """Roll back ``scope``; ``sync`` when driven by :func:`drive_sync` (see
        :meth:`_compensate_flow`)."""
        engine = self.engine
        with self._lock:
            self._set_status(_R_COMPENSATING)
            self._active_rollbacks.append(scope)
            whole, claimed, in_flight = scope == "0", self._claimed, self._in_flight
            candidates = [r for r in self._records.values()
                          if r.kind is _ACTION and not r.read_only
                          and (whole or _in_scope(r.scope, scope)) and r.seq not in claimed
                          and (r.status is _COMPLETED
                               or (r.status is _PENDING and r.seq not in in_flight))]
            claimed.update([r.seq for r in candidates])
            running = [r for r in self._records.values()
                       if r.seq in in_flight and (whole or _in_scope(r.scope, scope))] \
                if in_flight else []
            for r in running:
                self._doomed.setdefault(r.seq, scope)
        try:
            fields = yield from self._undo_all(scope, candidates, running, reason, failure,
                                               alternatives, sync)
        finally:
            with self._lock:
                self._active_rollbacks.remove(scope)
                self._claimed.difference_update(r.seq for r in candidates)
        with self._lock:
            status = self._status_after_rollback(scope)
            # built once, complete: setting fields of a pydantic model one by one costs more
            report = RecoveryReport(**fields, status=status)
            self._set_status(_R_RUNNING if scope != "0" and status is _R_COMPENSATED
                             else status)
        self.last_report = report
        self._event("rac.rollback", level="info" if report.clean else "warning", scope=scope,
                    status=str(report.status), compensated=len(report.compensated),
                    left_live=len(report.left_live))
        if engine._notify_rollbacks:
            engine.hook.rac_rollback_finished(run_id=self.run_id, scope=scope, report=report)
        return report

    def _undo_all(self, scope: str, candidates: list[Record], running: list[Record],
                  reason: str, failure: _Failure | None,
                  alternatives: list[AttemptedAlternative] | None, sync: bool
                  ) -> Flow[dict[str, Any]]:
        """Compensate the claimed ``candidates`` in rollback order; the fields of the report
        of it (all but its status)."""
        engine = self.engine
        order = rollback_order(candidates)
        done: list[UndoneAction] = []
        failed: list[UndoneAction] = []
        held: list[UndoneAction] = []
        not_undoable: list[UndoneAction] = []
        blocked: list[UndoneAction] = []
        fields: dict[str, Any] = {
            "run_id": self.run_id, "scope": scope, "reason": reason,
            "alternatives": alternatives or [], "compensated": done,
            "compensation_failed": failed, "held": held, "not_undoable": not_undoable,
            "blocked": blocked,
            "in_flight": [UndoneAction(r.seq, r.tool, ref=_ref(r)) for r in running]}
        if failure is not None:
            fields.update(failed_tool=failure.tool, failed_seq=failure.seq,
                          error=_error_text(failure.error), error_kind=str(failure.kind),
                          attempts=failure.attempts)
        if self._info:
            self._event("rac.rollback", scope=scope, status="started",
                        seqs=[r.seq for r in order], reason=reason)
        if engine._notify_rollbacks:
            engine.hook.rac_rollback_started(run_id=self.run_id, scope=scope,
                                             seqs=[r.seq for r in order], reason=reason)
        dependents = dependents_of(order)
        live: set[int] = set()
        compensated: list[int] = []
        plans: _Plans = {}
        for rec in order:
            blockers = [d for d in dependents.get(rec.seq, ()) if d in live] \
                if dependents else ()
            if blockers:
                live.add(rec.seq)
                b = self._records[blockers[0]]
                blocked.append(UndoneAction(
                    rec.seq, rec.tool, ref=_ref(rec),
                    error=f"{b.tool} (#{b.seq}) depends on it and is still live"))
                continue
            if not rec.compensable:
                not_undoable.append(UndoneAction(rec.seq, rec.tool, ref=_ref(rec)))
                continue
            if sync:
                inline = self._compensate_now(rec, plans)
                if type(inline) is tuple:
                    outcome, compensator, error = inline
                else:
                    assert isinstance(inline, _Retry)
                    outcome, compensator, error = yield from self._resume_compensation(inline)
            else:
                outcome, compensator, error = yield from self._compensate_flow(rec, plans)
            action = UndoneAction(rec.seq, rec.tool, compensator, error, _ref(rec))
            if outcome == "compensated":
                done.append(action)
                compensated.append(rec.seq)
            elif outcome == "held":
                live.add(rec.seq)
                held.append(action)
            elif outcome == "none":
                not_undoable.append(action)
            else:
                live.add(rec.seq)
                failed.append(action)
        with self._lock:
            self._deps.forget(compensated)
        return fields

    def _status_after_rollback(self, scope: str) -> RunStatus:
        """COMPENSATING while a doomed call of ``scope`` still runs; NEEDS_ATTENTION while any
        side effect of ``scope`` is left live or in doubt; else COMPENSATED."""
        whole = scope == "0"
        doomed, claimed, in_flight = self._doomed, self._claimed, self._in_flight
        if not doomed and not claimed:  # nothing can still be compensating: the common case
            for r in self._records.values():
                if r.kind is _ACTION and not r.read_only and (whole or _in_scope(r.scope, scope)):
                    st = r.status
                    if st is not _COMPENSATED and st is not _FAILED and (
                            st is not _PENDING or r.seq not in in_flight):
                        return _R_NEEDS_ATTENTION
            return _R_COMPENSATED
        attention = False
        for r in self._records.values():
            if r.kind is not _ACTION or r.read_only or not (whole or _in_scope(r.scope, scope)):
                continue
            seq = r.seq
            if seq in doomed or seq in claimed:
                return _R_COMPENSATING
            if not attention:
                st = r.status
                attention = (st is _COMPLETED or st is _COMPENSATION_FAILED
                             or st is _COMPENSATING or (st is _PENDING and seq not in in_flight))
        return _R_NEEDS_ATTENTION if attention else _R_COMPENSATED

    def _compensate_flow(self, rec: Record, plans: _Plans | None = None
                         ) -> Flow[tuple[str, str | None, str | None]]:
        """Undo one action. Returns (outcome, compensator, error) where outcome is
        'compensated', 'failed', 'held' or 'none' (no compensator)."""
        prep = self._prepare_compensation(rec, plans)
        if type(prep) is tuple:
            return prep
        assert isinstance(prep, _Prepared)
        return (yield from self._resume_compensation(_Retry(prep, None)))

    def _compensate_now(self, rec: Record, plans: _Plans
                        ) -> tuple[str, str | None, str | None] | _Retry:
        """:meth:`_compensate_flow` for a rollback driven on this thread: the first attempt of
        a compensator with a blocking form is made right here, which is what the driver would
        do with the :class:`Invoke` effect, minus the round trip. Returns the outcome, or a
        :class:`_Retry` for the flow to go on with (the first attempt failed, or the
        compensator can only be awaited)."""
        prep = self._prepare_compensation(rec, plans)
        if type(prep) is tuple:
            return prep
        assert isinstance(prep, _Prepared)
        call = prep.tool.call
        if call is None:
            return _Retry(prep, None)
        try:
            value = call(prep.args)
        except self.engine.passthrough as e:
            self._interrupted(prep.crec, e)
            raise
        except Exception as e:  # noqa: BLE001 - a failure is data for the flow
            return _Retry(prep, (False, e))
        except BaseException as e:
            self._interrupted(prep.crec, e)
            raise
        done = self._compensated(prep, value)
        return done if done is not None else _Retry(prep, (True, value))

    def _resume_compensation(self, retry: _Retry) -> Flow[tuple[str, str | None, str | None]]:
        """Continue a compensation whose intent is written: make its first attempt through the
        driver if none was made yet, then retry as its policy says."""
        first = retry.first
        if first is None:  # only awaitable: make the first attempt through the driver
            try:
                first = yield retry.prep.invoke()
            except BaseException as e:
                self._interrupted(retry.prep.crec, e)
                raise
            if first[0]:
                done = self._compensated(retry.prep, first[1])
                if done is not None:
                    return done
        return (yield from self._compensation_retries(retry.prep, first))

    def _plan(self, rec: Record, plans: _Plans | None) -> _Plan:
        """How ``rec`` is undone: its compensation, the compensating tool, whether the
        mapped arguments are fit for the log as they are (see :func:`copies_fields`), and
        the fields to copy into them when they can be looked up directly (see
        :func:`field_plan`). Kept in ``plans`` per tool for one rollback while the registry
        alone resolves compensations."""
        engine = self.engine
        if plans is not None and engine._pairs_direct:
            known = plans.get(rec.tool)
            if known is not None:
                return known
        comp = engine.registry.pairs.get(rec.tool) if engine._pairs_direct \
            else engine.resolve_compensation(rec)
        if comp is None:
            plan: _Plan = (None, None, False, None)
        else:
            tool = self._tools.get(comp.tool) or engine.tools.get(comp.tool)
            direct = engine._map_direct
            plan = (comp, tool, direct and copies_fields(comp.args),
                    field_plan(comp, tool.params, tool.required)
                    if direct and tool is not None else None)
        if plans is not None and engine._pairs_direct:
            plans[rec.tool] = plan
        return plan

    def _prepare_compensation(self, rec: Record, plans: _Plans | None = None
                              ) -> _Prepared | tuple[str, str | None, str | None]:
        """Resolve, map and approve the compensation of ``rec`` and write its intent record;
        the final outcome instead when there is nothing to call (see :meth:`_compensate_flow`)."""
        engine = self.engine
        comp, tool, flat, fields = self._plan(rec, plans)
        if comp is None:
            return "none", None, None
        key = f"{self._key_prefix}c{rec.seq:08x}"  # == idempotency_key(run, seq, "compensate")
        raw = self._raw.get(rec.seq)
        try:
            if tool is None:
                raise CompensationMappingError(
                    f"compensating tool {comp.tool!r} is not available to this run: register "
                    f"it with rac.RAC(tools=[...]) or give it to the agent")
            if raw is None:  # the log's copies are RAC's (see _begin and _succeeded)
                args, result = rec.args, rec.result
            else:
                args, result = raw
            cargs: dict[str, Any] | None = None
            if fields is not None:  # declared one-field paths, looked up here
                cargs = {}
                for param, from_result, field in fields:
                    source = result if from_result else args
                    if type(source) is not dict or field not in source:
                        cargs = None  # let map_positional walk it, or say what is missing
                        break
                    cargs[param] = source[field]
                if cargs is not None and tool.takes_key and IDEMPOTENCY_PARAM not in cargs:
                    cargs[IDEMPOTENCY_PARAM] = key
            if cargs is None:
                if engine._map_direct:
                    cargs = map_positional(comp, rec.tool, args, result, tool.params,
                                           tool.required, key)
                else:
                    cargs = engine.map_compensation_args(
                        engine=engine, record=rec, compensation=comp, tool=tool, args=args,
                        result=result, idempotency_key=key)
            if cargs is None:
                raise CompensationMappingError(f"no plugin mapped the arguments of {comp.tool}")
            approved = engine._auto_approve or engine.approve_compensation(
                engine=engine, record=rec, compensation=comp, args=cargs)
        except Exception as e:  # noqa: BLE001 - recorded as a dead letter, the rollback goes on
            msg = str(e) if isinstance(e, CompensationMappingError) else (
                f"preparing {comp.tool} failed: {type(e).__name__}: {_error_text(e)}")
            if rec.status is _PENDING:
                msg += " (the call is in doubt: it may or may not have taken effect)"
            with self._lock:
                self._update(rec, status=_COMPENSATION_FAILED, error=msg)
            return "failed", comp.tool, msg
        if not approved:
            with self._lock:
                self._update(rec, note=f"compensation via {comp.tool} held for approval")
            self._event("rac.compensation_held", level="warning", seq=rec.seq, tool=rec.tool,
                        status="held")
            return "held", comp.tool, "held for approval"
        assert tool is not None
        stored: Any
        if raw is None and flat:
            # fields copied from the log's flat, plain dicts: already fit for the log
            stored = dict(cargs)
        else:
            stored = plain_copy(cargs)
            if stored is None:
                stored = store_value(cargs, engine.max_value_chars)
        now = engine.clock.now()
        self._lock.acquire()  # not `with`: measurably cheaper on this path
        try:
            quiet = self._shared and not (self._info or engine._notify_records)
            if quiet and rec.status is _COMPLETED:  # _set_status_of, spelled out
                rec.status = _COMPENSATING
                rec.updated_at = now
            else:
                self._set_status_of(rec, _COMPENSATING, now)
            crec = Record(self.run_id, next(self._seq), comp.tool, _COMPENSATION,
                          _PENDING, rec.agent_id, rec.scope, stored, None, None, 1, key, _NO_DEPS,
                          rec.seq, None, True, False, None, now, now)
            if quiet:
                self._records[crec.seq] = crec  # _append, spelled out
            else:
                self._append(crec)
        finally:
            self._lock.release()
        return _Prepared(rec, comp, tool, cargs, crec)

    def _compensated(self, prep: _Prepared, value: Any, *, check: bool = True
                     ) -> tuple[str, str | None, None] | None:
        """Write the outcome of a compensation that returned ``value``: it completed, its
        action is compensated. With ``check``, first look for an error in the value (None if
        there is one: nothing is written)."""
        engine = self.engine
        comp_tool = prep.comp.tool
        if check:
            if engine._normalizes:
                value = engine.normalize_result(comp_tool, value)
            if (default_detect_result_error(value) if engine._detect_direct
                    else engine.detect_result_error(comp_tool, value)) is not None:
                return None
        result = plain_copy(value)
        if result is None:
            result = store_value(value, engine.max_value_chars)
        crec, rec = prep.crec, prep.rec
        self._lock.acquire()  # not `with`: measurably cheaper on this path
        try:
            now = engine.clock.now()
            if self._shared and crec.status is _PENDING and rec.status is _COMPENSATING \
                    and not (self._info or engine._notify_records):
                # _set_status_of twice, spelled out for the in-memory log (the transitions
                # are the legal pending->completed and compensating->compensated)
                crec.status = _COMPLETED
                crec.result = result
                crec.updated_at = now
                rec.status = _COMPENSATED
                rec.updated_at = now
            else:
                self._set_status_of(crec, _COMPLETED, now, attempts=crec.attempts,
                                    result=result)
                self._set_status_of(rec, _COMPENSATED, now)
        finally:
            self._lock.release()
        return "compensated", comp_tool, None

    def _compensation_retries(self, prep: _Prepared, first: tuple[bool, Any]
                              ) -> Flow[tuple[str, str | None, str | None]]:
        """Go on from a first attempt that failed: retries under the compensation's policy,
        then the outcome (a dead letter when they are exhausted)."""
        engine = self.engine
        comp, crec, rec = prep.comp, prep.crec, prep.rec
        policy = comp.retry or engine.compensation_retry
        ok, _raw, value, err, _cls = yield from self._attempts(
            comp.tool, crec, prep.invoke(), policy, shielded=True, first=first)
        if ok:
            done = self._compensated(prep, value, check=False)
            assert done is not None
            return done
        assert err is not None
        msg = f"{comp.tool} failed after {crec.attempts} attempt(s): {_error_text(err)}"
        with self._lock:
            self._update(crec, status=_FAILED, error=_error_text(err), attempts=crec.attempts,
                         result=store_value(value, engine.max_value_chars))
            self._update(rec, status=_COMPENSATION_FAILED, error=msg)
        return "failed", comp.tool, msg

    # -- public entry points -----------------------------------------------------------------
    def execute(self, name: str, args: dict[str, Any], invoke: Invoker, *,
                agent_id: str | None = None, depends_on: Iterable[int] = ()) -> CallOutcome:
        """Run one tool call under RAC (the adapter API, blocking).

        ``invoke(tool_name, args)`` performs a call of the named tool (the requested one or an
        alternative) through the framework and returns its raw result or raises.
        """
        if not self._started:
            self._start()
        engine = self.engine
        if self._nested:
            cur = _CURRENT_SCOPE.get()
            scope = cur[1] if cur is not None and cur[0] is self else "0"
        else:  # no nested scope was ever opened: the run itself is the scope
            scope = "0"
        # Fast path: the first attempt runs inline; anything but a clean success continues in
        # the shared flow (retries, alternatives, rollback) from where it stands.
        rec, refused, own_args = self._begin(name, args, agent_id, scope, depends_on, None)
        if refused:
            return CallOutcome(False, name, rec.seq, refused=True, message=rec.error,
                               error=NoCompensationError(rec.error or ""))
        if type(args) is not dict:
            args = dict(args)
        t = self._tools.get(name) or engine.tools.get(name)
        call_args = self._call_args(name, args, rec) if t is not None and t.takes_key else args
        try:
            raw = invoke(name, call_args)
        except engine.passthrough as e:
            self._interrupted(rec, e)
            raise
        except Exception as e:  # noqa: BLE001 - a failure is data for the flow
            first: tuple[bool, Any] = (False, e)
        except BaseException as e:
            self._interrupted(rec, e)
            raise
        else:
            value = raw
            if engine._normalizes:
                value = engine.normalize_result(name, raw)
            err = default_detect_result_error(value) if engine._detect_direct \
                else engine.detect_result_error(name, value)
            if err is None and not self._succeeded(rec, own_args, value):
                out = _new(CallOutcome)  # CallOutcome(True, name, seq, raw, value), frame-free
                out.ok = True
                out.tool = name
                out.seq = rec.seq
                out.result = raw
                out.value = value
                return out
            if rec.status is _COMPLETED:  # doomed while running: undo it
                return drive_sync(self._undo_doomed(rec, raw, value), engine.clock,
                                  engine.passthrough)
            first = (True, raw)
        return drive_sync(self._call_flow(name, args, agent_id, depends_on, invoke, None,
                                          scope=scope, resume=(rec, first)),
                          engine.clock, engine.passthrough)

    async def aexecute(self, name: str, args: dict[str, Any],
                       ainvoke: AsyncInvoker, *, agent_id: str | None = None,
                       depends_on: Iterable[int] = ()) -> CallOutcome:
        """Run one tool call under RAC without blocking the event loop (the adapter API)."""
        self._start()

        def sync_unused(tool: str, a: dict[str, Any]) -> Any:  # pragma: no cover
            raise RuntimeError("the async path never calls tools synchronously")

        return await drive_async(
            self._call_flow(name, dict(args), agent_id, depends_on, sync_unused, ainvoke),
            self.engine.clock, self.engine.passthrough)

    def _resolve(self, tool: str | Tool | Callable[..., Any]) -> Tool:
        if isinstance(tool, str):
            found = self.tool(tool)
            if found is None:
                raise KeyError(f"unknown tool {tool!r}: pass the function, or register it with "
                               f"rac.RAC(tools=[...]) or run.add_tools([...])")
            return found
        t = self.engine.adapt_tool(tool)
        if self._tools.get(t.name) is not t:
            self.add_tools([t])
        return t

    def call(self, tool: str | Tool | Callable[..., Any], /, **args: Any) -> Any:
        """Call a tool under RAC and return its result.

        Raises :class:`rac.ToolCallFailed` (carrying the report) after a rollback, and
        :class:`rac.NoCompensationError` when the call was refused.
        """
        t = self._resolve(tool)
        outcome = self.execute(t.name, args, lambda name, a: self._resolve(name).invoke(a))
        return _unwrap(outcome, self.engine)

    async def acall(self, tool: str | Tool | Callable[..., Any], /, **args: Any) -> Any:
        """Async :meth:`call`."""
        t = self._resolve(tool)

        async def ainvoke(name: str, a: dict[str, Any]) -> Any:
            return await self._resolve(name).ainvoke(a)

        outcome = await self.aexecute(t.name, args, ainvoke)
        return _unwrap(outcome, self.engine)

    def rollback(self, reason: str = "rolled back on request", *,
                 scope: str | None = None) -> RecoveryReport:
        """Compensate every completed side effect of ``scope`` (default: the current one)."""
        self._start()
        return drive_sync(self._rollback_flow(scope or self.current_scope(), reason=reason,
                                              sync=True),
                          self.engine.clock, self.engine.passthrough)

    async def arollback(self, reason: str = "rolled back on request", *,
                        scope: str | None = None) -> RecoveryReport:
        """Async :meth:`rollback`; a cancellation waits for the rollback to finish."""
        self._start()
        return await drive_async(
            self._rollback_flow(scope or self.current_scope(), reason=reason),
            self.engine.clock, self.engine.passthrough)

    # -- rebuilding from the log (crash recovery) --------------------------------------------
    @classmethod
    def from_log(cls, engine: RAC, info: RunInfo, records: Iterable[Record]) -> Run:
        """A run rebuilt from its log records (see :mod:`rac.recovery`): already started, with
        its records, status and next sequence number; no call is in flight."""
        run = cls(engine, run_id=info.run_id, agent_id=info.agent_id)
        run.status = info.status
        run._started = True
        run._shared = False  # its records are copies read from the log
        run._records = {}
        for rec in records:
            run._records[rec.seq] = rec
            if (rec.kind is _ACTION and rec.status is _COMPLETED
                    and not rec.read_only):
                run._deps.add_result(rec.seq, rec.result, rec.args)
        run._seq = itertools.count(max(run._records, default=0) + 1)
        return run


def _unwrap(outcome: CallOutcome, engine: RAC) -> Any:
    if outcome.ok:
        return outcome.result
    if outcome.refused:
        raise NoCompensationError(outcome.message or "refused")
    if outcome.report is not None:
        raise ToolCallFailed(outcome.report, outcome.message)
    raise ToolCallFailed(
        RecoveryReport(run_id="", failed_tool=outcome.tool, reason=outcome.message or ""),
        outcome.message)


class Scope:
    """A nested transaction scope of a run (see :meth:`Run.scope`)."""

    def __init__(self, run: Run, scope_id: str) -> None:
        self.run = run
        self.scope_id = scope_id
        self._token: Token[tuple[Run, str] | None] | None = None

    def __enter__(self) -> Scope:
        self.run._nested = True
        self._token = _CURRENT_SCOPE.set((self.run, self.scope_id))
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            if exc is not None and not isinstance(exc, ToolCallFailed):
                self.run.rollback(reason=f"scope aborted by {type(exc).__name__}",
                                  scope=self.scope_id)
        finally:
            if self._token is not None:
                _CURRENT_SCOPE.reset(self._token)

    async def __aenter__(self) -> Scope:
        return self.__enter__()

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        try:
            if exc is not None and not isinstance(exc, ToolCallFailed):
                await self.run.arollback(reason=f"scope aborted by {type(exc).__name__}",
                                         scope=self.scope_id)
        finally:
            if self._token is not None:
                _CURRENT_SCOPE.reset(self._token)


def current_run() -> Run | None:
    """The run open in this context (thread or task), if any."""
    return _CURRENT_RUN.get()
