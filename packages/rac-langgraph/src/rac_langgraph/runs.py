"""Which RAC run a tool call belongs to: one run per agent turn, durable with the thread.

A turn follows LangGraph's own rule for an invocation. With a checkpointer, an invocation that
gives the graph new input writes an ``input`` checkpoint; one that resumes the thread
(``Command(resume=...)``, ``invoke(None, config)`` after a crash or an interrupt) writes
none and goes on from where the thread stopped. So the turn of a tool call is the nearest
``input`` checkpoint behind the step it runs in, on the thread's root graph (agents in
subgraphs of one invocation share it), and the turn's run id is derived from the thread id and
that checkpoint's step number: a resumed invocation finds the unfinished turn's run again, in this
process or, from the log, in a fresh one. Any new input is a new turn, whether it holds a human
message, a tool result or an AI message.

Without a checkpointer a thread cannot resume, and the turn is anchored as before on the graph
state: the thread id of the config and the last human message (its id, which LangGraph's
message reducer assigns), else the step itself. A run the caller opened around the invocation
(``with engine.run(): graph.invoke(...)``) takes precedence over both.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import rac
import rac.mcp
from rac.adapters import RunRegistry, ToolSetCache, registry_of
from rac.events import emit
from rac.leases import claim
from rac.models import RecordKind, RecordStatus, RunStatus
from rac_langgraph import pregel
from rac_langgraph.tools import is_handoff_tool, rac_tool_or_none

TurnKey = tuple[str | None, str, str]
#: Key of ``engine.extensions`` that holds the registry, so it lives and dies with the engine.
_KEY = "rac_langgraph.turns"
#: How many saved checkpoints a walk to the turn's input checkpoint reads at most.
_WALK_LIMIT = 256


def turn_key(state: Any, config: Mapping[str, Any] | None) -> TurnKey:
    """The key of the turn a graph step with ``state`` and ``config`` belongs to, from the
    graph state (see the module's docs; a checkpointed thread's key is found by
    :meth:`TurnRuns.turn_run`)."""
    configurable = config.get("configurable") if config else None
    return _turn_key(state, configurable or _NO_CONFIG)


_NO_CONFIG: Mapping[str, Any] = {}


def _thread(configurable: Mapping[str, Any]) -> str | None:
    thread = configurable.get("thread_id")
    return thread if thread is None or type(thread) is str else str(thread)


def _turn_key(state: Any, configurable: Mapping[str, Any]) -> TurnKey:
    thread = _thread(configurable)
    if type(state) is dict or isinstance(state, Mapping):
        messages = state.get("messages")
    else:
        messages = state if isinstance(state, list) else getattr(state, "messages", None)
    if type(messages) is list or isinstance(messages, Sequence):
        for m in reversed(messages):
            if getattr(m, "type", None) == "human":
                mid = getattr(m, "id", None)
                if mid:
                    return thread, "human", mid if type(mid) is str else str(mid)
                # a message without an id: its position anchors the turn
                return thread, "human", f"#{_position(messages, m)}"
    # No user message to anchor the turn: the step itself is the scope.
    return thread, "step", str(configurable.get("checkpoint_ns") or "")


def _position(messages: Sequence[Any], message: Any) -> int:
    return next(i for i in range(len(messages) - 1, -1, -1) if messages[i] is message)


def turn_run_id(thread: str, anchor: str) -> str:
    """The run id of the turn of ``thread`` whose ``input`` checkpoint has the step number
    ``anchor``: the same in every process."""
    digest = hashlib.sha256(f"{thread}\0{anchor}".encode()).hexdigest()[:24]
    return f"lg-{digest}"


def _checkpointed(config: Mapping[str, Any] | None) -> tuple[Any, str, str] | None:
    """(checkpointer, thread, root checkpoint id) of a step of a checkpointed thread (read
    through :mod:`rac_langgraph.pregel`)."""
    configurable = config.get("configurable") if config else None
    if not configurable:
        return None
    saver = pregel.checkpointer(configurable)
    thread = _thread(configurable)
    root = pregel.root_checkpoint(configurable)
    if saver is None or thread is None or root is None:
        return None
    return saver, thread, root


def _lookup(thread: str, checkpoint_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread, "checkpoint_ns": "",
                             "checkpoint_id": checkpoint_id}}


def _parent(found: Any) -> tuple[bool, str | None]:
    """Whether a checkpoint tuple is an ``input`` checkpoint, and its parent's id."""
    metadata = found.metadata or {}
    if metadata.get("source") == "input":
        return True, None
    parent = found.parent_config
    configurable = parent.get("configurable") if parent else None
    pid = configurable.get("checkpoint_id") if configurable else None
    return False, str(pid) if pid else None


