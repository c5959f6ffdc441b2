"""Running one ToolNode tool call under RAC: the logic shared by the middleware and the wrappers
for hand-built graphs."""

from __future__ import annotations

import json
import threading
from collections.abc import Awaitable, Callable, Generator, Hashable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import Any, TypeVar

from langchain_core.messages import ToolMessage
from langgraph.config import get_config
from langgraph.errors import GraphBubbleUp
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command
from pydantic import ValidationError

import rac
from rac.adapters import (
    CallRefused,
    Delegation,
    aexecute,
    aroute,
    batch_key,
    execute,
    failure_text,
    route,
)
from rac.events import emit
from rac.models import RecordKind, RecordStatus
from rac.run import Reconciled
from rac.run.reconcile import ABSENT, FOUND
from rac_langgraph import approvals, pregel
from rac_langgraph.engines import build_engine
from rac_langgraph.results import (
    HandOff,
    InvalidToolCall,
    is_handoff,
    is_invalid_call,
    result_value,
)
from rac_langgraph.runs import ROLLED_BACK, TOLD_KEY, TurnRuns, advance, runs_of

ToolResult = ToolMessage | Command[Any]
T = TypeVar("T")
Execute = Callable[[ToolCallRequest], ToolResult]
AsyncExecute = Callable[[ToolCallRequest], Awaitable[ToolResult]]
_HINT = "pass it to create_agent or to RACMiddleware(tools=[...])"
#: how the note of a record settled on resume begins (see rac.Run.settle)
_SETTLED_WHY = "reconciled on resume"


