"""RAC for agents built with ``langchain.agents.create_agent``: one middleware."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.config import get_config
from langgraph.prebuilt.tool_node import ToolCallRequest
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

    # The turn ends when the model answers without asking for a tool. Seeing that inside the
    # model call (rather than in an ``after_agent`` hook, which is one more graph node per
    # turn) closes the run at no extra graph step.
    def wrap_model_call(self, request: ModelRequest[Any],
                        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]) -> Any:
        """Call the model; if it asked for no tool, the turn is over: finish its run."""
        response = handler(request)
        if _final(response):
            self.calls.end_turn(request.state, get_config())
        return response

    async def awrap_model_call(
            self, request: ModelRequest[Any],
            handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]]) -> Any:
        """Async :meth:`wrap_model_call`."""
        response = await handler(request)
        if _final(response):
            self.calls.end_turn(request.state, get_config())
        return response


def _final(response: Any) -> bool:
    """True if the model's response asks for no tool call (the agent will stop)."""
    messages = getattr(response, "result", None)
    if messages is None:
        messages = [response]
    return not any(isinstance(m, AIMessage) and m.tool_calls for m in messages)
