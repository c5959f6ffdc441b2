"""RAC for agents built with ``langchain.agents.create_agent``: one middleware."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState
from langchain_core.messages import ToolMessage
from langgraph.config import get_config
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime
from langgraph.types import Command

import rac
from rac_langgraph.calls import RACToolCalls


class RACMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Turns RAC on for a ``create_agent`` agent, with no change to its tools::

        agent = create_agent(model, tools, middleware=[RACMiddleware(
            compensations={"book_flight": "cancel_flight"}, store="sqlite:///rac.db")])

    Every tool call of the agent is logged, retried, replaced by declared alternatives, and on
    an unrecoverable failure everything the current turn did is compensated newest first; the
    model then gets a ``ToolMessage`` with ``status="error"`` holding the recovery report and
    can replan. One invocation (one user turn) is one run; earlier turns of a thread are never
    undone. Interrupts and other ``GraphBubbleUp`` control flow pass through untouched.

    Args:
        rac: a :class:`rac.RAC` engine, to share one log between agents; otherwise ``config``
            holds the keywords of :class:`rac.RAC` (LangChain tools are accepted in ``tools``).
        agent_id: the agent id written on this agent's records (default: the agent's
            ``name``, else the engine's ``agent_id``).
    """

    def __init__(self, rac: rac.RAC | None = None, *, agent_id: str | None = None,
                 **config: Any) -> None:
        super().__init__()
        self.calls = RACToolCalls(rac, agent_id=agent_id, finish_steps=False, **config)

    @property
    def engine(self) -> rac.RAC:
        """The engine this middleware logs to."""
        return self.calls.engine

    def wrap_tool_call(self, request: ToolCallRequest,
                       handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]]
                       ) -> ToolMessage | Command[Any]:
        """Run the tool call under RAC (blocking path)."""
        return self.calls.wrap_tool_call(request, handler)

    async def awrap_tool_call(
            self, request: ToolCallRequest,
            handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]]
    ) -> ToolMessage | Command[Any]:
        """Run the tool call under RAC (async path)."""
        return await self.calls.awrap_tool_call(request, handler)

    def after_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """The agent finished its turn: mark the turn's run completed."""
        self.calls.end_turn(state, get_config())
        return None

    async def aafter_agent(self, state: AgentState[Any],
                           runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Async :meth:`after_agent`."""
        self.calls.end_turn(state, get_config())
        return None