class RACToolCalls:
    """Runs a ToolNode's tool calls under RAC.

    ``wrap_tool_call`` and ``awrap_tool_call`` have the shape ``ToolNode(wrap_tool_call=...,
    awrap_tool_call=...)`` expects; :class:`rac_langgraph.RACMiddleware` uses the same logic.
    Each call is logged, retried while its failure is transient, replaced by the declared
    alternatives (through ``execute``, or directly for tools only the engine knows), and on an
    unrecoverable failure the turn's side effects are compensated and the model gets a
    ``ToolMessage`` with ``status="error"`` holding the recovery report. The calls of one model
    message are one batch (:mod:`rac.adapters.batches`). A tool returning
    ``Command(graph=Command.PARENT)`` (a hand-off) is control flow, never compensated; the
    hand-off tools of langgraph-swarm and langgraph-supervisor are declared read-only when
    first seen.

    Args:
        rac: the engine (share one to share the log); else ``config`` holds ``rac.RAC``
            keywords. LangChain tools given as ``tools`` become callable by the engine, e.g.
            compensators the model is not offered.
        agent_id: the agent id written on this agent's records (default: the ``name`` given to
            ``create_agent``, else the engine's ``agent_id``).
        finish_steps: mark the turn's run completed after each tool step (once none of its
            calls is running), and after a step an interrupt paused. A graph tells a tool node
            nothing about the end of a turn, and a run left ``running`` when the process exits
            would be rolled back by ``rac recover``; the run stays joinable, so a later
            failure in the turn still undoes the whole turn. With ``False``, call
            :meth:`end_turn` when a turn is over.
        repeatable: tools whose calls are run again when a resumed or retried graph repeats
            them (genuinely repeatable reads); every other call a turn already made is
            answered with its logged result instead (exactly once).
        approvals: how a tool declared ``irreversible={tool: "approve"}`` is approved:
            ``"interrupt"`` (default) asks a person through LangGraph's ``interrupt()`` when
            the thread has a checkpointer (resume with ``Command(resume="approve")`` or
            ``"deny"``); ``"hook"`` leaves it to the engine's ``rac_approve_action`` plugins.
    """

    def __init__(self, rac: rac.RAC | None = None, *, agent_id: str | None = None,
                 finish_steps: bool = True, repeatable: Iterable[str] = (),
                 approvals: str = "interrupt", **config: Any) -> None:
        if approvals not in ("interrupt", "hook"):
            raise ValueError(f"approvals must be 'interrupt' (ask through LangGraph's "
                             f"interrupt()) or 'hook' (leave it to rac_approve_action plugins), "
                             f"got {approvals!r}")
        self.engine = build_engine(rac, agent_id, config)
        self.agent_id = agent_id
        self.finish_steps = finish_steps
        self.repeatable = frozenset(repeatable)
        self.approvals = approvals
        self.turns: TurnRuns = runs_of(self.engine)

    # -- the ToolNode wrapper pair ------------------------------------------------------------
    # Both paths run one flow: :meth:`_begin` (finding the call's run, answering a call the
    # turn already made) yields the log and checkpointer work it needs, which each path does
    # its own way (:meth:`_through` / :meth:`_athrough`); then the call runs under RAC, where
    # the paths differ only in awaiting the framework's ``execute``.
    def wrap_tool_call(self, request: ToolCallRequest, execute_: Execute) -> ToolResult:
        """Run ``request`` under RAC on the blocking path."""
        if request.tool is None:  # unknown tool: ToolNode answers the model itself
            return execute_(request)
        c = self._through(self._begin(request))
        if not isinstance(c, _Call):
            return c

        def run_tool(name: str, guard: _Guard, req: ToolCallRequest, own: bool) -> Any:
            with _Inside(c.run, name, c.call_id) as inside:
                result = execute_(req)
            return c.kept(_told_inside(result, inside), guard, own)

        invoke = route(c.run, c.name, lambda a: run_tool(c.name, *c.own(a), True),
                       through=c.through(run_tool), direct=c.held.direct(request), hint=_HINT)
        try:
            with self._under(c):
                outcome = execute(c.run, c.name, c.args, invoke, agent_id=c.agent,
                                  batch=_batch(request), call_id=c.call_id)
        except CallRefused as refused:  # invalid arguments, a hand-off: the framework's answer
            return refused.reply  # type: ignore[no-any-return]
        finally:
            self._step_done(c.run, c.explicit)
        return self._answer(c.run, outcome, request, c.held, c.agent, c.note)

    async def awrap_tool_call(self, request: ToolCallRequest,
                              execute_: AsyncExecute) -> ToolResult:
        """Run ``request`` under RAC without blocking the event loop."""
        if request.tool is None:
            return await execute_(request)
        c = await self._athrough(self._begin(request))
        if not isinstance(c, _Call):
            return c

        async def run_tool(name: str, guard: _Guard, req: ToolCallRequest, own: bool) -> Any:
            with _Inside(c.run, name, c.call_id) as inside:
                result = await execute_(req)
            return c.kept(_told_inside(result, inside), guard, own)

        ainvoke = aroute(c.run, c.name, lambda a: run_tool(c.name, *c.own(a), True),
                         through=c.through(run_tool), direct=c.held.direct(request),
                         hint=_HINT)
        try:
            with self._under(c):
                outcome = await aexecute(c.run, c.name, c.args, ainvoke, agent_id=c.agent,
                                         batch=_batch(request), call_id=c.call_id)
        except CallRefused as refused:
            return refused.reply  # type: ignore[no-any-return]
        finally:
            await self._astep_done(c.run, c.explicit)
        return self._answer(c.run, outcome, request, c.held, c.agent, c.note)

    def _begin(self, request: ToolCallRequest) -> Generator[_Want, Any, _Call | ToolResult]:
        """The start of a call, written once for both paths: its agent and run (the nest's,
        the caller's, else the turn's), the agent's tools offered to it, and the answer a
        call the turn already made gets again (settled by its lookup first if a crash left
        it in doubt), the step then done; else the :class:`_Call` to run. It yields what
        needs the log or the checkpointer (see :meth:`_through`)."""
        agent = self._agent(request)
        nest = self._nest()
        run = nest.run if nest is not None else self._opened()
        explicit = run is not None
        if run is None:
            runtime = request.runtime
            run = yield _TurnOf(request.state, getattr(runtime, "config", None), agent, runtime)
        self._offer(run, request, agent)
        earlier = self._earlier(run, request, agent)
        if isinstance(earlier, _Doubt):
            seen = yield _Settle(run, earlier.record.seq, request.tool_call["args"])
            earlier = self._settled(run, request, earlier.record, seen, agent)
        if earlier is not None:
            yield _StepOver(run, explicit)
            return earlier
        return _Call(request, agent, nest, run, explicit)

    def _through(self, flow: Generator[_Want, Any, T]) -> T:
        """Run ``flow`` (see :meth:`_begin`) on the blocking path."""
        done, want = advance(flow, None)
        while not done:
            if type(want) is _TurnOf:
                got: Any = self.turns.turn_run(want.state, want.config, want.agent,
                                               want.runtime)
            elif type(want) is _Settle:
                got = want.run.settle(want.seq, want.args, why=_SETTLED_WHY)
            else:
                self._step_done(want.run, want.explicit)
                got = None
            done, want = advance(flow, got)
        return want  # type: ignore[no-any-return]

    async def _athrough(self, flow: Generator[_Want, Any, T]) -> T:
        """Run ``flow`` (see :meth:`_begin`) on the async path: the checkpointer read with
        ``await``, the log's writes off the event loop."""
        done, want = advance(flow, None)
        while not done:
            if type(want) is _TurnOf:
                got: Any = await self.turns.aturn_run(want.state, want.config, want.agent,
                                                      want.runtime)
            elif type(want) is _Settle:
                got = await want.run.asettle(want.seq, want.args, why=_SETTLED_WHY)
            else:
                await self._astep_done(want.run, want.explicit)
                got = None
            done, want = advance(flow, got)
        return want  # type: ignore[no-any-return]

    def _under(self, c: _Call) -> AbstractContextManager[Any]:
        """What a call runs inside: the nested scope of an agent used as a tool, and the
        verdict on an irreversible call (asked through ``interrupt()``, see
        :meth:`_approval`; what the model is told besides goes to ``c.note``). Nothing for
        the plainest calls."""
        if c.nest is None and c.name not in self.engine.registry.irreversible:
            return _NOTHING
        return self._scoped(c)

    @contextmanager
    def _scoped(self, c: _Call) -> Iterator[None]:
        scope = c.nest.join() if c.nest is not None else None
        if scope is not None:
            scope.__enter__()
        try:
            if c.name in self.engine.registry.irreversible:
                verdict, c.note = self._approval(c.request)
                with approvals.decided(c.name, c.args, verdict):
                    yield
            else:
                yield
        finally:
            if scope is not None:  # left as it was entered: the call's failure was handled
                scope.__exit__(None, None, None)

    # -- turns --------------------------------------------------------------------------------
    async def _astep_done(self, run: rac.Run, explicit: bool) -> None:
        """:meth:`_step_done` on the async path: the log's write off the event loop."""
        if self.finish_steps and not explicit:
            if run.run_id in self.turns.doubtful:
                await run.arelease()
            else:
                await run.afinish()

    def _step_done(self, run: rac.Run, explicit: bool) -> None:
        """A call of ``run`` is over, however it ended (an interrupt pauses the turn, a
        hand-off goes on in it): mark the run completed, unless the caller opened it.
        ``Run.finish`` leaves it running while another call of it is under way, or after a
        crash or cancellation left a call in doubt (for ``rac recover``). A run with a call in
        doubt is released instead: its status stays, its lease ends, so recovery may take it."""
        if self.finish_steps and not explicit:
            if run.run_id in self.turns.doubtful:
                run.release()
            else:
                run.finish()

    def _agent(self, request: ToolCallRequest) -> str:
        """The agent id of a call: the one given, else the name create_agent gives its runs'
        metadata, else the engine's."""
        if self.agent_id is not None:
            return self.agent_id
        config = getattr(request.runtime, "config", None)
        metadata = config.get("metadata") if config else None
        name = metadata.get("lc_agent_name") if metadata else None
        return str(name) if name else self.engine.agent_id

    def _nest(self) -> _Nest | None:
        """The tool call of this engine this agent's invocation runs inside (an agent used as
        a tool), if any: its calls join that call's run, in a nested scope."""
        nest = _NEST.get()
        return nest if nest is not None and nest.run.engine is self.engine else None

    def _opened(self) -> rac.Run | None:
        """The run of this engine the caller opened around the invocation (it takes
        precedence over the turn's), if any."""
        run = rac.current_run()
        return run if run is not None and run.engine is self.engine else None

    def _offer(self, run: rac.Run, request: ToolCallRequest, agent: str) -> None:
        """Offer the agent's tools to ``run`` (compensators, alternatives), as ``agent``'s."""
        tools = getattr(request.runtime, "tools", None)
        if tools:
            self.turns.offer_tools(run, tools, agent)

    # -- exactly once ---------------------------------------------------------------------------
    def _earlier(self, run: rac.Run, request: ToolCallRequest, agent: str
                 ) -> ToolResult | _Doubt | None:
        """The answer a call the turn already made gets again (a resumed or retried graph
        repeats it): the answer given, or the logged result; a call a crash interrupted is
        not run again but named in doubt, or, if its tool declares a lookup, handed back to
        be settled by it (:class:`_Doubt`). None for a new call (or a repeatable tool). A
        call is its ``tool_call_id`` among the calls of its agent (``agent``): the agents of
        one run (a supervisor's workers, an agent used as a tool) may use the same ids."""
        call = request.tool_call
        name = call["name"]
        if name in self.repeatable:
            return None
        turns = self.turns
        call_id = call.get("id")
        prior = turns.answered(run, call_id, agent)
        if prior is not None:
            emit("rac_langgraph.replayed", run_id=run.run_id, tool=name, tool_call_id=call_id)
            return prior  # type: ignore[no-any-return]
        rec = turns.logged_call(run, call_id, name, call["args"], request.state, agent)
        if rec is None:
            if turns.unheard(run, call_id, request.state):  # asked for before the rollback
                emit("rac_langgraph.not_run_after_rollback", run_id=run.run_id, tool=name,
                     tool_call_id=call_id)
                return self._told(run, request, _not_run_text(name), error=True)
            return None
        if rec.status in _UNSETTLED:
            lookup = self.engine.registry.lookups.get(rec.tool)
            if lookup is not None and rec.tool == name:
                return _Doubt(rec, lookup)
            return self._told(run, request, _in_doubt_text(rec), error=True)
        emit("rac_langgraph.replayed", run_id=run.run_id, tool=name, tool_call_id=call_id)
        if rec.status is RecordStatus.COMPLETED:
            return self._told(run, request, _content(rec.result), error=False)
        return self._told(run, request, _undone_text(rec), error=True)

    def _settled(self, run: rac.Run, request: ToolCallRequest, rec: rac.Record,
                 seen: Reconciled, agent: str) -> ToolResult | None:
        """The answer to a call in doubt that its lookup settled (see
        :meth:`rac.Run.settle`): the effect found, as the tool's result; None when it is
        known not to have happened (the call then runs); else the call is still in doubt."""
        if seen.verdict == ABSENT or seen.verdict == FOUND:
            self.turns.settled(run)
        if seen.verdict == ABSENT:
            return None
        if seen.verdict == FOUND:
            reply = self._told(run, request, _content(seen.result), error=False)
            self.turns.answer(run, request.tool_call.get("id"), reply, agent)
            return reply
        return self._told(run, request, _in_doubt_text(rec, seen.reason), error=True)

    def _told(self, run: rac.Run, request: ToolCallRequest, text: str, *,
              error: bool) -> ToolMessage:
        note = self.turns.take_note(run)
        call = request.tool_call
        reply = ToolMessage(content=f"{note}\n\n{text}" if note else text,
                            tool_call_id=call["id"], name=call["name"],
                            status="error" if error or note else "success")
        if note:
            reply.response_metadata[TOLD_KEY] = getattr(note, "about", run.run_id)
        return reply

    def _approval(self, request: ToolCallRequest) -> tuple[bool | None, str]:
        """The verdict on an irreversible call (see :mod:`rac_langgraph.approvals`): asked
        through ``interrupt()`` when the tool must be approved, the middleware asks that way
        and the thread can resume (raises ``GraphInterrupt`` the first time); else None, left
        to the engine's ``rac_approve_action`` plugins. Also what the model is told besides."""
        call = request.tool_call
        name = call["name"]
        if self.approvals != "interrupt" or not approvals.needs_approval(self.engine, name) \
                or not pregel.persisted(request.runtime):
            return None, ""
        return approvals.ask(name, call["args"], call.get("id"))

    def _answer(self, run: rac.Run, outcome: rac.CallOutcome, request: ToolCallRequest,
                held: _Held, agent: str, note: str = "") -> ToolResult:
        reply = _reply(outcome, request, held)
        if note and outcome.refused and isinstance(reply, ToolMessage):
            reply = reply.model_copy(update={"content": f"{reply.content} {note}"})
        if outcome.ok and not outcome.undone:
            self.turns.answer(run, request.tool_call.get("id"), reply, agent)
        if not outcome.ok and isinstance(reply, ToolMessage) and run.status in ROLLED_BACK:
            reply.response_metadata[TOLD_KEY] = run.run_id  # the model hears of the rollback
        rolled_back = self.turns.take_note(run)
        if rolled_back and isinstance(reply, ToolMessage) and isinstance(reply.content, str):
            told = reply.model_copy(update={"content": f"{rolled_back}\n\n{reply.content}"})
            told.response_metadata = {**reply.response_metadata,
                                      TOLD_KEY: getattr(rolled_back, "about", run.run_id)}
            return told
        return reply

    # -- telling a resumed model ------------------------------------------------------------
    def rollback_notice(self, config: Mapping[str, Any] | None = None,
                        state: Any = None) -> str | None:
        """Once per turn: what the model must hear before it acts, when this step is the first
        of an invocation that resumes a checkpointed thread whose turn ``rac recover`` rolled
        back (what was undone, what could not be); else None. ``config`` is the step's
        (default: LangGraph's ``get_config()``). ``RACMiddleware(tell_model=True)`` calls it
        before each model call; in a hand-built graph, call it at the start of the model
        node and put the text before the messages."""
        if self._nest() is not None:
            return None  # an agent used as a tool: its parent's turn is told
        if config is None:
            config = get_config()
        return self.turns.resumed_note(config, self._agent_of(config), state)

    async def arollback_notice(self, config: Mapping[str, Any] | None = None,
                               state: Any = None) -> str | None:
        """:meth:`rollback_notice` for the async path (async checkpointers)."""
        if self._nest() is not None:
            return None
        if config is None:
            config = get_config()
        return await self.turns.aresumed_note(config, self._agent_of(config), state)

    def _agent_of(self, config: Mapping[str, Any]) -> str:
        if self.agent_id is not None:
            return self.agent_id
        metadata = config.get("metadata")
        name = metadata.get("lc_agent_name") if metadata else None
        return str(name) if name else self.engine.agent_id

    def end_turn(self, state: Any, config: Mapping[str, Any] | None) -> bool:
        """Mark the run of the turn ``state``/``config`` belong to completed: call it with the
        state ``invoke`` returned and the config given to it (or from a node of the graph,
        with the node's). True if the run is completed now (False: no such turn, or it
        stays running: a call under way, or one a crash left in doubt)."""
        return self.turns.end_turn(state, config)

    def close(self) -> None:
        """Finish and forget every run the engine's LangGraph adapters opened."""
        self.turns.close()


