"""Which RAC run a tool call belongs to: one run per agent turn.

A turn is what one ``invoke``/``ainvoke``/``stream`` of a graph does for one user message. The
turn is found from the graph's own data, so it survives interrupts: the thread id of the config
and the last human message of the state (its id, which LangGraph's message reducer assigns).
Agents of one graph that see the same user message share the turn's run, so a failure in any
of them rolls back what all of them did in that turn. A run the caller opened around the
invocation (``with engine.run(): graph.invoke(...)``) takes precedence.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.tools import BaseTool

import rac
import rac.mcp
from rac_langgraph.tools import as_rac_tool

TurnKey = tuple[str | None, str, str]
#: Key of ``engine.extensions`` that holds the registry, so it lives and dies with the engine.
_KEY = "rac_langgraph.turns"
_REGISTRIES_LOCK = threading.Lock()


def turn_key(state: Any, config: Mapping[str, Any] | None) -> TurnKey:
    """The key of the turn a graph step with ``state`` and ``config`` belongs to."""
    configurable = config.get("configurable") if config else None
    return _turn_key(state, configurable or _NO_CONFIG)


_NO_CONFIG: Mapping[str, Any] = {}


def _turn_key(state: Any, configurable: Mapping[str, Any]) -> TurnKey:
    thread = configurable.get("thread_id")
    if thread is not None and type(thread) is not str:
        thread = str(thread)
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


class TurnRuns:
    """The runs of one engine that its LangGraph adapters opened, keyed by turn.

    Thread-safe: parallel tool calls of one turn get the same run. The adapters mark runs
    completed after each tool step; a run stays here, joinable by the rest of its turn, until
    more than ``limit`` newer turns have started (it is then finished if still running) or
    :meth:`close`.
    """

    def __init__(self, engine: rac.RAC, limit: int = 512) -> None:
        self.engine = engine
        self.limit = limit
        #: Guards the registry.
        self._lock = threading.Lock()
        self._runs: OrderedDict[TurnKey, rac.Run] = OrderedDict()
        #: the ids of a list of agent tools -> their rac.ToolSet, and the tools themselves
        #: (kept, so the ids stay theirs)
        self._tool_sets: dict[tuple[int, ...], tuple[rac.ToolSet, list[Any]]] = {}

    def turn_run(self, state: Any, config: Mapping[str, Any] | None, agent_id: str) -> rac.Run:
        """The run of the turn ``state``/``config`` belong to (opened on first use)."""
        key = turn_key(state, config)
        runs = self._runs
        lock = self._lock
        lock.acquire()  # not `with`: this is on every tool call
        try:
            run = runs.get(key)
            if run is not None:
                runs.move_to_end(key)
                return run
            run = runs[key] = self.engine.run(agent_id=agent_id)
            evicted = self._evict() if len(runs) > self.limit else None
        finally:
            lock.release()
        if evicted is not None:
            evicted.finish()  # a turn left running (finish_steps=False): over now
        return run

    def _evict(self) -> rac.Run | None:
        """One turn in, the oldest out (under the lock), unless a call of it is still running:
        that turn goes on, so it moves to the newest end (the registry may hold a few more
        than ``limit`` meanwhile)."""
        runs = self._runs
        key, oldest = next(iter(runs.items()))
        if oldest.busy:
            runs.move_to_end(key)
            return None
        del runs[key]
        return oldest

    def offer_tools(self, run: rac.Run, tools: Sequence[Any]) -> None:
        """Make the agent's tools callable by ``run`` (compensators, alternatives)."""
        if not tools:
            return
        key = tuple(map(id, tools))
        hit = self._tool_sets.get(key)
        if hit is None:  # a list of tools not seen before (one per ToolNode, usually)
            rac.mcp.register_offered_tools(self.engine, tools)  # langchain-mcp-adapters' tools
            converted = [as_rac_tool(t) for t in tools if isinstance(t, BaseTool)]
            hit = (self.engine.tool_set(converted), list(tools))
            with self._lock:
                if len(self._tool_sets) >= self.limit:
                    self._tool_sets.clear()
                self._tool_sets[key] = hit
        run.add_tools(hit[0])

    def end_turn(self, state: Any, config: Mapping[str, Any] | None) -> None:
        """Mark the run of this turn completed (see ``rac.Run.finish``); it stays joinable by
        other agents of the turn."""
        with self._lock:
            run = self._runs.get(turn_key(state, config))
        if run is not None:
            run.finish()

    def close(self) -> None:
        """Finish and forget every run this registry opened."""
        with self._lock:
            runs = list(self._runs.values())
            self._runs.clear()
        for run in runs:
            run.finish()


def runs_of(engine: rac.RAC) -> TurnRuns:
    """The turn registry of ``engine``, shared by every adapter object that uses the engine."""
    with _REGISTRIES_LOCK:
        runs = engine.extensions.get(_KEY)
        if not isinstance(runs, TurnRuns):
            runs = TurnRuns(engine)
            engine.extensions[_KEY] = runs
        return runs
