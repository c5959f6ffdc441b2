"""Which RAC run a tool call belongs to: one run per agent turn, durable with the thread.

A turn follows LangGraph's own rule for an invocation. With a checkpointer, an invocation that
gives the graph new input writes an ``input`` checkpoint; one that resumes the thread
(``Command(resume=...)``, ``invoke(None, config)`` after a crash or an interrupt) writes
none and goes on from where the thread stopped. So the turn of a tool call is the nearest
``input`` checkpoint behind the step it runs in, on the thread's root graph (agents in
subgraphs of one invocation share it), and the turn's run id is derived from the thread id and
that checkpoint's id: a resumed invocation finds the unfinished turn's run again, in this
process or, from the log, in a fresh one. Any new input is a new turn, whether it holds a human
message, a tool result or an AI message. Checkpoint ids are unique (LangGraph makes them from
the time and randomness), so a thread id used again (a restarted ``InMemorySaver``, a thread
deleted and reused, two agents sharing a session id over one log) starts new runs and never
meets an old conversation's; step numbers, which every new thread starts again, are not used.

Without a checkpointer a thread cannot resume, and the turn is anchored on the graph state:
the thread id of the config and the last human message (its id, which LangGraph's message
reducer assigns fresh to every message given without one), else the invocation itself (all
its tasks, ``Send`` branches too, share one run). A run the caller opened around the
invocation (``with engine.run(): graph.invoke(...)``) takes precedence over both.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import rac
import rac.mcp
from rac.adapters import RunRegistry, ToolSetCache, registry_of
from rac.clock import Clock, SystemClock
from rac.events import emit
from rac.leases import claim
from rac.models import RecordKind, RecordStatus, RunStatus
from rac_langgraph import cache, pregel
from rac_langgraph.tools import is_handoff_tool, rac_tool_or_none

TurnKey = tuple[str | None, str, Any]
T = TypeVar("T")
#: Key of ``engine.extensions`` that holds the registry, so it lives and dies with the engine.
_KEY = "rac_langgraph.turns"
#: How long a step waits, at most, for LangGraph to save the checkpoint it runs from (saves run
#: in the background with ``durability="async"``), in seconds; then the turn is found in this
#: process only (once per invocation: its later steps know its anchor).
_SAVE_WAIT = 30.0
#: The clock of that wait: real time, whatever the engine's clock (the save is made by
#: LangGraph's own background thread, in real time); a test may put a
#: :class:`rac.testing.VirtualClock` here to count the wait instead of sleeping it.
SAVE_CLOCK: Clock = SystemClock()
#: The metadata filter of a search for ``input`` checkpoints (new input: a turn's anchor).
_INPUT: dict[str, Any] = {"source": "input"}


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
    # No user message to anchor the turn: the invocation is the turn (the key holds the
    # invocation's object, so its identity is not reused while the run is kept).
    inv = pregel.invocation(configurable)
    if inv is not None:
        return thread, "invocation", inv
    return thread, "step", str(configurable.get("checkpoint_ns") or "")


def _position(messages: Sequence[Any], message: Any) -> int:
    return next(i for i in range(len(messages) - 1, -1, -1) if messages[i] is message)


def turn_run_id(thread: str, anchor: str) -> str:
    """The run id of the turn of ``thread`` whose ``input`` checkpoint has the id ``anchor``:
    the same in every process, and never another thread's or conversation's."""
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


def _may_be_saved(config: Mapping[str, Any] | None) -> bool:
    """Whether LangGraph saves the checkpoints of this invocation while it runs (not with
    ``durability="exit"``)."""
    return pregel.durability((config or {}).get("configurable") or {}) != "exit"


#: How many saved checkpoints before a step's are read to find the one before its invocation.
_OWN_STEPS = 8
#: The step of a thread's first ``input`` checkpoint (LangGraph numbers it -1).
_FIRST_INPUT = "-1"
#: How many earlier turns of a thread (its ``input`` checkpoints) a new invocation checks for a
#: rollback the model has not heard of.
_EARLIER_TURNS = 8


def _before_invocation(older: Any, config: Mapping[str, Any] | None) -> Any:
    """The newest of the saved checkpoints ``older`` (newest first) that an earlier
    invocation made (its step is before the one the running invocation started at), or
    None."""
    start = pregel.loop_start(config or {})
    if start is None:
        return None
    for c in older:
        step = (c.metadata or {}).get("step")
        if isinstance(step, int) and step < int(start):
            return c
    return None


def _thread_config(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}


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


def _cid(found: Any) -> str:
    """A checkpoint tuple's checkpoint id."""
    return str(found.config["configurable"]["checkpoint_id"])


