"""Which RAC run a tool call belongs to: one run per agent turn.

A turn is what one ``invoke``/``ainvoke``/``stream`` of a graph does for one user message. The
turn is found from the graph's own data, so it needs no extra state key and survives interrupts:
the thread id of the config and the last human message of the state (its id, which LangGraph's
message reducer assigns). Agents of one graph that see the same user message share the turn's
run, so a failure in any of them rolls back what all of them did in that turn. A run the caller
opened around the invocation (``with engine.run(): graph.invoke(...)``) takes precedence.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.tools import BaseTool

import rac
from rac_langgraph.tools import as_rac_tool

TurnKey = tuple[str | None, str, str]
#: Key of ``engine.extensions`` that holds the registry, so it lives and dies with the engine.
_KEY = "rac_langgraph.turns"
_REGISTRIES_LOCK = threading.Lock()


def _messages(state: Any) -> Sequence[Any]:
    if isinstance(state, Mapping):
        found = state.get("messages")
    elif isinstance(state, list):
        found = state
    else:
        found = getattr(state, "messages", None)
    return found if isinstance(found, Sequence) else ()


def turn_key(state: Any, config: Mapping[str, Any] | None) -> tuple[TurnKey, str]:
    """The key of the turn a graph step belongs to, and the group of turns it follows in.

    The group is the thread and the graph level (the checkpoint namespace without its last
    task): a new turn in the same group means the group's previous turn is over.
    """
    configurable = (config or {}).get("configurable") or {}
    thread = configurable.get("thread_id")
    thread = None if thread is None else str(thread)
    ns = str(configurable.get("checkpoint_ns") or "")
    group = f"{thread}|{ns.rpartition('|')[0]}"
    messages = _messages(state)
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if getattr(m, "type", None) == "human":
            return (thread, "human", str(getattr(m, "id", None) or f"#{i}")), group
    # No user message to anchor the turn: the step itself is the scope.
    return (thread, "step", ns), group


class TurnRuns:
    """The runs of one engine that its LangGraph adapters opened, keyed by turn.

    Thread-safe: parallel tool calls of one turn get the same run. Runs are finished (status
    ``completed`` unless something failed) when their agent ends, when a newer turn starts in
    the same group, when more than ``limit`` are open, or on :meth:`close`.
    """

    def __init__(self, engine: rac.RAC, limit: int = 512) -> None:
        self.engine = engine
        self.limit = limit
        self._lock = threading.Lock()
        self._runs: OrderedDict[TurnKey, rac.Run] = OrderedDict()
        self._latest: dict[str, TurnKey] = {}
        self._offered: dict[str, set[int]] = {}
        self._busy: dict[str, int] = {}

    def run_for(self, state: Any, config: Mapping[str, Any] | None, agent_id: str) -> rac.Run:
        """The run a tool call of this turn joins (opened on first use)."""
        explicit = self.engine.current_run()
        if explicit is not None:
            return explicit
        key, group = turn_key(state, config)
        ended: list[rac.Run] = []
        with self._lock:
            run = self._runs.get(key)
            if run is None:
                run = self.engine.run(agent_id=agent_id)
                self._runs[key] = run
                previous = self._latest.get(group)
                if previous is not None and previous != key:
                    old = self._runs.pop(previous, None)
                    if old is not None:
                        ended.append(old)
                self._latest[group] = key
                while len(self._runs) > self.limit:
                    ended.append(self._runs.popitem(last=False)[1])
            else:
                self._runs.move_to_end(key)
            for old in ended:
                self._offered.pop(old.run_id, None)
        for old in ended:
            finish(old)
        return run

    def offer_tools(self, run: rac.Run, tools: Sequence[Any]) -> None:
        """Make the agent's tools callable by ``run`` (compensators, alternatives)."""
        with self._lock:
            seen = self._offered.setdefault(run.run_id, set())
            new = [t for t in tools if isinstance(t, BaseTool) and id(t) not in seen]
            seen.update(id(t) for t in new)
        if new:
            run.add_tools([as_rac_tool(t) for t in new])

    def enter(self, run: rac.Run) -> None:
        """A tool call of ``run`` starts."""
        with self._lock:
            self._busy[run.run_id] = self._busy.get(run.run_id, 0) + 1

    def leave(self, run: rac.Run, *, finish_when_idle: bool) -> None:
        """A tool call of ``run`` ended; with ``finish_when_idle``, mark the run completed when
        no other call of it is running (for graphs that have no end-of-turn hook)."""
        with self._lock:
            left = self._busy.get(run.run_id, 1) - 1
            if left > 0:
                self._busy[run.run_id] = left
                return
            self._busy.pop(run.run_id, None)
        if finish_when_idle and self.engine.current_run() is not run:
            finish(run)

    def end_turn(self, state: Any, config: Mapping[str, Any] | None) -> None:
        """Mark the run of this turn completed; it stays joinable by other agents of the turn."""
        with self._lock:
            run = self._runs.get(turn_key(state, config)[0])
        if run is not None:
            finish(run)

    def close(self) -> None:
        """Finish and forget every run this registry opened."""
        with self._lock:
            runs = list(self._runs.values())
            self._runs.clear()
            self._latest.clear()
            self._offered.clear()
        for run in runs:
            finish(run)


def finish(run: rac.Run) -> None:
    """Mark ``run`` completed if it is still running (a rolled-back run keeps its status)."""
    run.finish()


def runs_of(engine: rac.RAC) -> TurnRuns:
    """The turn registry of ``engine``, shared by every adapter object that uses the engine."""
    with _REGISTRIES_LOCK:
        runs = engine.extensions.get(_KEY)
        if not isinstance(runs, TurnRuns):
            runs = TurnRuns(engine)
            engine.extensions[_KEY] = runs
        return runs