def _input_step(found: Any) -> str:
    """The anchor of a turn: the step number of its ``input`` checkpoint."""
    return str((found.metadata or {}).get("step"))


class Replay:
    """A completed call of a turn, found in the log, that a resumed graph runs again: the
    logged result is given back instead (exactly once)."""

    __slots__ = ("record",)

    def __init__(self, record: rac.Record) -> None:
        self.record = record


class TurnRuns(RunRegistry[TurnKey]):
    """The runs of one engine that its LangGraph adapters opened, keyed by turn (a
    :class:`rac.adapters.RunRegistry`), the agents' tool sets, and the answers given per
    tool call id (for exactly-once replay).

    Thread-safe: parallel tool calls of one turn get the same run. The adapters mark runs
    completed after each tool step; a run stays here, joinable by the rest of its turn, until
    more than ``limit`` newer turns have started (it is then finished if still running, unless
    a call of it is under way) or :meth:`close`.
    """

    def __init__(self, engine: rac.RAC, limit: int = 512) -> None:
        super().__init__(engine, limit)
        self.tool_sets = ToolSetCache(engine, self._convert, limit=limit)
        self._anchors: OrderedDict[str, str] = OrderedDict()  # checkpoint id -> input anchor
        self._answers: OrderedDict[tuple[str, str], Any] = OrderedDict()
        #: run id -> action records of a run found in the log, not matched to a call yet
        self._logged: dict[str, list[rac.Record]] = {}
        #: run id -> what the model must hear first about a run rolled back while it was away
        self._notes: dict[str, str] = {}
        #: ids of runs found in the log with a call a crash left in doubt: never marked
        #: completed here (``rac recover`` settles them)
        self.doubtful: set[str] = set()
        self._memo_lock = threading.Lock()
        #: tool lists whose MCP declarations were registered (by their tools' ids)
        self._mcp_seen: dict[tuple[int, ...], list[Any]] = {}

    def _convert(self, tool: Any) -> rac.Tool | None:
        """An agent tool for the run's tool set; a hand-off tool (langgraph-swarm,
        langgraph-supervisor) is declared read-only on the engine first: it moves the
        conversation and changes nothing to undo."""
        registry = self.engine.registry
        if is_handoff_tool(tool) and tool.name not in registry.read_only \
                and tool.name not in registry.pairs:
            registry.add_read_only(tool.name)
        return rac_tool_or_none(tool)

    # -- finding the turn's run -----------------------------------------------------------------
    def turn_run(self, state: Any, config: Mapping[str, Any] | None, agent_id: str,
                 runtime: Any = None) -> rac.Run:
        """The run of the turn ``state``/``config`` belong to (opened, or found in the log,
        on first use); ``runtime`` is the step's (it tells whether the thread is persisted)."""
        found = _checkpointed(config)
        if found is not None:
            saver, thread, root = found
            anchor = self._anchor(saver, thread, root) or pregel.loop_start(config or {})
            if anchor is not None:
                return self._durable(thread, anchor, agent_id)
        elif runtime is not None:
            pregel.internals_missing(runtime)
        return self.run_for(turn_key(state, config), agent_id=agent_id)

    async def aturn_run(self, state: Any, config: Mapping[str, Any] | None,
                        agent_id: str, runtime: Any = None) -> rac.Run:
        """:meth:`turn_run` for the async path (an async checkpointer is read with ``await``)."""
        found = _checkpointed(config)
        if found is not None:
            saver, thread, root = found
            anchor = await self._aanchor(saver, thread, root) or pregel.loop_start(config or {})
            if anchor is not None:
                return self._durable(thread, anchor, agent_id)
        elif runtime is not None:
            pregel.internals_missing(runtime)
        return self.run_for(turn_key(state, config), agent_id=agent_id)

    def _durable(self, thread: str, anchor: str, agent_id: str) -> rac.Run:
        run_id = turn_run_id(thread, anchor)
        return self.run_for((thread, "input", anchor), opener=lambda: self._open(run_id,
                                                                                agent_id))

    def _open(self, run_id: str, agent_id: str) -> rac.Run:
        """The turn's run: new, or the one the log holds (a thread resumed in a fresh process,
        or after this registry let the run go)."""
        store = self.engine.store
        info = store.get_run(run_id)
        if info is None:
            return self.engine.run(run_id=run_id, agent_id=agent_id)
        if not claim(self.engine, info):
            raise rac.RACError(
                f"the turn's run {run_id} is held by {info.owner}, a process whose lease has "
                "not run out: resume the thread there, or once that process has stopped")
        records = store.get_records(run_id)
        run = rac.Run.from_log(self.engine, info, records)
        run.log.take_over(self.engine.owner, self.engine.leases.lease_seconds)
        actions = [r for r in records if r.kind is RecordKind.ACTION]
        self._logged[run_id] = actions
        if any(r.status in _UNSETTLED for r in actions):
            self.doubtful.add(run_id)
        if info.status in ROLLED_BACK:
            self._notes[run_id] = rolled_back_note(actions)
        emit("rac_langgraph.turn_resumed", run_id=run_id, status=str(info.status),
                  records=len(records))
        return run

    def _anchor(self, saver: Any, thread: str, checkpoint_id: str) -> str | None:
        """The ``input`` checkpoint behind ``checkpoint_id`` (the checkpoint a step runs
        from). LangGraph may still be saving the newest checkpoints while the step runs
        (``durability="async"``): the walk follows parent links from the step's checkpoint
        when it is saved, else the thread's saved checkpoints older than it, newest first."""
        hit = self._anchors.get(checkpoint_id)
        if hit is not None:
            return hit
        found = saver.get_tuple(_lookup(thread, checkpoint_id))
        if found is not None:
            return self._walk(thread, checkpoint_id, [found], saver)
        older = saver.list({"configurable": {"thread_id": thread, "checkpoint_ns": ""}},
                           before=_lookup(thread, checkpoint_id), limit=_WALK_LIMIT)
        return self._walk(thread, checkpoint_id, older, None)

    async def _aanchor(self, saver: Any, thread: str, checkpoint_id: str) -> str | None:
        """Async :meth:`_anchor`."""
        hit = self._anchors.get(checkpoint_id)
        if hit is not None:
            return hit
        found = await saver.aget_tuple(_lookup(thread, checkpoint_id))
        if found is not None:
            chain = [found]
            while True:
                is_input, parent = _parent(chain[-1])
                if is_input or parent is None or parent in self._anchors:
                    break
                nxt = await saver.aget_tuple(_lookup(thread, parent))
                if nxt is None:
                    break
                chain.append(nxt)
            return self._walk(thread, checkpoint_id, chain, None)
        older = [c async for c in saver.alist(
            {"configurable": {"thread_id": thread, "checkpoint_ns": ""}},
            before=_lookup(thread, checkpoint_id), limit=_WALK_LIMIT)]
        return self._walk(thread, checkpoint_id, older, None)

    def _walk(self, thread: str, start: str, chain: Any, saver: Any) -> str | None:
        """Follow checkpoint tuples (``chain``, newest first; with ``saver``, parents are
        fetched as needed) to the nearest ``input`` one or a checkpoint already resolved."""
        walked = [start]
        anchor: str | None = None
        items = iter(chain)
        current = next(items, None)
        while current is not None:
            cid = str(current.config["configurable"]["checkpoint_id"])
            cached = self._anchors.get(cid)
            if cached is not None:
                anchor = cached
                break
            walked.append(cid)
            is_input, parent = _parent(current)
            if is_input:
                anchor = _input_step(current)
                break
            if parent is not None and parent in self._anchors:
                anchor = self._anchors[parent]
                break
            current = next(items, None)
            if current is None and saver is not None and parent is not None:
                current = saver.get_tuple(_lookup(thread, parent))
        return self._remember(walked, anchor)

    def _remember(self, walked: list[str], anchor: str | None) -> str | None:
        if anchor is not None and walked:
            with self._memo_lock:
                for cid in walked:
                    self._anchors[cid] = anchor
                while len(self._anchors) > 8 * self.limit:
                    self._anchors.popitem(last=False)
        return anchor

    # -- exactly-once answers ------------------------------------------------------------------
    def answered(self, run: rac.Run, call_id: str | None, tool: str,
                 args: Mapping[str, Any]) -> Any:
        """What a call already got, if the turn ran it before: the answer this process gave
        to ``call_id``, or a :class:`Replay` of the matching completed (or undone) record of a
        run read from the log; None if the call is new."""
        if call_id is None:
            return None
        answer = self._answers.get((run.run_id, call_id))
        if answer is not None:
            return answer
        logged = self._logged.get(run.run_id)
        if not logged:
            return None
        with self._memo_lock:
            for i, rec in enumerate(logged):
                if rec.tool == tool and rec.args == dict(args) and rec.status in _SETTLED:
                    del logged[i]
                    return Replay(rec)
        return None

    def in_doubt(self, run: rac.Run, tool: str, args: Mapping[str, Any]) -> rac.Record | None:
        """The logged call of a run read from the log that a crash interrupted (an intent
        with no outcome) and that this call repeats, if any."""
        logged = self._logged.get(run.run_id)
        if not logged:
            return None
        with self._memo_lock:
            for i, rec in enumerate(logged):
                if rec.tool == tool and rec.args == dict(args) and rec.status in _UNSETTLED:
                    del logged[i]
                    return rec
        return None

    def settled(self, run: rac.Run) -> None:
        """A call of ``run`` left in doubt was settled (by its lookup): once none is left,
        the run may be marked completed again after its steps."""
        if run.run_id in self.doubtful and not any(
                r.kind is RecordKind.ACTION and r.status in _UNSETTLED for r in run.records()):
            self.doubtful.discard(run.run_id)

    def take_note(self, run: rac.Run) -> str | None:
        """Once per run: what the model must hear before anything else about a turn that was
        rolled back while the thread was away (recovery after a crash), or None."""
        if not self._notes:
            return None
        with self._memo_lock:
            return self._notes.pop(run.run_id, None)

    def answer(self, run: rac.Run, call_id: str | None, reply: Any) -> None:
        """Remember the answer a completed call got (bounded: least recently used out)."""
        if call_id is None:
            return
        with self._memo_lock:
            self._answers[(run.run_id, call_id)] = reply
            while len(self._answers) > 16 * self.limit:
                self._answers.popitem(last=False)

    # -- the rest ---------------------------------------------------------------------------------
    def offer_tools(self, run: rac.Run, tools: Sequence[Any], agent_id: str | None = None
                    ) -> None:
        """Make the agent's tools callable by ``run`` (compensators, alternatives), as the
        tools of ``agent_id``: a call that agent made is undone through its own tool of that
        name, even when another agent of the run has a different tool of the same name. The
        MCP declarations of a tool list not seen before are registered first."""
        if not tools:
            return
        key = tuple(map(id, tools))
        if key not in self._mcp_seen:
            self._register_mcp(key, tools)
        run.add_tools(self.tool_sets.tool_set(list(tools)), agent_id=agent_id)

    def _register_mcp(self, key: tuple[int, ...], tools: Sequence[Any]) -> None:
        """Register what langchain-mcp-adapters' tools among ``tools`` declare in their MCP
        metadata (:func:`rac.mcp.register_offered_tools`), once per tool list."""
        rac.mcp.register_offered_tools(self.engine, tools)
        if len(self._mcp_seen) >= self.limit:
            self._mcp_seen.clear()
        self._mcp_seen[key] = list(tools)  # the tools are kept: the ids stay theirs

    # -- telling a resumed model ----------------------------------------------------------------
    def resumed_note(self, config: Mapping[str, Any] | None, agent_id: str) -> str | None:
        """Once per turn: what the model must hear before it acts, at the first step of an
        invocation of a checkpointed thread whose turn recovery rolled back while the thread
        was away (None otherwise). The turn's run is found as a tool call would find it (from
        the log, in a fresh process), so a model that makes no tool call is told too."""
        found = self._first_step(config)
        if found is None:
            return None
        saver, thread, root = found
        anchor = self._anchor(saver, thread, root) or pregel.loop_start(config or {})
        return None if anchor is None else self.take_note(self._durable(thread, anchor,
                                                                         agent_id))

    async def aresumed_note(self, config: Mapping[str, Any] | None,
                            agent_id: str) -> str | None:
        """:meth:`resumed_note` for the async path."""
        found = self._first_step(config)
        if found is None:
            return None
        saver, thread, root = found
        anchor = await self._aanchor(saver, thread, root) or pregel.loop_start(config or {})
        return None if anchor is None else self.take_note(self._durable(thread, anchor,
                                                                         agent_id))

    @staticmethod
    def _first_step(config: Mapping[str, Any] | None) -> tuple[Any, str, str] | None:
        """The checkpointed thread of a step that is the first its invocation runs (a resumed
        model step is one), else None."""
        found = _checkpointed(config)
        if found is None or config is None:
            return None
        start = pregel.loop_start(config)
        metadata = config.get("metadata") or {}
        step = metadata.get("langgraph_step")
        if start is None or not isinstance(step, int) or step != int(start) + 1:
            return None
        return found

    def end_turn(self, state: Any, config: Mapping[str, Any] | None) -> None:
        """Mark the run of this turn completed (see ``rac.Run.finish``); it stays joinable by
        other agents of the turn."""
        found = _checkpointed(config)
        if found is not None:
            anchor = self._anchor(*found) or pregel.loop_start(config or {})
            if anchor is not None:
                self.finish((found[1], "input", anchor))
                return
        self.finish(turn_key(state, config))