@dataclass(slots=True)
class _Get:
    """Read one checkpoint tuple (``saver.get_tuple``; None if it is not saved)."""

    config: dict[str, Any]


@dataclass(slots=True)
class _List:
    """At most ``limit`` saved checkpoints of ``thread`` older than ``before``, newest first,
    as a list (a saver's generator may hold its lock until it is exhausted)."""

    thread: str
    before: dict[str, Any]
    limit: int
    #: only checkpoints whose metadata holds these values
    filter: dict[str, Any] | None = None


@dataclass(slots=True)
class _Log:
    """Read RAC's log: ``read()`` (off the event loop on the async path when the store
    blocks)."""

    read: Callable[[], Any]


@dataclass(slots=True)
class _Sleep:
    """Wait ``seconds`` on :data:`SAVE_CLOCK`."""

    seconds: float


#: A search over the checkpointer written once for both paths: it yields the reads and waits
#: it needs, and :func:`_drive` (blocking) or :func:`_adrive` (async) performs them.
_Reads = Generator[_Get | _List | _Log | _Sleep, Any, T]


def advance(flow: Generator[Any, Any, Any], send: Any) -> tuple[bool, Any]:
    """(True, the result) once ``flow`` (a generator written once for the blocking and the
    async path, which yields what it needs done) is done, else (False, what it wants next)."""
    try:
        return False, flow.send(send)
    except StopIteration as stop:
        return True, stop.value


def _drive(reads: _Reads[T], saver: Any) -> T:
    """Run ``reads`` with the checkpointer's blocking methods."""
    done, want = advance(reads, None)
    while not done:
        if isinstance(want, _Log):
            got = want.read()
        elif isinstance(want, _Get):
            got = saver.get_tuple(want.config)
        elif isinstance(want, _List):
            got = list(saver.list(_thread_config(want.thread), before=want.before,
                                  limit=want.limit, filter=want.filter))
        else:
            SAVE_CLOCK.sleep(want.seconds)
            got = None
        done, want = advance(reads, got)
    return want  # type: ignore[no-any-return]