@dataclass(slots=True)
class _TurnOf:
    """Find the run of the turn a call's step belongs to (see :class:`TurnRuns`)."""

    state: Any
    config: Any
    agent: str
    runtime: Any


@dataclass(slots=True)
class _Settle:
    """Settle call ``seq`` of ``run``, which a crash left in doubt, through its lookup."""

    run: rac.Run
    seq: int
    args: dict[str, Any]


@dataclass(slots=True)
class _StepOver:
    """The call is over: the step is done (see :meth:`RACToolCalls._step_done`)."""

    run: rac.Run
    explicit: bool


_Want = _TurnOf | _Settle | _StepOver
#: What a plain call runs inside (see :meth:`RACToolCalls._under`).
_NOTHING = nullcontext()


class _Call:
    """A tool call about to run under RAC, as :meth:`RACToolCalls._begin` found it: its
    request, agent, run (``explicit``: the caller's own, never finished here), the agent
    invocation it runs inside (``nest``), what the framework answered (``held``) and what
    the model is told besides (``note``)."""

    __slots__ = ("agent", "args", "call_id", "explicit", "held", "name", "nest", "note",
                 "request", "run")

    def __init__(self, request: ToolCallRequest, agent: str, nest: _Nest | None,
                 run: rac.Run, explicit: bool) -> None:
        call = request.tool_call
        self.request = request
        self.name: str = call["name"]
        self.args: dict[str, Any] = call["args"]
        self.call_id: str | None = call.get("id")
        self.agent = agent
        self.nest = nest
        self.run = run
        self.explicit = explicit
        self.held = _Held()
        self.note = ""

    def own(self, args: dict[str, Any]) -> tuple[_Guard, ToolCallRequest]:
        """The request that calls the requested tool with ``args``, behind a guard."""
        guard = _Guard(self.request.tool)
        return guard, _with_args(self.request, args, guard)

    def through(self, run_tool: Callable[[str, _Guard, ToolCallRequest, bool], T]
                ) -> Callable[[str], Callable[[dict[str, Any]], T] | None]:
        """``route``'s ``through``: another tool of the agent called ``name`` (an
        alternative), run through the framework by ``run_tool``, or None if the agent has
        none."""
        def find(name: str) -> Callable[[dict[str, Any]], T] | None:
            tool = _tool_of_agent(self.request, name)
            if tool is None:
                return None

            def call(args: dict[str, Any]) -> T:
                guard = _Guard(tool)
                return run_tool(name, guard, _for_tool(self.request, guard, args), False)
            return call
        return find

    def kept(self, result: ToolResult, guard: _Guard, own: bool) -> Any:
        """What RAC gets of the framework's answer to an attempt (see :class:`_Held`): of
        the requested tool (``own``), or of an alternative."""
        if own:
            return self.held.own(result, self.request, self.run, guard)
        return self.held.keep(result, self.request, guard)


