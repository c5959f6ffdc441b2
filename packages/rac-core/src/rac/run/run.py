"""The :class:`Run`: one transaction scope of an agent, the state its calls and rollbacks
share, and its public entry points. The logic lives beside it: :mod:`rac.run.calls` (a call's
life), :mod:`rac.run.rollback` and :mod:`rac.run.planning` (undoing a scope),
:mod:`rac.run.compensation` (undoing one action), :mod:`rac.run.log` (writes to the log)."""

from __future__ import annotations

import asyncio
import random
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping
from contextvars import Token
from types import TracebackType
from typing import TYPE_CHECKING, Any

from rac.effects import drive_async, drive_sync
from rac.errors import ConfigurationError, ToolCallFailed
from rac.lifecycle import ROLLED_BACK, may_be_live
from rac.models import Record, RecordKind, RecordStatus, RunInfo, RunStatus
from rac.report import RecoveryReport
from rac.run.calls import call_flow
from rac.run.compensation import undo_sources
from rac.run.context import CURRENT_RUN, CURRENT_SCOPE, Scope, current_scope_of
from rac.run.fast import execute_fast
from rac.run.keys import key_prefix, new_run_id
from rac.run.log import RunLog
from rac.run.outcome import CallOutcome, unwrap
from rac.run.planning import REQUEUED, UNDOABLE
from rac.run.reconcile import Reconciled, settle
from rac.run.state import RunState
from rac.run.values import error_text, stored_copy, undo_part
from rac.serialize import plain_copy
from rac.tools import Tool, ToolSet

if TYPE_CHECKING:
    from rac.effects import Flow
    from rac.engine import RAC
    from rac.registry import Lookup

Invoker = Callable[[str, dict[str, Any]], Any]
AsyncInvoker = Callable[[str, dict[str, Any]], Awaitable[Any]]
R = RecordStatus
S = RunStatus
_COMPLETED = R.COMPLETED  # (a member off its class costs a lookup at each use)


