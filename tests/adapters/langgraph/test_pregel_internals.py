"""The LangGraph internals RAC reads (``rac_langgraph.pregel``), checked against real graphs and
LangGraph's public API: a LangGraph release that renames or changes them fails here, loudly,
before it silently makes checkpointed turns non-durable."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.tools import tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.config import get_config
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.runtime import get_runtime
from langgraph.types import Command, interrupt

from rac.testing import TravelWorld
from rac_langgraph import RACMiddleware, pregel
from tests.adapters.langgraph.support import call, engine, model, say, turn, world_tools


def _probe(seen: list[dict[str, Any]]) -> Any:
    @tool
    def look() -> str:
        """Read what LangGraph gives this step."""
        config = get_config()
        configurable = config["configurable"]
        seen.append({"saver": pregel.checkpointer(configurable),
                     "root": pregel.root_checkpoint(configurable),
                     "start": pregel.loop_start(config),
                     "persisted": pregel.persisted(get_runtime()),
                     "own": get_runtime().execution_info})
        return "ok"

    return look


def _input_steps(saver: Any, thread: str) -> list[int]:
    history = saver.list({"configurable": {"thread_id": thread, "checkpoint_ns": ""}})
    return sorted(c.metadata["step"] for c in history if c.metadata.get("source") == "input")


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_the_private_reads_match_what_the_checkpointer_saved(tmp_path: Path,
                                                             backend: str) -> None:
    seen: list[dict[str, Any]] = []
    conn = sqlite3.connect(tmp_path / "threads.db", check_same_thread=False)
    saver: Any = InMemorySaver() if backend == "memory" else SqliteSaver(conn)
    m = model(turn(call("look")), say("one"), turn(call("look")), say("two"))
    agent = create_agent(m, [_probe(seen)], checkpointer=saver)
    cfg: Any = {"configurable": {"thread_id": "t-internals"}}
    agent.invoke({"messages": [("user", "first")]}, cfg, durability="sync")
    agent.invoke({"messages": [("user", "second")]}, cfg, durability="sync")
    starts = _input_steps(saver, "t-internals")
    conn.close()

    assert len(seen) == 2
    for got in seen:
        assert isinstance(got["saver"], BaseCheckpointSaver) and got["saver"] is saver
        assert got["persisted"] is True
        # On the root graph, the root checkpoint is the step's own (public) checkpoint id.
        assert got["own"].checkpoint_ns.split(":")[0] == "tools"
        assert got["root"] == got["own"].checkpoint_id
    # Each invocation's loop started at the step of the input checkpoint it saved.
    assert [int(g["start"]) for g in seen] == starts


def test_from_a_subgraph_the_root_checkpoint_is_the_parents() -> None:
    seen: list[dict[str, Any]] = []
    m = model(turn(call("look")), say("done"))
    inner = create_agent(m, [_probe(seen)], name="inner")
    parent_ids: list[str] = []

    def outer(state: MessagesState) -> Any:
        parent_ids.append(get_runtime().execution_info.checkpoint_id)
        return inner.invoke(state)

    graph = StateGraph(MessagesState)
    graph.add_node("outer", outer)
    graph.add_edge(START, "outer")
    saver = InMemorySaver()
    graph.compile(checkpointer=saver).invoke({"messages": [("user", "hi")]},
                                             {"configurable": {"thread_id": "t-sub"}})
    [got] = seen
    assert got["saver"] is saver  # a subgraph runs with its parent's checkpointer
    assert got["root"] == parent_ids[0]  # the root graph's checkpoint, not the subgraph's
    assert got["own"].checkpoint_id != parent_ids[0]


def test_without_a_checkpointer_nothing_is_read() -> None:
    seen: list[dict[str, Any]] = []
    create_agent(model(turn(call("look")), say("done")), [_probe(seen)]).invoke(
        {"messages": [("user", "hi")]})
    [got] = seen
    assert got["saver"] is None and got["persisted"] is False


def test_missing_internals_are_reported_and_turns_fall_back(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """If a LangGraph release drops the key, a persisted thread's step says so (a warning) and
    its turns follow the in-process rule: they still work, but are not durable."""
    monkeypatch.setattr(pregel, "CHECKPOINTER_KEY", "__renamed_by_a_release")
    monkeypatch.setattr(pregel, "_warned", [])
    world = TravelWorld()
    eng = engine()
    agent = create_agent(model(turn(call("search_flights", origin="LHR", dest="CDG")),
                               say("found")),
                         world_tools(world, ["search_flights"]),
                         middleware=[RACMiddleware(rac=eng)], checkpointer=InMemorySaver())
    with caplog.at_level(logging.WARNING, logger="rac"):
        agent.invoke({"messages": [("user", "flights?")]},
                     {"configurable": {"thread_id": "t-fallback"}})
    assert any("rac_langgraph.langgraph_internals_changed" in r.getMessage()
               for r in caplog.records)
    [info] = eng.store.list_runs()
    assert not info.run_id.startswith("lg-")  # the in-process turn, not the durable one


class _LoopNames(AgentMiddleware):  # type: ignore[type-arg]
    """Notes, before each model call, the input checkpoint the running loop names."""

    def __init__(self, named: list[tuple[int, str | None]]) -> None:
        super().__init__()
        self.named = named

    def _note(self) -> None:
        config = get_config()
        root = pregel.root_checkpoint(config["configurable"])
        assert root is not None
        self.named.append((config["metadata"]["langgraph_step"],
                           pregel.new_input_checkpoint(config, root)))

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        self._note()
        return handler(request)

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        self._note()
        return await handler(request)


@pytest.mark.parametrize(("backend", "use_async"),
                         [("memory", False), ("memory", True), ("sqlite", False)])
async def test_the_loop_names_a_new_turns_input_checkpoint_and_only_that(
        tmp_path: Path, backend: str, use_async: bool) -> None:
    """At the first node's step of new input the running loop names the invocation's own
    ``input`` checkpoint, the one the checkpointer saves; at every other step, on a resume
    (an interrupt answered, ``invoke(None)``) and with ``durability="exit"`` it names none."""
    conn = sqlite3.connect(tmp_path / "threads.db", check_same_thread=False)
    saver: Any = InMemorySaver() if backend == "memory" else SqliteSaver(conn)
    named: list[tuple[int, str | None]] = []

    @tool
    def ask() -> str:
        """Ask a person (pauses the turn)."""
        return str(interrupt("ok?"))

    m = model(turn(call("ask")), say("one"), turn(call("ask")), say("two"), say("three"))
    agent = create_agent(m, [ask], middleware=[_LoopNames(named)], checkpointer=saver)
    cfg: Any = {"configurable": {"thread_id": "t-named"}}

    async def run(given: Any, **kw: Any) -> None:
        if use_async:
            await agent.ainvoke(given, cfg, **kw)
        else:
            agent.invoke(given, cfg, **kw)

    await run({"messages": [("user", "first")]})  # new input, paused at the tool
    await run(Command(resume="yes"))  # a resume: its model step names nothing
    await run({"messages": [("user", "second")]}, durability="exit")  # nothing saved yet
    await run(None)  # a resume again
    await run({"messages": [("user", "third")]}, durability="sync")
    inputs = sorted((c.metadata["step"], c.config["configurable"]["checkpoint_id"])
                    for c in saver.list(cfg) if c.metadata["source"] == "input")
    conn.close()
    by_step = dict(inputs)
    found = [(step, cid) for step, cid in named if cid is not None]
    # named twice: the first node's step of the two new inputs saved as they ran
    assert len(found) == 2
    for step, cid in found:
        assert by_step[step - 2] == cid  # the input checkpoint two steps before
    assert len(named) > len(found)
