"""Testing LangGraph agents under RAC without a model service: a scripted chat model, the
travel world as LangChain tools, and the harness that runs :class:`rac.testing.AdapterConformance`
against :class:`rac_langgraph.RACMiddleware`.

The scripted model answers with predetermined messages in order and keeps every input it was
given, so a test can assert on what the model was told::

    m = scripted_model(turn(call("book_flight", passenger="ann", origin="SFO", dest="CDG")),
                       say("Booked."))
    agent = create_agent(m, world_tools(world), middleware=[RACMiddleware(rac=engine)])
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatResult
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.cache.memory import InMemoryCache
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphInterrupt
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import tools_condition
from langgraph.types import Command
from pydantic import Field

import rac
from rac.testing.turns import Step, Told, TurnResult
from rac.testing.world import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld
from rac_langgraph.cache import tool_cache_policy
from rac_langgraph.middleware import RACMiddleware
from rac_langgraph.nodes import tool_node

#: The thread of the conformance suite's persisted turn (promise 4).
PERSISTED_THREAD = "conformance-persisted"


def _id(prefix: str) -> str:
    """A fresh message or call id, unique across processes (a thread resumed elsewhere must
    not see a new message replace an old one of the same id)."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


class ScriptedModel(GenericFakeChatModel):
    """A chat model that answers with the scripted messages in order and remembers every input
    it got (``seen``: one list of messages per model call). Tools bound to it are ignored."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None,
                   **kwargs: Any) -> ScriptedModel:
        return self

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: Any = None, **kwargs: Any) -> ChatResult:
        self.seen.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def call(name: str, **args: Any) -> dict[str, Any]:
    """One tool call of a scripted model turn (with a fresh call id)."""
    return {"name": name, "args": args, "id": _id("call"), "type": "tool_call"}


def turn(*calls: dict[str, Any]) -> AIMessage:
    """A model message making ``calls`` (parallel calls when several)."""
    return AIMessage(content="", tool_calls=list(calls), id=_id("ai"))


def say(text: str) -> AIMessage:
    """A final model answer."""
    return AIMessage(content=text, id=_id("ai"))


def scripted_model(*messages: AIMessage) -> ScriptedModel:
    """A scripted model answering with ``messages``."""
    return ScriptedModel(messages=iter(messages))


def from_steps(script: Iterable[Step]) -> ScriptedModel:
    """A scripted model from conformance steps (lists of ``(tool, args)`` calls, or a text)."""
    return scripted_model(*_messages(script))


def _messages(script: Iterable[Step]) -> list[AIMessage]:
    return [say(s) if isinstance(s, str) else turn(*(call(n, **a) for n, a in s))
            for s in script]


def world_tools(world: TravelWorld, names: Iterable[str] | None = None) -> list[BaseTool]:
    """The travel world's tools as LangChain tools (all of them, or those named)."""
    wanted = set(names) if names is not None else None
    return [StructuredTool.from_function(fn) for fn in world.tools()
            if wanted is None or fn.__name__ in wanted]


def told(messages: Sequence[BaseMessage]) -> TurnResult:
    """What the model was told in ``messages`` (a graph's final state): each tool message, by
    the tool the model called, and the last AI message's text."""
    asked = {c["id"]: c["name"] for m in messages if isinstance(m, AIMessage)
             for c in m.tool_calls}  # answers are told by the call the model made
    out = [Told(asked.get(m.tool_call_id, str(m.name)), str(m.content), m.status == "error")
           for m in messages if isinstance(m, ToolMessage)]
    final = next((str(m.content) for m in reversed(messages) if isinstance(m, AIMessage)),
                 None)
    return TurnResult(out, final)