class _Nest:
    """A tool call under way in this context (its run, tool and ``tool_call_id``). An agent
    under RAC on the same engine that the tool invokes (a compiled graph used as a tool) joins
    the call's run in a nested scope of its own, opened when its first call comes: a failure
    of the agent's calls rolls back that scope first (what the agent did), and a later
    failure of the parent's turn rolls back everything, the agent's calls too, newest first.
    The call itself is then marked read-only in the log (see :func:`_as_agent_call`)."""

    __slots__ = ("call_id", "lock", "run", "scope_id", "tool")

    def __init__(self, run: rac.Run, tool: str, call_id: str | None) -> None:
        self.run = run
        self.tool = tool
        self.call_id = call_id
        self.scope_id: str | None = None
        self.lock = threading.Lock()

    def join(self) -> rac.Scope:
        """The nested scope of the agent's calls (one object per call: a scope is entered in
        one context at a time)."""
        if self.scope_id is None:
            with self.lock:
                if self.scope_id is None:
                    sid = self.run.scope().scope_id
                    _as_agent_call(self.run, self.tool, self.call_id, sid)
                    self.scope_id = sid
        return rac.Scope(self.run, self.scope_id)


def _told_inside(result: ToolResult, inside: Delegation) -> ToolResult:
    """A tool's answer, followed by what RAC told the model of an agent the tool ran (an agent
    used as a tool) about calls of it that failed for good: the parent's model hears what was
    undone in the child's scope whatever the child's model answered."""
    if not inside.heard or type(result) is not ToolMessage or not isinstance(result.content,
                                                                             str):
        return result
    return result.model_copy(update={"content": inside.answer(result.content)})