#: Record statuses of a call that ran to an outcome: replayed, never run again.
_SETTLED = (RecordStatus.COMPLETED, RecordStatus.COMPENSATING, RecordStatus.COMPENSATED,
            RecordStatus.COMPENSATION_FAILED, RecordStatus.RESOLVED)
#: Record statuses of a call with an intent and no outcome.
_UNSETTLED = (RecordStatus.PENDING, RecordStatus.IN_DOUBT)
#: Run statuses of a turn that was rolled back.
ROLLED_BACK = (RunStatus.COMPENSATED, RunStatus.NEEDS_ATTENTION)


def _brief(rec: rac.Record) -> str:
    result = rec.result
    if isinstance(result, Mapping):
        ids = [str(v) for k, v in result.items() if k.endswith("id") and v]
        if ids:
            return f"{rec.tool} {ids[0]}"
    return rec.tool


def rolled_back_note(actions: Sequence[rac.Record]) -> str:
    """What the model is told about a turn that recovery rolled back while the thread was
    away: what was undone, and what is still live or in doubt."""
    undone = [_brief(r) for r in reversed(actions) if r.status is RecordStatus.COMPENSATED]
    left = [_brief(r) for r in reversed(actions)
            if r.status in (RecordStatus.COMPENSATION_FAILED, *_UNSETTLED)]
    text = ("RAC: this turn was rolled back after the process running it stopped "
            "(rac recover). ")
    text += f"Undone, newest first: {', '.join(undone)}. " if undone else "Nothing was undone. "
    if left:
        text += (f"Not undone (may be live, needs attention): {', '.join(left)}. ")
    return text + "Results you were given for these calls no longer hold."


def runs_of(engine: rac.RAC) -> TurnRuns:
    """The turn registry of ``engine``, shared by every adapter object that uses the engine."""
    return registry_of(engine, _KEY, TurnRuns)