class ConformanceHarness:
    """Runs a conformance turn through a ``create_agent`` agent with :class:`RACMiddleware`."""

    parallel = True

    def _agent(self, engine: rac.RAC, world: TravelWorld, script: Sequence[Step],
               agent_id: str) -> Any:
        return create_agent(from_steps(script), world_tools(world),
                            middleware=[RACMiddleware(rac=engine, agent_id=agent_id)])

    def run_turn(self, engine: rac.RAC, world: TravelWorld, script: Sequence[Step], *,
                 agent_id: str) -> TurnResult:
        agent = self._agent(engine, world, script, agent_id)
        return told(agent.invoke({"messages": [("user", "Book my trip")]})["messages"])

    async def arun_turn(self, engine: rac.RAC, world: TravelWorld, script: Sequence[Step], *,
                        agent_id: str) -> TurnResult:
        agent = self._agent(engine, world, script, agent_id)
        out = await agent.ainvoke({"messages": [("user", "Book my trip")]})
        return told(out["messages"])

    def run_delegating_turn(self, engine: rac.RAC, world: TravelWorld, script: Sequence[Step],
                            delegate: Sequence[Step], *, agent_id: str) -> TurnResult:
        """Promise 5: the parent delegates first to an agent used as a tool (a ``create_agent``
        graph invoked inside the parent's ``ask_travel_desk`` tool, on the same engine), whose
        model plays ``delegate``; then the parent's model plays ``script``."""
        desk: Any = create_agent(from_steps(delegate), world_tools(world), name="travel_desk",
                            middleware=[RACMiddleware(rac=engine)])

        def ask_travel_desk(request: str) -> str:
            """Ask the travel desk to book things."""
            out = desk.invoke({"messages": [("user", request)]})
            return str(out["messages"][-1].content)

        parent: Any = create_agent(
            scripted_model(turn(call("ask_travel_desk", request="book my trip")),
                           *_messages(script)),
            [*world_tools(world), StructuredTool.from_function(ask_travel_desk)],
            middleware=[RACMiddleware(rac=engine, agent_id=agent_id)])
        return told(parent.invoke({"messages": [("user", "Book my trip")]})["messages"])

    def run_turn_handling_errors(self, engine: rac.RAC, world: TravelWorld,
                                 script: Sequence[Step], *, agent_id: str) -> TurnResult:
        """The turn through a hand-built graph whose ``ToolNode`` handles tool errors
        (``handle_tool_errors=True``: an exception becomes an error message inside the node)."""
        model = from_steps(script)
        tools = world_tools(world)

        def agent(state: MessagesState) -> dict[str, Any]:
            return {"messages": [model.invoke(state["messages"])]}

        g = StateGraph(MessagesState)
        g.add_node("agent", agent)
        g.add_node("tools", tool_node(tools, rac=engine, agent_id=agent_id,
                                      handle_tool_errors=True))
        g.add_edge(START, "agent")
        g.add_conditional_edges("agent", tools_condition)
        g.add_edge("tools", "agent")
        graph: Any = g.compile()
        out = graph.invoke({"messages": [("user", "Book my trip")]})
        return told(out["messages"])

    def control_flow(self) -> BaseException:
        return GraphInterrupt(())

    # -- promises 4, 7 and 8 --------------------------------------------------------------------
    def _persisted(self, engine: rac.RAC, world: TravelWorld, script: Sequence[Step],
                   agent_id: str, state_path: Path, given: Any) -> TurnResult:
        from langgraph.checkpoint.sqlite import SqliteSaver  # langgraph-checkpoint-sqlite

        state_path.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(state_path / "checkpoints.db"), check_same_thread=False)
        try:
            agent: Any = create_agent(from_steps(script), world_tools(world),
                                      middleware=[RACMiddleware(rac=engine, agent_id=agent_id)],
                                      checkpointer=SqliteSaver(conn))
            out = agent.invoke(given, {"configurable": {"thread_id": PERSISTED_THREAD}})
        finally:
            conn.close()
        return told(out["messages"])

    def run_persisted_turn(self, engine: rac.RAC, world: TravelWorld, script: Sequence[Step],
                           *, agent_id: str, state_path: Path) -> TurnResult:
        """Promise 4: the turn on the thread :data:`PERSISTED_THREAD` of a ``SqliteSaver``
        under ``state_path`` (LangGraph's default ``durability="async"``)."""
        return self._persisted(engine, world, script, agent_id, state_path,
                               {"messages": [("user", "Book my trip")]})

    def resume_persisted_turn(self, engine: rac.RAC, world: TravelWorld,
                              script: Sequence[Step], *, agent_id: str,
                              state_path: Path) -> TurnResult:
        """The thread resumed as LangGraph's users resume one after a crash
        (``invoke(None, config)``): it goes on from its last saved checkpoint, in the crashed
        turn's run."""
        return self._persisted(engine, world, script, agent_id, state_path, None)

    def run_paused_turn(self, engine: rac.RAC, world: TravelWorld, before: Sequence[Step],
                        after: Sequence[Step], *, agent_id: str) -> TurnResult:
        """Promise 7: LangChain's own human in the loop (``HumanInTheLoopMiddleware`` on
        ``charge_card``, an ``InMemorySaver``) pauses the turn at the charge ``before`` asks
        for; at the pause an operator undoes the turn's run (``rac undo --unchecked``, from an
        engine of its own on the same log, given the world's tools); then the person's
        approval resumes the thread (``Command(resume={"decisions": [{"type": "approve"}]})``)
        and the model plays ``after``."""
        agent: Any = create_agent(
            from_steps([*before, *after]), world_tools(world),
            middleware=[HumanInTheLoopMiddleware(interrupt_on={"charge_card": True}),
                        RACMiddleware(rac=engine, agent_id=agent_id)],
            checkpointer=InMemorySaver())
        config = {"configurable": {"thread_id": "conformance-paused"}}
        paused = agent.invoke({"messages": [("user", "Book my trip and charge me")]}, config)
        if "__interrupt__" not in paused:
            raise AssertionError(f"the turn never paused for the approval: {paused!r}")
        operator = rac.RAC(store=engine.store, compensations=TRAVEL_COMPENSATIONS,
                           read_only=TRAVEL_READ_ONLY, tools=world.tools(), clock=engine.clock,
                           load_entrypoints=False)
        for info in engine.store.list_runs():
            if info.status is rac.RunStatus.COMPLETED:
                operator.undo(info.run_id, why="the trip was called off at the pause",
                              by="operator", unchecked=True)
        out = agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)
        return told(out["messages"])

    def run_turn_cached(self, engine: rac.RAC, world: TravelWorld, script: Sequence[Step], *,
                        agent_id: str) -> TurnResult:
        """Promise 8: a hand-built agent graph whose tool node LangGraph caches
        (``cache_policy=rac_langgraph.tool_cache_policy()``, an ``InMemoryCache``: a repeated
        call of the same tools with the same arguments is answered from the cache), with the
        world's ``get_booking`` besides its tools."""
        model = from_steps(script)
        tools = [*world_tools(world), StructuredTool.from_function(world.get_booking)]

        def agent(state: MessagesState) -> dict[str, Any]:
            return {"messages": [model.invoke(state["messages"])]}

        g = StateGraph(MessagesState)
        g.add_node("agent", agent)
        g.add_node("tools", tool_node(tools, rac=engine, agent_id=agent_id),
                   cache_policy=tool_cache_policy())
        g.add_edge(START, "agent")
        g.add_conditional_edges("agent", tools_condition)
        g.add_edge("tools", "agent")
        graph: Any = g.compile(cache=InMemoryCache())
        return told(graph.invoke({"messages": [("user", "Book my trip")]})["messages"])

