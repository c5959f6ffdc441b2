"""Which RAC run a tool call belongs to: one run per agent turn.

A turn is what one ``invoke``/``ainvoke``/``stream`` of a graph does for one user message. The
turn is found from the graph's own data, so it survives interrupts:
the thread id of the config and the last human message of the state (its id, which LangGraph's
message reducer assigns). Agents of one graph that see the same user message share the turn's
run, so a failure in any of them rolls back what all of them did in that turn. A run the caller
opened around the invocation (``with engine.run(): graph.invoke(...)``) takes precedence.

For a ``create_agent`` agent the run is looked up by the invocation's first tool call only;
the other calls of the invocation find it on the invocation's :class:`TurnChannel
<rac_langgraph.turn_end.TurnChannel>`, which also ends the turn.
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
_RUNNING = rac.RunStatus.RUNNING


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
    if type(state) is dict or isinstance(state, Mapping):
        messages = state.get("messages")
    elif isinstance(state, list):
        messages = state
    else:
        messages = getattr(state, "messages", None)
    if type(messages) is not list and not isinstance(messages, Sequence):
        messages = ()
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
        #: Guards the registry; ``busy`` (run id -> number of its calls running) too.
        self.lock = self._lock = threading.Lock()
        self._runs: OrderedDict[TurnKey, rac.Run] = OrderedDict()
        self._latest: dict[str, TurnKey] = {}
        #: run id -> the tool sets (tuples of tool ids) offered to the run
        self._offered: dict[str, set[tuple[int, ...]]] = {}
        #: tool set -> its tools converted for RAC, and the tools themselves
        self._converted: dict[tuple[int, ...], list[rac.Tool]] = {}
        self._keep: dict[tuple[int, ...], list[Any]] = {}
        self.busy: dict[str, int] = {}

    def run_for(self, state: Any, config: Mapping[str, Any] | None, agent_id: str) -> rac.Run:
        """The run a tool call of this turn joins (opened on first use); a run the caller opened
        around the invocation takes precedence."""
        explicit = self.engine.current_run()
        if explicit is not None:
            return explicit
        return self.turn_run(state, config, agent_id)

    def turn_run(self, state: Any, config: Mapping[str, Any] | None, agent_id: str) -> rac.Run:
        """The run of the turn ``state``/``config`` belong to (opened on first use)."""
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
            if old.status is _RUNNING:  # the turn's own end usually finished it already
                finish(old)
        return run

    def offer_tools(self, run: rac.Run, tools: Sequence[Any]) -> None:
        """Make the agent's tools callable by ``run`` (compensators, alternatives)."""
        key = tuple(map(id, tools))
        with self._lock:
            converted = self._converted.get(key)
            offered = self._offered.get(run.run_id)
            if offered is None:
                offered = self._offered[run.run_id] = set()
            elif key in offered:
                return
            offered.add(key)
        if converted is None:  # a tool set not seen before (one per ToolNode, usually)
            converted = [as_rac_tool(t) for t in tools if isinstance(t, BaseTool)]
            with self._lock:
                if len(self._converted) >= self.limit:
                    self._converted.clear()
                    self._keep.clear()
                # The tools are kept with their conversion, so their ids stay theirs.
                self._converted[key] = converted
                self._keep[key] = list(tools)
        if converted:
            run.add_tools(converted)

    def enter(self, run: rac.Run) -> None:
        """A tool call of ``run`` starts (counted in ``busy``)."""
        key = run.run_id
        with self.lock:
            self.busy[key] = self.busy.get(key, 0) + 1

    def leave(self, run: rac.Run) -> int:
        """A tool call of ``run`` ended; how many of its calls are still running."""
        key = run.run_id
        with self.lock:
            left = self.busy[key] - 1
            if left:
                self.busy[key] = left
            else:
                del self.busy[key]
        return left

    def finish_step(self, run: rac.Run) -> None:
        """The last running call of ``run`` ended, in a graph with no end-of-turn signal: mark
        the run completed (unless the caller opened it around the invocation)."""
        if self.engine.current_run() is not run:
            finish(run)

    def end_turn(self, state: Any, config: Mapping[str, Any] | None) -> None:
        """Mark the run of this turn completed; it stays joinable by other agents of the turn."""
        with self._lock:
            run = self._runs.get(turn_key(state, config)[0])
        if run is not None:
            self.end(run)

    def end(self, run: rac.Run) -> None:
        """An agent's turn is over: mark ``run`` completed, unless a call of it is still running
        (another agent of the turn, e.g. one that runs this agent inside a tool, ends it)."""
        if run.status is not _RUNNING or run.run_id in self.busy:
            return
        run.finish()

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