#: The RAC tool call running in this context, if any (see :class:`_Nest`).
_NEST: ContextVar[_Nest | None] = ContextVar("rac_langgraph_call", default=None)


class _Inside:
    """``with``: a tool call of ``run`` under way in this context (see :class:`_Nest`), and a
    :class:`rac.adapters.Delegation` collecting what the calls of an agent it runs were told
    when they failed for good (the ``with`` gives it)."""

    __slots__ = ("delegation", "nest", "token")

    def __init__(self, run: rac.Run, tool: str, call_id: str | None) -> None:
        self.nest = _Nest(run, tool, call_id)
        self.delegation = Delegation()
        self.token: Token[_Nest | None] | None = None

    def __enter__(self) -> Delegation:
        self.token = _NEST.set(self.nest)
        return self.delegation.__enter__()

    def __exit__(self, *exc: object) -> None:
        self.delegation.__exit__(None, None, None)
        if self.token is not None:
            _NEST.reset(self.token)


def _as_agent_call(run: rac.Run, tool: str, call_id: str | None, scope: str) -> None:
    """A call whose tool runs an agent under RAC: its effects are that agent's calls, each
    logged in ``scope`` and undone by its own compensator, so the call itself is marked
    read-only (a rollback does not name it "cannot be undone" beside the calls it undid). Only a
    call that has no undo of its own and is not irreversible is marked: a declared
    compensation keeps it, and ``irreversible`` keeps its approval's meaning."""
    with run.lock:
        rec = next((r for r in reversed(run.log.records.values())
                    if r.kind is RecordKind.ACTION and r.status is RecordStatus.PENDING
                    and r.tool == tool and (not call_id or r.call_id == call_id)), None)
        if rec is None or rec.read_only or rec.compensable \
                or tool in run.engine.registry.irreversible:
            return
        run.log.update(rec, read_only=True,
                       note=f"runs an agent: its effects are the calls of scope {scope}")
    emit("rac_langgraph.agent_call", run_id=run.run_id, seq=rec.seq, tool=tool, scope=scope)