async def _adrive(reads: _Reads[T], saver: Any, offload: bool) -> T:
    """Run ``reads`` with the checkpointer's async methods; RAC's log is read on a worker
    thread when ``offload`` (its store blocks)."""
    done, want = advance(reads, None)
    while not done:
        if isinstance(want, _Log):
            got = await asyncio.to_thread(want.read) if offload else want.read()
        elif isinstance(want, _Get):
            got = await saver.aget_tuple(want.config)
        elif isinstance(want, _List):
            got = [c async for c in saver.alist(_thread_config(want.thread),
                                                before=want.before, limit=want.limit,
                                                filter=want.filter)]
        else:
            await SAVE_CLOCK.asleep(want.seconds)
            got = None
        done, want = advance(reads, got)
    return want  # type: ignore[no-any-return]


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
        #: invocation (its object, see :func:`rac_langgraph.pregel.invocation`) -> anchor
        self._invocations: OrderedDict[Any, str] = OrderedDict()
        #: thread id -> the key of its newest turn in this process (for :meth:`end_turn`)
        self._latest: OrderedDict[str, TurnKey] = OrderedDict()
        #: (run id, agent id, tool call id) -> the answer the call got in this process
        self._answers: OrderedDict[tuple[str, str, str], Any] = OrderedDict()
        #: run id -> action records of a run found in the log, not matched to a call yet
        self._logged: dict[str, list[rac.Record]] = {}
        #: first checkpoints of new turns checked for an earlier turn's rollback
        self._checked: OrderedDict[str, bool] = OrderedDict()
        #: ids of earlier turns' runs whose rollback a later turn was told of in this process
        self._announced: OrderedDict[str, bool] = OrderedDict()
        #: ids of runs read from the log that were rolled back (by recovery)
        self._rolled_back: set[str] = set()
        #: run id -> what the model must hear first about a run rolled back while it was away
        self._notes: dict[str, str] = {}
        #: invocations (see :func:`rac_langgraph.pregel.invocation`) that asked for their run
        self._opened_by: OrderedDict[Any, bool] = OrderedDict()
        #: (run id, tool call id) of calls asked for before the model heard that their turn
        #: was rolled back while the thread was away (see :meth:`unheard`)
        self._unheard: OrderedDict[tuple[str, str], bool] = OrderedDict()
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
            return _drive(self._find_turn(found, state, config, agent_id), found[0])
        return self._turn_in_process(state, config, agent_id, runtime)

    async def aturn_run(self, state: Any, config: Mapping[str, Any] | None,
                        agent_id: str, runtime: Any = None) -> rac.Run:
        """:meth:`turn_run` for the async path (an async checkpointer is read with ``await``)."""
        found = _checkpointed(config)
        if found is not None:
            return await _adrive(self._find_turn(found, state, config, agent_id), found[0],
                                 self._offloads)
        return self._turn_in_process(state, config, agent_id, runtime)

    def _find_turn(self, found: tuple[Any, str, str], state: Any,
                   config: Mapping[str, Any] | None, agent_id: str) -> _Reads[rac.Run]:
        """:meth:`turn_run` on a checkpointed thread, its reads yielded (see :func:`_drive`)."""
        _saver, thread, root = found
        anchor = yield from self._find_anchor(thread, root, config, True)
        run = yield from self._find_durable(thread, anchor, agent_id, config)
        if self._first_check(config, root):
            self._keep_note(run, (yield from self._find_earlier(thread, root, config, state)))
        return run

    def _turn_in_process(self, state: Any, config: Mapping[str, Any] | None, agent_id: str,
                         runtime: Any) -> rac.Run:
        if runtime is not None:
            pregel.internals_missing(runtime)
        key = turn_key(state, config)
        self._note_latest(key)
        return self.run_for(key, agent_id=agent_id)

    def _find_durable(self, thread: str, anchor: str, agent_id: str,
                      config: Mapping[str, Any] | None) -> _Reads[rac.Run]:
        """:meth:`_durable`; the first time, opening the run reads the log (yielded). A run
        this process holds, met at the first step of another invocation of its turn (the
        thread resumed here: an interrupt answered, a person's approval), is checked against
        the log once (see :meth:`_current`)."""
        key = (thread, "input", anchor)
        first = self._first_of(config)
        if key in self:
            if not first:
                return self._durable(thread, anchor, agent_id)
            run: rac.Run = yield _Log(lambda: self._current(key, agent_id))
            return run
        run = yield _Log(lambda: self._durable(thread, anchor, agent_id))
        return run

    def _first_of(self, config: Mapping[str, Any] | None) -> bool:
        """True the first time a step of an invocation asks for its turn's run."""
        inv = pregel.invocation((config or {}).get("configurable") or {})
        if inv is None or inv in self._opened_by:
            return False
        with self._memo_lock:
            self._opened_by[inv] = True
            while len(self._opened_by) > self.limit:
                self._opened_by.popitem(last=False)
        return True

    def _current(self, key: TurnKey, agent_id: str) -> rac.Run:
        """The run of ``key`` as the log has it now: the one this process holds, unless
        another process took it over or rolled it back while the thread was paused (an
        operator's ``rac undo``, ``rac recover``): then it is opened again from the log, so
        the turn hears what was undone and never writes over the new holder."""
        held = self.get(key)
        if held is not None and not held.busy:
            info = self.engine.store.get_run(held.run_id)
            if info is not None and (info.owner != held.log.owner or (
                    info.status in ROLLED_BACK and held.status not in ROLLED_BACK)):
                self.forget(key)
                emit("rac_langgraph.turn_changed_meanwhile", run_id=held.run_id,
                     status=str(info.status), owner=info.owner)
        thread, _, anchor = key
        assert thread is not None
        return self._durable(thread, str(anchor), agent_id)

    @property
    def _offloads(self) -> bool:
        """Whether the log's reads block (a disk, a server): then the async path makes them on
        a worker thread."""
        return bool(getattr(self.engine.store, "blocking", True))

    def _durable(self, thread: str, anchor: str, agent_id: str) -> rac.Run:
        run_id = turn_run_id(thread, anchor)
        key = (thread, "input", anchor)
        self._note_latest(key)
        return self.run_for(key, opener=lambda: self._open(run_id, agent_id))

    def _note_latest(self, key: TurnKey) -> None:
        thread = key[0]
        if thread is None or self._latest.get(thread) == key:
            return
        with self._memo_lock:
            self._latest[thread] = key
            self._latest.move_to_end(thread)
            while len(self._latest) > self.limit:
                self._latest.popitem(last=False)

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
            self._rolled_back.add(run_id)
            self._notes[run_id] = Note(rolled_back_note(actions), run_id)
            cache.rolled_back()
        emit("rac_langgraph.turn_resumed", run_id=run_id, status=str(info.status),
                  records=len(records))
        return run

    def _anchor(self, saver: Any, thread: str, checkpoint_id: str,
                config: Mapping[str, Any] | None, *, wait: bool = True) -> str:
        """The id of the ``input`` checkpoint behind ``checkpoint_id`` (the checkpoint a step
        runs from), or the oldest checkpoint of its lineage when none is.

        Every step of one invocation has its anchor, so once it is found for a step this
        process reads nothing for the others. The first node's step of new input (where a
        create_agent's model hook runs) is told it by the running loop
        (:func:`rac_langgraph.pregel.new_input_checkpoint`), with no read. Else, at the
        invocation's first step that needs it, the newest saved ``input`` checkpoint older than the step's, if it is the
        invocation's own (its step is the one the invocation started at: new input, or a
        thread resumed from its ``input`` checkpoint), one read; else the walk up the saved
        lineage. LangGraph may still be saving the newest checkpoints while a step runs
        (``durability="async"``), or never save them (``"exit"``, a checkpointer that loses
        writes): a step whose checkpoint is not saved waits for the save (saves are made in
        order, so the lineage is then saved too), then walks; never saved, its anchor is this
        process's for the invocation (its checkpoint's id)."""
        return _drive(self._find_anchor(thread, checkpoint_id, config, wait), saver)

    def _find_anchor(self, thread: str, checkpoint_id: str, config: Mapping[str, Any] | None,
                     wait: bool) -> _Reads[str]:
        """:meth:`_anchor`'s search, written once: it yields the checkpointer reads and waits
        it needs (see :func:`_drive`)."""
        hit = self._anchors.get(checkpoint_id) or self._known(checkpoint_id, config)
        if hit is not None:
            return hit
        own_input = pregel.new_input_checkpoint(config or _NO_CONFIG, checkpoint_id)
        if own_input is not None:  # named by the running loop: nothing to read
            return self._remember([checkpoint_id, own_input], own_input, config)
        own = yield from self._find_own_input(thread, checkpoint_id, config)
        if own is not None:
            return own
        lookup = _lookup(thread, checkpoint_id)
        found = yield _Get(lookup)
        if found is None:
            if wait and _may_be_saved(config):
                found = yield from self._wait_saved(thread, checkpoint_id, config)
                if isinstance(found, str):
                    return found
            if found is None:
                return self._remember([checkpoint_id], checkpoint_id, config)
        chain = [found]
        while True:
            is_input, parent = _parent(chain[-1])
            if is_input or parent is None or parent in self._anchors:
                break
            nxt = yield _Get(_lookup(thread, parent))
            if nxt is None:
                break
            chain.append(nxt)
        return self._walk(chain, config)

    def _wait_saved(self, thread: str, checkpoint_id: str, config: Mapping[str, Any] | None
                    ) -> _Reads[Any]:
        """Wait, at most ``_SAVE_WAIT`` on :data:`SAVE_CLOCK`, for LangGraph's background save of
        a step's checkpoint (``durability="async"``: on a busy machine it may come well after
        the step starts): the saved checkpoint tuple, or the invocation's own ``input``
        checkpoint's id when a saver that keeps only inputs saves that first (see
        :meth:`_own_input`), or None when neither came in time. Its reads and sleeps are
        yielded (see :func:`_drive`)."""
        lookup = _lookup(thread, checkpoint_id)
        deadline = SAVE_CLOCK.now() + _SAVE_WAIT
        pause = 0.0005
        while SAVE_CLOCK.now() < deadline:
            yield _Sleep(pause)
            pause = min(pause * 2, 0.05)
            found = yield _Get(lookup)
            if found is not None:
                return found
            own = yield from self._find_own_input(thread, checkpoint_id, config)
            if own is not None:
                return own
        return None

    def _known(self, checkpoint_id: str, config: Mapping[str, Any] | None) -> str | None:
        """The anchor of a step when this process knows it: the invocation's, found at an
        earlier step (every step of one invocation belongs to one turn)."""
        inv = pregel.invocation((config or {}).get("configurable") or {})
        anchor = self._invocations.get(inv) if inv is not None else None
        return None if anchor is None else self._remember([checkpoint_id], anchor, config)

    def _find_own_input(self, thread: str, checkpoint_id: str,
                        config: Mapping[str, Any] | None) -> _Reads[str | None]:
        """The invocation's own ``input`` checkpoint, if it is saved (see :meth:`_own_input`),
        in one read: the newest saved ``input`` checkpoint older than ``checkpoint_id``."""
        if pregel.loop_start(config or {}) is None:
            return None
        older = yield _List(thread, _lookup(thread, checkpoint_id), 1, _INPUT)
        return self._own_input(older, checkpoint_id, config)

    def _own_input(self, older: Any, checkpoint_id: str,
                   config: Mapping[str, Any] | None) -> str | None:
        """The invocation's own ``input`` checkpoint among the saved checkpoints ``older``
        than a step's unsaved one (newest first), or None: the newest saved ``input``
        checkpoint, if its step is the one the invocation started at."""
        start = pregel.loop_start(config or {})
        for c in older:
            if (c.metadata or {}).get("source") == "input":
                if start is not None and str((c.metadata or {}).get("step")) == start:
                    return self._remember([checkpoint_id, _cid(c)], _cid(c), config)
                return None
        return None

    def _walk(self, chain: Sequence[Any], config: Mapping[str, Any] | None) -> str:
        """The anchor a lineage of saved checkpoint tuples (newest first, each the parent of
        the one before) leads to: its ``input`` checkpoint's id, an anchor already known for
        the last one's parent, else the id of the oldest one."""
        last = chain[-1]
        is_input, parent = _parent(last)
        if is_input:
            anchor = _cid(last)
        elif parent is not None and parent in self._anchors:
            anchor = self._anchors[parent]
        else:
            anchor = _cid(last)
        return self._remember([_cid(c) for c in chain], anchor, config)

    def _remember(self, walked: list[str], anchor: str,
                  config: Mapping[str, Any] | None) -> str:
        inv = pregel.invocation((config or {}).get("configurable") or {})
        with self._memo_lock:
            for cid in walked:
                self._anchors[cid] = anchor
            while len(self._anchors) > 8 * self.limit:
                self._anchors.popitem(last=False)
            if inv is not None:
                self._invocations[inv] = anchor
                self._invocations.move_to_end(inv)
                while len(self._invocations) > self.limit:
                    self._invocations.popitem(last=False)
        return anchor

    # -- exactly-once answers ------------------------------------------------------------------
    def answered(self, run: rac.Run, call_id: str | None, agent: str) -> Any:
        """The answer this process gave to ``agent``'s call ``call_id`` in ``run``, or None."""
        if call_id is None:
            return None
        return self._answers.get((run.run_id, agent, call_id))

    def logged_call(self, run: rac.Run, call_id: str | None, tool: str,
                    args: Mapping[str, Any], state: Any, agent: str) -> rac.Record | None:
        """The logged outcome of a call that a run read from the log already made (a resumed
        graph repeats it), or None for a new call.

        A call is its ``tool_call_id`` (:attr:`rac.Record.call_id`) among ``agent``'s calls:
        two identical calls of a turn are two calls, and both run. A logged call whose id no message of ``state``
        holds any more (the step that made it was lost with the checkpoint, and the model,
        asked again, made it anew) is matched by tool and arguments. The record returned is
        the call's last (an alternative's, if one replaced the tool); in a run that was not
        rolled back, a call that failed without effect (an interrupt's pause) is new again."""
        logged = self._logged.get(run.run_id)
        if not logged:
            return None
        rolled_back = run.run_id in self._rolled_back
        with self._memo_lock:
            mine = [r for r in logged
                    if call_id and r.call_id == call_id and r.agent_id == agent]
            if not mine:
                wanted = dict(args)
                present: set[str] | None = None
                for rec in logged:
                    if rec.tool != tool or rec.args != wanted or rec.agent_id != agent:
                        continue
                    if rec.call_id:
                        if present is None:
                            present = _call_ids(state)
                        if rec.call_id in present:
                            continue  # another call of the turn's messages: not this one
                        mine = [r for r in logged
                                if r.call_id == rec.call_id and r.agent_id == agent]
                    else:
                        mine = [rec]
                    break
            if not mine:
                return None
            last = max(mine, key=lambda r: r.seq)
            if not rolled_back and last.status not in (*_SETTLED, *_UNSETTLED):
                return None
            for rec in mine:
                logged.remove(rec)
            return last

    def settled(self, run: rac.Run) -> None:
        """A call of ``run`` left in doubt was settled (by its lookup): once none is left,
        the run may be marked completed again after its steps."""
        if run.run_id in self.doubtful and not any(
                r.kind is RecordKind.ACTION and r.status in _UNSETTLED for r in run.records()):
            self.doubtful.discard(run.run_id)

    def unheard(self, run: rac.Run, call_id: str | None, state: Any) -> bool:
        """Whether a new call of ``run`` (one its log does not hold) was asked for before the
        model heard that the turn was rolled back while the thread was away (paused for a
        person, or stopped by a crash): the run was found rolled back in the log and the model
        has not been told yet, or the call is of the model message whose first call was
        answered with that news. Such a call was decided on a world that is gone: it is not
        run (the model, told, may ask again)."""
        run_id = run.run_id
        if call_id and (run_id, call_id) in self._unheard:
            return True
        if run_id not in self._rolled_back or run_id not in self._notes:
            return False
        with self._memo_lock:
            for cid in _sibling_ids(state, call_id):
                self._unheard[(run_id, cid)] = True
            while len(self._unheard) > 16 * self.limit:
                self._unheard.popitem(last=False)
        return True

    def take_note(self, run: rac.Run) -> str | None:
        """Once per run: what the model must hear before anything else about a turn that was
        rolled back while the thread was away (recovery after a crash), or None."""
        if not self._notes:
            return None
        with self._memo_lock:
            return self._notes.pop(run.run_id, None)

    def answer(self, run: rac.Run, call_id: str | None, reply: Any, agent: str) -> None:
        """Remember the answer ``agent``'s completed call got (bounded: least recently used
        out)."""
        if call_id is None:
            return
        with self._memo_lock:
            self._answers[(run.run_id, agent, call_id)] = reply
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
    def resumed_note(self, config: Mapping[str, Any] | None, agent_id: str,
                     state: Any = None) -> str | None:
        """Once per turn: what the model must hear before it acts, at the first step of an
        invocation of a checkpointed thread, when recovery rolled back the turn it resumes, or
        the thread's previous turn after that turn ended (None otherwise). The runs are found
        as a tool call would find them (from the log, in a fresh process), so a model that
        makes no tool call is told too. ``state`` is the step's (its messages tell whether the
        model already heard of a rollback)."""
        found = self._first_step(config)
        if found is None:
            return None
        return _drive(self._find_resumed_note(found, config, agent_id, state), found[0])

    async def aresumed_note(self, config: Mapping[str, Any] | None, agent_id: str,
                            state: Any = None) -> str | None:
        """:meth:`resumed_note` for the async path."""
        found = self._first_step(config)
        if found is None:
            return None
        return await _adrive(self._find_resumed_note(found, config, agent_id, state),
                             found[0], self._offloads)

    def _find_resumed_note(self, found: tuple[Any, str, str, bool],
                           config: Mapping[str, Any] | None, agent_id: str,
                           state: Any) -> _Reads[str | None]:
        """:meth:`resumed_note`'s search, its reads yielded (see :func:`_drive`)."""
        _saver, thread, root, resumed = found
        note = None
        came_from: str | None = root
        if not resumed and root not in self._anchors:
            # New input's first node: the turn's anchor is the invocation's own input
            # checkpoint, which the running loop names (its tool steps then read nothing)
            own = pregel.new_input_checkpoint(config or _NO_CONFIG, root)
            if own is not None:
                self._remember([root, own], own, config)
        if resumed and root not in self._anchors \
                and (yield _Get(_lookup(thread, root))) is None:
            # The invocation's own first checkpoint, not saved yet (or lost): it resumed from
            # the newest saved one, whose turn it goes on with (not an earlier turn's).
            older = yield _List(thread, _lookup(thread, root), 1)
            came_from = _cid(older[0]) if older else None
        if resumed and came_from is not None:
            anchor = yield from self._find_anchor(thread, came_from, config, False)
            note = self.take_note((yield from self._find_durable(thread, anchor, agent_id,
                                                                 config)))
        if note is None and self._first_check(config, root):
            note = yield from self._find_earlier(thread, root, config, state)
        return note

    def _first_check(self, config: Mapping[str, Any] | None, root: str) -> bool:
        """True the first time an invocation (else a step's checkpoint ``root``) is checked
        for an earlier turn's rollback."""
        key = pregel.invocation((config or {}).get("configurable") or {}) or root
        if key in self._checked:
            return False
        with self._memo_lock:
            self._checked[key] = True
            while len(self._checked) > 4 * self.limit:
                self._checked.popitem(last=False)
        return True

    def _keep_note(self, run: rac.Run, note: str | None) -> None:
        if note is not None:
            with self._memo_lock:
                self._notes.setdefault(run.run_id, note)

    def _find_earlier(self, thread: str, root: str, config: Mapping[str, Any] | None,
                      state: Any) -> _Reads[str | None]:
        """What the model must hear at an invocation of ``thread`` (a step of it runs from
        ``root``) about earlier turns: that recovery rolled one back after it ended (its run
        was left running: a call in doubt, a crash), the previous turn or any of the
        ``_EARLIER_TURNS`` before it (a turn left running, the next one run, then recovery),
        unless the thread's messages show the model was told (a tool message or a model
        answer marked with :data:`TOLD_KEY`); once per process. None otherwise. Its reads are
        yielded (see :func:`_drive`); a thread's first invocation (its ``input`` checkpoint
        is step -1) has no earlier turn, and reads nothing. The invocation's own ``input``
        checkpoint, when the first read finds it, is remembered as its anchor (see
        :meth:`_anchor`), so its tool steps read nothing more to find their turn."""
        if pregel.loop_start(config or {}) == _FIRST_INPUT:
            return None
        before = _lookup(thread, root)
        older = yield _List(thread, before, _OWN_STEPS)
        self._own_input(older, root, config)
        prev = _before_invocation(older, config)
        if prev is None:
            return None
        anchors = [(yield from self._find_anchor(thread, _cid(prev), None, False))]
        start = int(pregel.loop_start(config or {}) or 0)
        for c in (yield _List(thread, before, _EARLIER_TURNS + 1, _INPUT)):
            step = (c.metadata or {}).get("step")
            if isinstance(step, int) and step < start and _cid(c) not in anchors:
                anchors.append(_cid(c))
        def read() -> list[Note]:
            return [n for i, a in enumerate(anchors[:_EARLIER_TURNS + 1])
                    if (n := self._earlier_note(thread, a, state, previous=i == 0))
                    is not None]

        notes: list[Note] = yield _Log(read)
        if not notes:
            return None
        return Note("\n\n".join(notes), ",".join(n.about for n in notes))

    def _earlier_note(self, thread: str, anchor: str, state: Any, *, previous: bool
                      ) -> Note | None:
        run_id = turn_run_id(thread, anchor)
        if run_id in self._announced or run_id in self._logged:
            return None  # told already, or the turn this invocation resumes (its own note)
        info = self.engine.store.get_run(run_id)
        if info is None or info.status not in ROLLED_BACK or _told_in(state, run_id):
            return None
        with self._memo_lock:
            if run_id in self._announced:
                return None
            self._announced[run_id] = True
            while len(self._announced) > 4 * self.limit:
                self._announced.popitem(last=False)
        actions = [r for r in self.engine.store.get_records(run_id)
                   if r.kind is RecordKind.ACTION]
        emit("rac_langgraph.earlier_turn_told", run_id=run_id, status=str(info.status))
        return Note(rolled_back_note(actions, earlier=True, previous=previous), run_id)

    @staticmethod
    def _first_step(config: Mapping[str, Any] | None) -> tuple[Any, str, str, bool] | None:
        """(checkpointer, thread, root checkpoint, whether it may resume a turn) of a step that
        is among the first its invocation runs, else None. A resumed invocation runs its
        first step at the step it started at (from a mid-turn checkpoint) or the next one
        (from an ``input`` checkpoint, whose start comes first); new input runs the graph's
        start at the next step and its first node one later."""
        found = _checkpointed(config)
        if found is None or config is None:
            return None
        start = pregel.loop_start(config)
        step = (config.get("metadata") or {}).get("langgraph_step")
        if start is None or not isinstance(step, int):
            return None
        at = step - int(start)
        if at not in (0, 1, 2):
            return None
        return (*found, at < 2)

    def end_turn(self, state: Any, config: Mapping[str, Any] | None) -> bool:
        """Mark the run of this turn completed (see ``rac.Run.finish``); it stays joinable by
        other agents of the turn. Inside the graph (a node's config) the turn is the step's;
        outside it (the config given to ``invoke``, which holds only the thread id), the
        turn of ``state``'s last human message, else the thread's newest turn in this
        process. True if the run is completed now."""
        found = _checkpointed(config)
        if found is not None:
            saver, thread, root = found
            return self.finish((thread, "input", self._anchor(saver, thread, root, config)))
        key = turn_key(state, config)
        if key not in self and key[0] is not None:
            key = self._latest.get(key[0], key)
        return self.finish(key)


