"""Which RAC run a tool call belongs to: one run per agent turn.

A turn is what one ``invoke``/``ainvoke``/``stream`` of a graph does for one user message. The
turn is found from the graph's own data, so it survives interrupts: the thread id of the config
and the last human message of the state (its id, which LangGraph's message reducer assigns).
Agents of one graph that see the same user message share the turn's run, so a failure in any
of them rolls back what all of them did in that turn. A run the caller opened around the
invocation (``with engine.run(): graph.invoke(...)``) takes precedence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import rac
import rac.mcp
from rac.adapters import RunRegistry, ToolSetCache, registry_of
from rac_langgraph.tools import is_handoff_tool, rac_tool_or_none

TurnKey = tuple[str | None, str, str]
#: Key of ``engine.extensions`` that holds the registry, so it lives and dies with the engine.
_KEY = "rac_langgraph.turns"


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


class TurnRuns(RunRegistry[TurnKey]):
    """The runs of one engine that its LangGraph adapters opened, keyed by turn (a
    :class:`rac.adapters.RunRegistry`), and the agents' tool sets.

    Thread-safe: parallel tool calls of one turn get the same run. The adapters mark runs
    completed after each tool step; a run stays here, joinable by the rest of its turn, until
    more than ``limit`` newer turns have started (it is then finished if still running, unless
    a call of it is under way) or :meth:`close`.
    """

    def __init__(self, engine: rac.RAC, limit: int = 512) -> None:
        super().__init__(engine, limit)
        self.tool_sets = ToolSetCache(engine, self._convert, limit=limit)
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

    def turn_run(self, state: Any, config: Mapping[str, Any] | None, agent_id: str) -> rac.Run:
        """The run of the turn ``state``/``config`` belong to (opened on first use)."""
        return self.run_for(turn_key(state, config), agent_id=agent_id)

    def offer_tools(self, run: rac.Run, tools: Sequence[Any]) -> None:
        """Make the agent's tools callable by ``run`` (compensators, alternatives); the MCP
        declarations of a tool list not seen before are registered first."""
        if tools:
            key = tuple(map(id, tools))
            if key not in self._mcp_seen:
                self._register_mcp(key, tools)
        self.tool_sets.offer(run, tools)

    def _register_mcp(self, key: tuple[int, ...], tools: Sequence[Any]) -> None:
        """Register what langchain-mcp-adapters' tools among ``tools`` declare in their MCP
        metadata (:func:`rac.mcp.register_offered_tools`), once per tool list."""
        rac.mcp.register_offered_tools(self.engine, tools)
        if len(self._mcp_seen) >= self.limit:
            self._mcp_seen.clear()
        self._mcp_seen[key] = list(tools)  # the tools are kept: the ids stay theirs

    def end_turn(self, state: Any, config: Mapping[str, Any] | None) -> None:
        """Mark the run of this turn completed (see ``rac.Run.finish``); it stays joinable by
        other agents of the turn."""
        self.finish(turn_key(state, config))


def runs_of(engine: rac.RAC) -> TurnRuns:
    """The turn registry of ``engine``, shared by every adapter object that uses the engine."""
    return registry_of(engine, _KEY, TurnRuns)