def _content(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)


def _in_doubt_text(rec: rac.Record, why: str = "") -> str:
    reason = f" ({why})" if why else ""
    return (f"RAC: {rec.tool} was interrupted when the process running this turn stopped: it "
            f"may or may not have taken effect{reason}, so it was not run again. It is in "
            "doubt until `rac recover` settles it; do not assume it happened.")


class _Doubt:
    """A repeated call a crash left in doubt, whose tool declares a lookup to settle it."""

    __slots__ = ("lookup", "record")

    def __init__(self, record: rac.Record, lookup: rac.Lookup) -> None:
        self.record = record
        self.lookup = lookup


#: Record statuses of a call with an intent and no outcome.
_UNSETTLED = (RecordStatus.PENDING, RecordStatus.IN_DOUBT)


def _not_run_text(tool: str) -> str:
    return (f"RAC: {tool} was not run: it was asked for before this turn was rolled back, "
            "on bookings that no longer hold. Ask for it again if it is still wanted.")


def _undone_text(rec: rac.Record) -> str:
    if rec.status is RecordStatus.FAILED:
        return (f"RAC: {rec.tool} did not take effect ({rec.error or 'failed'}), and this turn "
                "was rolled back; it was not run again.")
    if rec.status is RecordStatus.COMPENSATED:
        return (f"RAC: {rec.tool} had taken effect ({_content(rec.result)}) and was undone "
                "when this turn was rolled back; it was not run again.")
    return (f"RAC: {rec.tool} may have taken effect and could not be undone "
            f"({rec.error or rec.status}); it needs attention and was not run again.")