#: Record statuses of a call that ran to an outcome: replayed, never run again.
_SETTLED = (RecordStatus.COMPLETED, RecordStatus.COMPENSATING, RecordStatus.COMPENSATED,
            RecordStatus.COMPENSATION_FAILED, RecordStatus.RESOLVED)
#: Record statuses of a call with an intent and no outcome.
_UNSETTLED = (RecordStatus.PENDING, RecordStatus.IN_DOUBT)
#: Run statuses of a turn that was rolled back.
ROLLED_BACK = (RunStatus.COMPENSATED, RunStatus.NEEDS_ATTENTION)


def _call_ids(state: Any) -> set[str]:
    """The ids of every tool call the AI messages of a graph state hold."""
    messages = state.get("messages") if isinstance(state, Mapping) else getattr(
        state, "messages", None)
    if not isinstance(messages, list):
        return set()
    return {str(c.get("id")) for m in messages for c in (getattr(m, "tool_calls", None) or ())}


def _sibling_ids(state: Any, call_id: str | None) -> list[str]:
    """The ids of the tool calls of the model message of a graph state that made ``call_id``
    (it among them)."""
    messages = state.get("messages") if isinstance(state, Mapping) else getattr(
        state, "messages", None)
    for m in reversed(messages if isinstance(messages, list) else []):
        calls = getattr(m, "tool_calls", None) or ()
        ids = [str(c.get("id")) for c in calls if c.get("id")]
        if call_id in ids:
            return ids
    return [call_id] if call_id else []


