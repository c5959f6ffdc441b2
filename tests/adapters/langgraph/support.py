"""Shared pieces of the LangGraph adapter tests: the scripted model and the travel world as
LangChain tools (from ``rac_langgraph.testing``), an engine with a virtual clock, and readers of
the log and of what the model was told."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage, ToolMessage
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import tools_condition

import rac
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, VirtualClock
from rac_langgraph.testing import ScriptedModel, call, say, turn, world_tools
from rac_langgraph.testing import scripted_model as model

__all__ = ["CAR", "FLIGHT", "HOTEL", "TRAVEL_COMPENSATIONS", "LosesSteps", "ScriptedModel",
           "actions", "agent_graph", "call", "engine", "errors", "model", "records", "say",
           "tool_messages", "turn", "world_tools"]

#: The trip's calls, as the tests' scripted models make them.
FLIGHT = {"passenger": "ann", "origin": "LHR", "dest": "CDG"}
HOTEL = {"guest": "ann", "city": "Paris", "nights": 2}
CAR = {"driver": "ann", "city": "Paris"}


def engine(**kw: Any) -> rac.RAC:
    """An engine over the travel world with an in-memory log and a virtual clock."""
    kw.setdefault("compensations", TRAVEL_COMPENSATIONS)
    kw.setdefault("read_only", TRAVEL_READ_ONLY)
    kw.setdefault("store", "memory://")
    kw.setdefault("clock", VirtualClock())
    kw.setdefault("load_entrypoints", False)
    return rac.RAC(**kw)


def agent_graph(m: Any, tools: Any, *, checkpointer: Any = None, retry_policy: Any = None,
                cache_policy: Any = None, **compile_kw: Any) -> Any:
    """The hand-built agent graph of the tests: a model node (``m`` on the messages) and the
    tool node ``tools`` (a RAC ``tool_node``, or any node, retried by ``retry_policy`` and
    cached by ``cache_policy``), looping until the model answers without a tool call."""
    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [m.invoke(state["messages"])]}

    g = StateGraph(MessagesState)
    g.add_node("agent", agent)
    g.add_node("tools", tools, retry_policy=retry_policy, cache_policy=cache_policy)
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
    g.add_edge("tools", "agent")
    return g.compile(checkpointer=checkpointer, **compile_kw)


def tool_messages(messages: Sequence[BaseMessage]) -> list[ToolMessage]:
    """The tool messages among ``messages``."""
    return [m for m in messages if isinstance(m, ToolMessage)]


def errors(messages: Sequence[BaseMessage]) -> list[ToolMessage]:
    """The tool messages with ``status="error"``."""
    return [m for m in tool_messages(messages) if m.status == "error"]


def records(eng: rac.RAC) -> list[rac.Record]:
    """Every record of every run of ``eng``, oldest run first."""
    out: list[rac.Record] = []
    for info in reversed(eng.store.list_runs()):
        out.extend(eng.store.get_records(info.run_id))
    return out


def actions(recs: Sequence[rac.Record]) -> list[tuple[str, str]]:
    """(tool, status) of the action records."""
    return [(r.tool, str(r.status)) for r in recs if r.kind is rac.RecordKind.ACTION]


class LosesSteps(SqliteSaver):
    """A SQLite checkpointer that saves a thread's input checkpoints and loses every later one
    (as a remote database may lose its last writes at a crash: the worst case of LangGraph's
    ``durability="async"``, made deterministic)."""

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        if metadata.get("source") == "input":
            return super().put(config, checkpoint, metadata, new_versions)
        return {"configurable": {**config["configurable"], "checkpoint_id": checkpoint["id"]}}

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        return None