def _batch(request: ToolCallRequest) -> Hashable | None:
    """The batch of a call: the model message that issued it (its id, else its position), in
    the call's thread. None for the only call of its message: a batch refuses the calls of a
    model turn that had not started when a rollback of the run began, and a lone call has no
    such sibling (the core then may take its shortcut for the plainest calls)."""
    state = request.state
    messages = state.get("messages") if isinstance(state, Mapping) else getattr(
        state, "messages", None)
    if not isinstance(messages, list):
        return None
    call_id = request.tool_call.get("id")
    for i in range(len(messages) - 1, -1, -1):
        calls = getattr(messages[i], "tool_calls", None)
        if calls and any(c.get("id") == call_id for c in calls):
            if len(calls) == 1:
                return None
            return batch_key(getattr(messages[i], "id", None) or f"#{i}")
    return None


def _with_args(request: ToolCallRequest, args: dict[str, Any], guard: _Guard
               ) -> ToolCallRequest:
    """``request`` with ``args`` and its tool behind ``guard``."""
    call = request.tool_call
    if args == call["args"]:
        return request.override(tool=guard)  # type: ignore[arg-type]
    return request.override(tool_call={**call, "args": args}, tool=guard)  # type: ignore[arg-type]


class _Guard:
    """A tool as the ToolNode invokes it, noting the exception it raised: a ToolNode that
    handles tool errors (``handle_tool_errors=True``, a message, a handler, exception types)
    turns it into an error message before any wrapper sees it, and RAC must judge the real
    exception (a timeout after the booking committed may have taken effect; a message says
    nothing of that). Everything else is the tool's own."""

    __slots__ = ("raised", "tool")

    def __init__(self, tool: Any) -> None:
        self.tool = tool
        self.raised: BaseException | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.tool, name)

    def invoke(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return self.tool.invoke(*args, **kwargs)
        except Exception as e:
            self.raised = e
            raise

    async def ainvoke(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return await self.tool.ainvoke(*args, **kwargs)
        except Exception as e:
            self.raised = e
            raise

    def reraise(self, result: Any) -> None:
        """Raise what the tool raised if ``result`` is the error message a ToolNode made of
        it (argument validation excepted: that call never ran, see ``InvalidToolCall``)."""
        raised = self.raised
        if raised is not None and isinstance(result, ToolMessage) and result.status == "error" \
                and not isinstance(raised, ValidationError | GraphBubbleUp):
            raise raised


class _Held:
    """What a call's attempts got from the framework (the ``ToolMessage`` or ``Command`` of
    the last one), kept for the model while RAC logs its plain value (so an engine with no
    other plugin keeps the core's shortcut; see :class:`rac_langgraph.results.LangGraphResults`)."""

    __slots__ = ("reply", "value")

    def __init__(self) -> None:
        self.reply: Any = None
        self.value: Any = None

    def own(self, result: ToolResult, request: ToolCallRequest, run: rac.Run,
            guard: _Guard | None = None) -> Any:
        """The requested tool's result, as RAC gets it: its plain value; a hand-off raised as
        control flow (unless the tool is declared read-only: then it is an ordinary result);
        ToolNode's answer to arguments that failed validation raised as a refusal (the tool
        never ran)."""
        if type(result) is ToolMessage or isinstance(result, ToolMessage):
            if result.status == "error" and is_invalid_call(result, request.tool_call["name"]):
                raise InvalidToolCall(result)
        elif isinstance(result, Command) and is_handoff(result) and \
                request.tool_call["name"] not in run.engine.registry.read_only:
            raise HandOff(result)
        return self.keep(result, request, guard)

    def keep(self, result: Any, request: ToolCallRequest, guard: _Guard | None = None) -> Any:
        """Keep ``result`` for the model; its plain value for RAC (a ``Command``'s, by the
        tool message answering this call). An error message a ToolNode made of the tool's
        exception raises that exception instead (see :class:`_Guard`)."""
        if guard is not None:
            guard.reraise(result)
        value = result_value(result, request.tool_call.get("id"))
        if value is None and not isinstance(result, ToolMessage | Command):
            value = result
        self.reply, self.value = result, value
        return value

    def direct(self, request: ToolCallRequest) -> Callable[[str, Any], Any]:
        """``route``'s ``direct``: an alternative only the engine knows answers in a tool
        message of this call."""
        def answered(name: str, raw: Any) -> Any:
            self.reply, self.value = _as_message(request, name, raw), raw
            return raw
        return answered


def _reply(outcome: rac.CallOutcome, request: ToolCallRequest, held: _Held) -> ToolResult:
    """What ToolNode gets for a call RAC ran: the tool's own result, or the recovery report."""
    if outcome.ok:
        if held.reply is not None and outcome.result is held.value:
            return held.reply  # type: ignore[no-any-return]
        # Not the tool's own answer: the effect RAC found by reconciling a call that may have
        # happened (its lookup's item), told to the model as the tool's result.
        return _as_message(request, request.tool_call["name"], outcome.result)
    call = request.tool_call
    return ToolMessage(content=failure_text(outcome), tool_call_id=call["id"],
                       name=call["name"], status="error")


def _tool_of_agent(request: ToolCallRequest, name: str) -> Any:
    """The agent's tool called ``name``, or None."""
    tools = getattr(request.runtime, "tools", None) or ()
    return next((t for t in tools if getattr(t, "name", None) == name), None)


def _for_tool(request: ToolCallRequest, tool: Any, args: dict[str, Any]) -> ToolCallRequest:
    """The request that calls another tool of the agent with ``args`` through the ToolNode (an
    alternative)."""
    return request.override(tool_call={**request.tool_call, "name": tool.name, "args": args},
                            tool=tool)


def _as_message(request: ToolCallRequest, name: str, raw: Any) -> ToolMessage:
    """A tool message for a call RAC made directly (an alternative only the engine knows)."""
    if isinstance(raw, ToolMessage):  # answered to RAC's own call id: re-addressed
        return raw.model_copy(update={"tool_call_id": request.tool_call["id"], "name": name})
    content = raw if isinstance(raw, str) else json.dumps(raw, default=str, ensure_ascii=False)
    return ToolMessage(content=content, tool_call_id=request.tool_call["id"], name=name)