def _brief(rec: rac.Record) -> str:
    result = rec.result
    if isinstance(result, Mapping):
        ids = [str(v) for k, v in result.items() if k.endswith("id") and v]
        if ids:
            return f"{rec.tool} {ids[0]}"
    return rec.tool


class Note(str):
    """What the model is told about a rolled-back run (``about``: its id, or the ids of
    several joined by commas, which the message carrying it, or the model's answer to it,
    names in ``response_metadata["rac_rolled_back"]``)."""

    about: str

    def __new__(cls, text: str, about: str) -> Note:
        note = super().__new__(cls, text)
        note.about = about
        return note


#: The key of a tool message's ``response_metadata`` naming the run whose rollback it tells.
TOLD_KEY = "rac_rolled_back"


def _told_in(state: Any, run_id: str) -> bool:
    """Whether a message of ``state`` (a tool message that told it, or a model answer given
    after a notice) shows the model was told that ``run_id`` was rolled back."""
    if state is None:
        return False
    messages = state.get("messages") if isinstance(state, Mapping) else getattr(
        state, "messages", None)
    if not isinstance(messages, list):
        return False
    return any(run_id in str((getattr(m, "response_metadata", None) or {}).get(TOLD_KEY, ""))
               .split(",") for m in messages)


def rolled_back_note(actions: Sequence[rac.Record], *, earlier: bool = False,
                     previous: bool = True) -> str:
    """What the model is told about a turn that was rolled back while the thread was away
    (recovery after a crash, an operator's undo during a pause; ``earlier``: an earlier turn
    of the thread, after it ended; ``previous``: the one just before): what was undone, and
    what is still live or in doubt."""
    undone = [_brief(r) for r in reversed(actions) if r.status is RecordStatus.COMPENSATED]
    left = [_brief(r) for r in reversed(actions)
            if r.status in (RecordStatus.COMPENSATION_FAILED, *_UNSETTLED)]
    if earlier:
        which = "the previous turn" if previous else "an earlier turn"
        text = (f"RAC: {which} of this conversation was rolled back after it ended "
                "(rac recover: the process running it had stopped with work unsettled). ")
    else:
        text = ("RAC: this turn was rolled back while it was away (rac recover, after the "
                "process running it stopped, or an operator's rac undo). ")
    text += f"Undone, newest first: {', '.join(undone)}. " if undone else "Nothing was undone. "
    if left:
        text += (f"Not undone (may be live, needs attention): {', '.join(left)}. ")
    return text + "Results you were given for these calls no longer hold."


def runs_of(engine: rac.RAC) -> TurnRuns:
    """The turn registry of ``engine``, shared by every adapter object that uses the engine."""
    return registry_of(engine, _KEY, TurnRuns)