class Run:
    """One transaction scope: the calls an agent made in one invocation, and their log.

    Open it with ``with engine.run() as run`` or ``async with engine.run() as run``. Call tools
    with :meth:`call` / :meth:`acall`, or from an adapter with :meth:`execute` /
    :meth:`aexecute`. Leaving the block normally marks the run completed; leaving it with an
    exception rolls the run back and lets the exception go on.

    The run is the facade of its parts: ``log`` (its writes, :class:`rac.run.log.RunLog`) and
    ``state`` (what this process knows of it beyond the log, :class:`rac.run.state.RunState`,
    changed only through its event methods), both used by the modules of :mod:`rac.run` under
    ``lock``. The bookkeeping it exposes (:attr:`busy`, :attr:`in_flight`,
    :attr:`rollbacks_started`, :attr:`last_report`, :attr:`live`) is read-only.
    """

    def __init__(self, engine: RAC, *, run_id: str | None = None, agent_id: str | None = None,
                 tools: Iterable[Tool | Callable[..., Any]] | ToolSet | None = None) -> None:
        self.engine = engine
        self.run_id = run_id or new_run_id()
        #: what stands for the run in its steps' idempotency keys (see :mod:`rac.run.keys`)
        self.key_prefix = key_prefix(self.run_id)
        self.agent_id = agent_id or engine.agent_id
        self.lock = threading.RLock()
        self.log = RunLog(engine, self.run_id, self.agent_id, self.lock)
        self._state = RunState()
        self._started = False
        self._tools: dict[str, Tool] = {}
        #: agent id -> the tools that agent offered (two agents' tools of one name stay two)
        self._agent_tools: dict[str, dict[str, Tool]] = {}
        self._scopes = 0
        self._tokens: list[tuple[Token[Run | None], Token[tuple[Run, str] | None]]] = []
        self._rng: random.Random | None = None
        if tools:
            self.add_tools(tools)

    # -- public state ------------------------------------------------------------------------
    @property
    def status(self) -> RunStatus:
        """Where the run stands (see :class:`rac.RunStatus`)."""
        return self.log.status

    @property
    def busy(self) -> bool:
        """True while a call of this run is under way (its intent written, its outcome not
        yet); :meth:`finish` leaves a busy run running."""
        return self._state.busy

    @property
    def started(self) -> bool:
        """True once the run's row is written (by :meth:`start`, or the first call)."""
        return self._started

    @property
    def state(self) -> RunState:
        """What this process knows of the run beyond its log (for the modules of
        :mod:`rac.run`, under ``lock``; it changes only through its event methods)."""
        return self._state

    @property
    def in_flight(self) -> frozenset[int]:
        """The seqs of this run's calls under way (a copy)."""
        return frozenset(self._state.in_flight)

    @property
    def rollbacks_started(self) -> int:
        """How many rollbacks of this run began in this process (an adapter compares two
        readings to tell whether one began in between)."""
        return self._state.rollbacks_started

    @property
    def last_report(self) -> RecoveryReport | None:
        """The report of this run's last rollback, if any."""
        return self._state.last_report

    @property
    def live(self) -> Mapping[int, tuple[dict[str, Any], Any]]:
        """seq -> (args, value) as the call had them in this process, for calls whose log
        copies are not exact (a read-only view)."""
        return self._state.live

    @property
    def rng(self) -> random.Random:
        """Jitter for backoff, seeded by the run id."""
        if self._rng is None:
            self._rng = random.Random(self.run_id)
        return self._rng

    def records(self) -> list[Record]:
        """Copies of this run's records, in seq order."""
        with self.lock:
            return [self.log.records[s].copy() for s in sorted(self.log.records)]

    # -- tools ---------------------------------------------------------------------------------
    def add_tools(self, tools: Iterable[Tool | Callable[..., Any]] | ToolSet, *,
                  agent_id: str | None = None) -> None:
        """Make tools callable in this run (compensators, alternatives, lookups), checking the
        engine's declarations that concern them. A :class:`rac.ToolSet` of this engine that
        passed that check under the current declarations is added without another.

        With ``agent_id``, the tools are that agent's: a call the agent made is undone (and
        its alternatives and lookups called) through the agent's tool of that name, even when
        another agent of the run offered a different tool under the same name."""
        engine = self.engine
        if isinstance(tools, ToolSet) and tools.engine is engine:
            if tools.checked_at == engine.registry.version or _check_set(tools):
                with self.lock:
                    self._tools.update(tools.by_name)
                    if agent_id is not None:
                        self._agent_tools.setdefault(agent_id, {}).update(tools.by_name)
                return
        new = [engine.adapt_tool(t) for t in tools]
        with self.lock:
            for t in new:
                self._tools[t.name] = t
            if agent_id is not None:
                own = self._agent_tools.setdefault(agent_id, {})
                for t in new:
                    own[t.name] = t
            known = {**engine.tools, **self._tools}
        engine.registry.check_known(set(known), only_for=[t.name for t in new])
        engine.registry.check_params(known)

    def tool(self, name: str, agent_id: str | None = None) -> Tool | None:
        """The tool called ``name`` in this run or the engine, or None; with ``agent_id``, the
        one that agent offered (to the run, or to the engine with
        ``register_tools(..., agent_id=...)``) comes first."""
        if agent_id is not None and (self._agent_tools or self.engine.agent_tools):
            found = self._agent_tools.get(agent_id, {}).get(name) \
                or self.engine.agent_tools.get(agent_id, {}).get(name)
            if found is not None:
                return found
        return self._tools.get(name) or self.engine.tools.get(name)

    def tools(self) -> dict[str, Tool]:
        """The tools callable in this run, its own and the engine's, by name (a copy)."""
        return {**self.engine.tools, **self._tools}

    # -- opening and closing -------------------------------------------------------------------
    def start(self) -> None:
        """Write the run's row if it is not written yet (the first call does this)."""
        if self._started:
            return
        with self.lock:  # the first calls of a run may come from several threads at once
            if not self._started:
                self.log.create()
                self._started = True

    def __enter__(self) -> Run:
        self.start()
        self._tokens.append((CURRENT_RUN.set(self), CURRENT_SCOPE.set((self, "0"))))
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        tokens = self._pop_tokens()
        ended = False
        try:
            reason = self._abort_reason(exc)
            if reason is not None:
                self.rollback(reason=reason, scope="0")
            ended = self._close()
        finally:
            _reset(tokens)
            if not ended:
                self._leave()

    @property
    def offloads(self) -> bool:
        """True when the log's writes block (a disk, a server), or a plugin answers an
        approval hook (a person may take minutes): the async entry points make them on a
        worker thread, so the event loop never waits on the log or on a person."""
        return bool(getattr(self.engine.store, "blocking", True)) or self.engine.hooks.asks_people

    async def _off_loop(self, fn: Callable[[], Any]) -> Any:
        """``fn()`` (which writes to the log) on a worker thread when the log blocks."""
        if self.offloads:
            return await asyncio.to_thread(fn)
        return fn()

    async def __aenter__(self) -> Run:
        if not self.started:
            await self._off_loop(self.start)
        return self.__enter__()

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        tokens = self._pop_tokens()
        ended = False
        try:
            reason = self._abort_reason(exc)
            if reason is not None:
                await self.arollback(reason=reason, scope="0")
            ended = await self._off_loop(self._close)
        finally:
            _reset(tokens)
            if not ended:  # else _close ended the lease: leaving writes nothing
                await self._off_loop(self._leave)

    def _pop_tokens(self) -> tuple[Token[Run | None], Token[tuple[Run, str] | None]]:
        if not self._tokens:
            raise RuntimeError(f"run {self.run_id} was left without being entered")
        return self._tokens.pop()

    def _abort_reason(self, exc: BaseException | None) -> str | None:
        """Why the run must be rolled back as it closes, or None if it needs no rollback."""
        if exc is None:
            return None
        if isinstance(exc, ToolCallFailed) and exc.report.run_id == self.run_id \
                and exc.report.scope == "0":
            return None  # its own failure already rolled it back
        with self.lock:
            if self.status in ROLLED_BACK and not any(
                    r.status in (R.COMPLETED, R.PENDING, R.IN_DOUBT)
                    and may_be_live(r, self._state.in_flight) and r.compensable
                    for r in self.log.records.values()):
                return None  # rolled back already, and nothing was done since
        return f"the run was aborted by {type(exc).__name__}: {error_text(exc)}"

    def _leave(self) -> None:
        """The outermost block of a run ended: say in the log that its owner left it (its
        lease ends: :data:`rac.models.RELEASED`, see :mod:`rac.leases`), so that an
        operator's ``rac resume`` may finish its rollback while this process lives on. A run
        completed as its block closed ended its lease in that same commit; a call still under
        way keeps it."""
        if self._tokens or self._state.busy:
            return
        try:
            self.log.end()
        except Exception as e:  # noqa: BLE001 - then the run looks owned: the careful side
            self.log.event("rac.run", level="warning", status="release_failed",
                           error=error_text(e))

    def _close(self) -> bool:
        """The block is left: a running run is completed unless a call was interrupted; as
        the outermost block of an idle run, in the same commit as the end of its lease. True
        if that commit ended the lease (:meth:`_leave` has nothing left to write)."""
        with self.lock:
            done = self._state.step_done(self.status)
            if done is not self.status:
                end = not self._tokens and not self._state.busy
                self.log.set_status(done, end=end)
                return end
            return False

    def finish(self) -> bool:
        """Mark the run completed, for adapters whose framework has no block to wrap the run
        in; True if it is completed now.

        Only a running run that is idle is marked: while a call of it is under way
        (:attr:`busy`), or after an interruption (a crash, a cancellation) left a call in
        doubt, it stays running, the second case for ``rac recover``. A rolled-back run keeps
        its status, and ``needs_attention`` is never cleared by finishing. The run stays
        joinable: a later call sets a completed run running again."""
        self.start()
        with self.lock:
            if not self._state.busy:
                self.log.set_status(self._state.step_done(self.status), end=True)
            return self.status is S.COMPLETED

    async def afinish(self) -> bool:
        """:meth:`finish` for async adapters: the log's write is made on a worker thread when
        the log blocks, so the event loop never waits on it."""
        done: bool = await self._off_loop(self.finish)
        return done

    async def arelease(self) -> None:
        """:meth:`release` for async adapters, off the event loop like :meth:`afinish`."""
        await self._off_loop(self.release)

    def release(self) -> None:
        """This process stops working on the run for now, its status left as it is: the run's
        lease ends, so ``rac recover`` (or a resume in another process) may take it at once if
        it is unfinished. For adapters that leave a run in doubt to recovery without finishing
        it; a later call of the run takes the lease again. A run with a call under way keeps
        its lease."""
        with self.lock:
            if self._started and not self._state.busy:
                self.log.end()

    def scope(self) -> Scope:
        """A nested transaction scope: a failure inside it rolls back only what it did."""
        parent = self.current_scope()
        with self.lock:
            self._scopes += 1
            n = self._scopes
        return Scope(self, f"{parent}.{n}")

    def current_scope(self) -> str:
        """The id of the innermost scope open in this context ("0" is the run itself)."""
        return current_scope_of(self)

    # -- entry points --------------------------------------------------------------------------
    def execute(self, name: str, args: dict[str, Any], invoke: Invoker, *,
                agent_id: str | None = None, depends_on: Iterable[int] = (),
                batch: Any = None, call_id: str | None = None) -> CallOutcome:
        """Run one tool call under RAC (the adapter API, blocking).

        ``invoke(tool_name, args)`` performs a call of the named tool (the requested one or an
        alternative) through the framework and returns its raw result or raises. ``batch``
        names the parallel calls of one model turn (any hashable, e.g. the id of the message
        that asked for them): once a rollback of this run has begun after the batch's first
        call, a call of the batch that has not started is refused, and one still running is
        undone when it returns. ``call_id`` is the framework's own id of the call (a model's
        ``tool_call_id``), written on its records (:attr:`rac.Record.call_id`) so that a
        resumed agent repeating the call can find them.
        """
        if not self._started:
            self.start()
        scope = current_scope_of(self)
        if batch is None and self.engine.fast_path:
            done = execute_fast(self, name, args, invoke, agent_id=agent_id,
                                depends_on=depends_on, scope=scope, call_id=call_id)
            if done is not None:
                return done
        flow = call_flow(self, name, dict(args), agent_id=agent_id, depends_on=depends_on,
                         batch=batch, scope=scope, invoke=invoke, ainvoke=None,
                         call_id=call_id)
        return drive_sync(flow, self.engine.clock, self.engine.passthrough)

    async def aexecute(self, name: str, args: dict[str, Any], ainvoke: AsyncInvoker, *,
                       agent_id: str | None = None, depends_on: Iterable[int] = (),
                       batch: Any = None, call_id: str | None = None) -> CallOutcome:
        """Run one tool call under RAC without blocking the event loop (the adapter API)."""
        if not self.started:
            await self._off_loop(self.start)

        def unused(tool: str, a: dict[str, Any]) -> Any:  # pragma: no cover - async only
            raise RuntimeError("the async path never calls tools synchronously")

        flow = call_flow(self, name, dict(args), agent_id=agent_id, depends_on=depends_on,
                         batch=batch, scope=self.current_scope(), invoke=unused,
                         ainvoke=ainvoke, call_id=call_id)
        return await drive_async(flow, self.engine.clock, self.engine.passthrough,
                                 offload=self.offloads)

    # -- settling a call that may have happened ------------------------------------------------
    def settle(self, seq: int, args: Mapping[str, Any] | None = None, *,
               why: str = "reconciled") -> Reconciled:
        """Ask the declared lookup (:class:`rac.Lookup`) whether call ``seq`` of this run,
        which has an intent and no known outcome (``pending`` after a crash, or
        ``in_doubt``), took effect, and write the verdict to the log: *found*, the record is
        completed with the found effect as its result (``verdict.result``), as if the call
        had returned it; *absent*, it is failed (it never happened: the call may be made
        again); *unknown*, it stays as it was (``verdict.reason`` says why).

        The verdict concerns this call's own effect, and rests on evidence only: a match that
        existed before the call (in the snapshot taken with its intent, or older than it by
        the lookup's ``created_after`` field) or that is another call's known effect
        (compared on every id it carries) is not credited to it; a match that may be the
        effect of another call still running or in doubt with the same arguments, an item
        RAC cannot read (a bare value, a row without the matched fields), or a result of the
        wrong shape make the verdict *unknown*, never *absent*. A lookup by the idempotency
        key finds nothing of a call that was not sent with one: *unknown*.

        For an adapter whose framework repeats a call a crash interrupted (a resumed graph):
        the answer tells it whether to hand back the found result, run the call, or tell the
        model the call is in doubt. ``args`` are the call's arguments as the framework repeats
        it (default: the logged ones, exact where the log kept them); ``why`` starts the
        record's note. Raises :class:`ValueError` naming the record when it is not such a
        call or its tool declares no lookup."""
        rec, lookup, call_args = self._to_settle(seq, args)
        return drive_sync(settle(self, rec, lookup, call_args, why=why), self.engine.clock,
                          self.engine.passthrough)

    async def asettle(self, seq: int, args: Mapping[str, Any] | None = None, *,
                      why: str = "reconciled") -> Reconciled:
        """:meth:`settle` without blocking the event loop (the lookup is awaited)."""
        rec, lookup, call_args = self._to_settle(seq, args)
        return await drive_async(settle(self, rec, lookup, call_args, why=why),
                                 self.engine.clock, self.engine.passthrough,
                                 offload=self.offloads)

    def _to_settle(self, seq: int, args: Mapping[str, Any] | None
                   ) -> tuple[Record, Lookup, Mapping[str, Any]]:
        with self.lock:
            rec = self.log.records.get(seq)
        if rec is None or rec.kind is not RecordKind.ACTION \
                or rec.status not in (RecordStatus.PENDING, RecordStatus.IN_DOUBT):
            what = "no such record" if rec is None else \
                f"{rec.tool} is a {rec.kind} record, {rec.status}"
            raise ValueError(f"cannot settle {self.run_id}#{seq}: only an action with an "
                             f"intent and no known outcome (pending or in_doubt) can be "
                             f"settled ({what})")
        lookup = self.engine.registry.lookups.get(rec.tool)
        if lookup is None:
            raise ValueError(f"cannot settle {self.run_id}#{seq}: {rec.tool} declares no "
                             "lookup (rac.Compensation(..., lookup=rac.Lookup(...)))")
        return rec, lookup, (undo_sources(self, rec)[0] if args is None else args)

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
        :class:`rac.CallRefused` (:class:`rac.NoCompensationError` under
        ``no_compensation="refuse"``) when the call was refused before it ran.
        """
        t = self._resolve(tool)
        return unwrap(self.execute(t.name, args, lambda name, a: self._resolve(name).invoke(a)))

    async def acall(self, tool: str | Tool | Callable[..., Any], /, **args: Any) -> Any:
        """Async :meth:`call`."""
        t = self._resolve(tool)

        async def ainvoke(name: str, a: dict[str, Any]) -> Any:
            return await self._resolve(name).ainvoke(a)

        return unwrap(await self.aexecute(t.name, args, ainvoke))

    def rollback(self, reason: str = "rolled back on request", *,
                 scope: str | None = None) -> RecoveryReport:
        """Compensate every side effect of ``scope`` (default: the current one) that happened
        or may have."""
        self.start()
        return drive_sync(self.rollback_flow(scope or self.current_scope(), reason=reason),
                          self.engine.clock, self.engine.passthrough)

    async def arollback(self, reason: str = "rolled back on request", *,
                        scope: str | None = None) -> RecoveryReport:
        """Async :meth:`rollback`; a cancellation waits for the rollback to finish."""
        if not self.started:
            await self._off_loop(self.start)
        return await drive_async(self.rollback_flow(scope or self.current_scope(),
                                                    reason=reason),
                                 self.engine.clock, self.engine.passthrough,
                                 offload=self.offloads)

    def rollback_flow(self, scope: str, *, reason: str,
                      requeue: Iterable[RecordStatus] = (),
                      keep: Mapping[int, str] | None = None) -> Flow[RecoveryReport]:
        """The rollback of ``scope`` as a flow for a driver (recovery uses it). ``requeue``
        adds statuses it takes up again: ``compensating`` (a compensation a crash
        interrupted), ``compensation_failed`` (dead letters, for ``rac resume``). ``keep``:
        records to leave alone, seq -> why (:mod:`rac.undo` keeps what drifted)."""
        from rac.run.rollback import rollback_flow

        extra = frozenset(requeue)
        if not extra <= REQUEUED:
            raise ValueError(f"only {sorted(REQUEUED)} can be requeued, got {sorted(extra)}")
        return rollback_flow(self, scope, reason=reason, statuses=UNDOABLE | extra, keep=keep)

    # -- the driver of the run's state, for the modules of rac.run -----------------------------
    def next_seq(self) -> int:
        """The next sequence number (call under ``lock``)."""
        return self._state.next_seq()

    def batch_refusal(self, batch: Any, tool: str) -> str | None:
        """Why a call of ``batch`` may not start (a rollback began after the batch's first
        call), or None; remembers the batch (call under ``lock``)."""
        return self._state.batch_refusal(batch, tool)

    def succeeded(self, rec: Record, args: dict[str, Any], value: Any) -> bool:
        """Write a call's success; True if its scope was rolled back while it ran (the caller
        undoes it)."""
        engine = self.engine
        stored = plain_copy(value)  # a plain flat dict: the stored copy is exact
        exact_value = stored is not None
        if stored is None:
            stored = stored_copy(value, engine.max_value_chars)
        with self.lock:
            state = self._state
            produces = engine.registry.produces.get(rec.tool)
            if exact_value and rec.args == args:  # the log's copies are exact: they stand
                doomed = state.call_succeeded(rec, rec.args, stored, keep_live=False,
                                              produces=produces, owned=True)
                self.log.change(rec, {"status": _COMPLETED, "attempts": rec.attempts,
                                      "result": stored})
                return doomed
            needed = state.needed(rec.seq)
            # undo data only where an undo may need it, and only the fields it may read
            exact_result = None if exact_value or rec.read_only or not rec.compensable \
                or needed is None else undo_part(value, stored, needed[1])
            doomed = state.call_succeeded(
                rec, args, value, keep_live=rec.args != args or exact_result is not None,
                produces=produces)
            fields: dict[str, Any] = {"status": _COMPLETED, "attempts": rec.attempts,
                                      "result": stored}
            if exact_result is not None:
                undo = dict(rec.undo or {})
                undo["result"] = exact_result
                if undo != (rec.undo or {}):
                    fields["undo"] = undo
            self.log.change(rec, fields)
            return doomed

    def end_call(self, rec: Record, status: RecordStatus, **fields: Any) -> bool:
        """Write the end of a call that did not succeed (failed or in doubt); True if its scope
        was rolled back while it ran."""
        with self.lock:
            self._state.call_ended(rec.seq)
            self.log.update(rec, status=status, **fields)
            return self.settle_doomed(rec.seq)

    def settle_doomed(self, seq: int) -> bool:
        """Forget that ``seq`` was doomed (its call ended); once nothing doomed or claimed is
        left, give the run its final status. True if it was doomed."""
        with self.lock:
            doomed, status = self._state.doom_lifted(seq, self.status,
                                                     self.log.records.values())
            if status is not None:
                self.log.set_status(status)
            return doomed

    def interrupted(self, rec: Record, exc: BaseException) -> None:
        """A BaseException or a framework's control flow stopped a call: its record stays
        pending (in doubt, for recovery) unless the adapter declared the exception a
        pass-through."""
        with self.lock:
            passthrough = isinstance(exc, self.engine.passthrough)
            self._state.call_interrupted(rec.seq, in_doubt=not passthrough
                                         and rec.status is R.PENDING)
            if passthrough and rec.status is R.PENDING:
                self.log.update(rec, status=R.FAILED, note="passthrough",
                                error=f"interrupted by {type(exc).__name__}; not a failure")
            self.settle_doomed(rec.seq)

    def note_interrupted(self, seq: int) -> None:
        """Call ``seq`` was left without an outcome by an interruption this run does not hold
        (a crash of the process that ran it, for a run reopened from its log): like an
        interrupted call of this process, it keeps :meth:`finish` from completing the run, so
        that ``rac recover`` takes it up."""
        with self.lock:
            self._state.call_interrupted(seq, in_doubt=True)

    # -- rebuilding from the log (crash recovery) ----------------------------------------------
    @classmethod
    def from_log(cls, engine: RAC, info: RunInfo, records: Iterable[Record], *,
                 next_seq: int | None = None) -> Run:
        """A run rebuilt from its log records (see :mod:`rac.recovery`): already started, with
        its records, status and next sequence number (``next_seq``, default one past the
        highest); no call is in flight."""
        run = cls(engine, run_id=info.run_id, agent_id=info.agent_id)
        run.log.status = info.status
        run._started = True
        loaded = list(records)
        for rec in loaded:
            run.log.records[rec.seq] = rec
        run._state = state = RunState(next_seq=next_seq if next_seq is not None
                                      else max(run.log.records, default=0) + 1)
        for rec in loaded:
            state.loaded(rec)
        return run


def _check_set(tools: ToolSet) -> bool:
    """Check a tool set against the declarations with the engine's tools alone, and remember
    that it passed; False if it needs a run's other tools (the general path checks with them)."""
    engine = tools.engine
    version = engine.registry.version
    try:
        engine.registry.check_known(set(tools.by_name) | set(engine.tools),
                                    only_for=list(tools.by_name))
        engine.registry.check_params({**engine.tools, **tools.by_name})
    except ConfigurationError:
        return False
    tools.checked_at = version
    return True


def _reset(tokens: tuple[Token[Run | None], Token[tuple[Run, str] | None]]) -> None:
    run_token, scope_token = tokens
    CURRENT_SCOPE.reset(scope_token)
    CURRENT_RUN.reset(run_token)
