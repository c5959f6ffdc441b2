"""Running one ToolNode tool call under RAC: the logic shared by the middleware and the wrappers
for hand-built graphs."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from langchain_core.messages import ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

import rac
from rac_langgraph.engines import build_engine
from rac_langgraph.results import InvalidToolCall, is_invalid_call
from rac_langgraph.runs import TurnRuns, runs_of

ToolResult = ToolMessage | Command[Any]
Execute = Callable[[ToolCallRequest], ToolResult]
AsyncExecute = Callable[[ToolCallRequest], Awaitable[ToolResult]]


class RACToolCalls:
    """Runs a ToolNode's tool calls under RAC.

    ``wrap_tool_call`` and ``awrap_tool_call`` have the shape ``ToolNode(wrap_tool_call=...,
    awrap_tool_call=...)`` expects; :class:`rac_langgraph.RACMiddleware` uses the same logic.
    Each call is logged, retried while its failure is transient, replaced by the declared
    alternatives (through ``execute``, or directly for tools only the engine knows), and on an
    unrecoverable failure the turn's side effects are compensated and the model gets a
    ``ToolMessage`` with ``status="error"`` holding the recovery report.

    Args:
        rac: the engine (share one to share the log); else ``config`` holds ``rac.RAC``
            keywords. LangChain tools given as ``tools`` become callable by the engine, e.g.
            compensators the model is not offered.
        agent_id: the agent id written on this agent's records (default: the ``name`` given to
            ``create_agent``, else the engine's ``agent_id``).
        finish_steps: mark the turn's run completed after each tool step (when none of its
            calls is running). A hand-built graph has no end-of-turn hook, and a run left
            ``running`` when the process exits would be rolled back by ``rac recover``; the
            run stays joinable, so a later failure in the turn still undoes the whole turn.
            :class:`rac_langgraph.RACMiddleware` turns it off and ends runs when the model answers
            without a tool call.
    """

    def __init__(self, rac: rac.RAC | None = None, *, agent_id: str | None = None,
                 finish_steps: bool = True, **config: Any) -> None:
        self.engine = build_engine(rac, agent_id, config)
        self.agent_id = agent_id
        self.finish_steps = finish_steps
        self.turns: TurnRuns = runs_of(self.engine)

    # -- the ToolNode wrapper pair ------------------------------------------------------------
    def wrap_tool_call(self, request: ToolCallRequest, execute: Execute) -> ToolResult:
        """Run ``request`` under RAC on the blocking path."""
        if request.tool is None:  # unknown tool: ToolNode answers the model itself
            return execute(request)
        run, agent = self._join(request)
        call = request.tool_call

        def invoke(name: str, args: dict[str, Any]) -> Any:
            req = _request_for(request, name, args)
            if req is None:
                return _as_message(request, name, _engine_tool(run, name).invoke(args))
            return _checked(execute(req), name, call["name"])

        self.turns.enter(run)
        try:
            outcome = run.execute(call["name"], call["args"], invoke, agent_id=agent)
        except InvalidToolCall as refused:
            return refused.message
        finally:
            self.turns.leave(run, finish_when_idle=self.finish_steps)
        return _answer(outcome, request)

    async def awrap_tool_call(self, request: ToolCallRequest,
                              execute: AsyncExecute) -> ToolResult:
        """Run ``request`` under RAC without blocking the event loop."""
        if request.tool is None:
            return await execute(request)
        run, agent = self._join(request)
        call = request.tool_call

        async def ainvoke(name: str, args: dict[str, Any]) -> Any:
            req = _request_for(request, name, args)
            if req is None:
                return _as_message(request, name, await _engine_tool(run, name).ainvoke(args))
            return _checked(await execute(req), name, call["name"])

        self.turns.enter(run)
        try:
            outcome = await run.aexecute(call["name"], call["args"], ainvoke, agent_id=agent)
        except InvalidToolCall as refused:
            return refused.message
        finally:
            self.turns.leave(run, finish_when_idle=self.finish_steps)
        return _answer(outcome, request)

    # -- turns --------------------------------------------------------------------------------
    def agent_of(self, config: Mapping[str, Any] | None) -> str:
        """The agent id for a call made with ``config``."""
        if self.agent_id is not None:
            return self.agent_id
        name = ((config or {}).get("metadata") or {}).get("lc_agent_name")
        return str(name) if name else self.engine.agent_id

    def _join(self, request: ToolCallRequest) -> tuple[rac.Run, str]:
        runtime = request.runtime
        config = getattr(runtime, "config", None)
        agent = self.agent_of(config)
        run = self.turns.run_for(request.state, config, agent)
        self.turns.offer_tools(run, getattr(runtime, "tools", None) or ())
        return run, agent

    def end_turn(self, state: Any, config: Mapping[str, Any] | None) -> None:
        """Mark the run of the turn ``state``/``config`` belong to completed."""
        self.turns.end_turn(state, config)

    def close(self) -> None:
        """Finish and forget every run the engine's LangGraph adapters opened."""
        self.turns.close()


def _request_for(request: ToolCallRequest, name: str, args: dict[str, Any]
                 ) -> ToolCallRequest | None:
    """The request that calls ``name`` with ``args`` through the ToolNode, or None if the agent
    has no such tool."""
    call = request.tool_call
    if name == call["name"]:
        if args == call["args"]:
            return request
        return request.override(tool_call={**call, "args": args})
    tools = getattr(request.runtime, "tools", None) or ()
    tool = next((t for t in tools if getattr(t, "name", None) == name), None)
    if tool is None:
        return None
    return request.override(tool_call={**call, "name": name, "args": args}, tool=tool)


def _engine_tool(run: rac.Run, name: str) -> rac.Tool:
    tool = run.tool(name)
    if tool is None:
        raise KeyError(f"{name} is neither a tool of this agent nor registered with the engine: "
                       "pass it to create_agent or to RACMiddleware(tools=[...])")
    return tool


def _as_message(request: ToolCallRequest, name: str, raw: Any) -> ToolMessage:
    """A tool message for a call RAC made directly (an alternative only the engine knows)."""
    content = raw if isinstance(raw, str) else json.dumps(raw, default=str, ensure_ascii=False)
    return ToolMessage(content=content, tool_call_id=request.tool_call["id"], name=name)


def _checked(result: ToolResult, name: str, requested: str) -> ToolResult:
    if name == requested and isinstance(result, ToolMessage) and is_invalid_call(result, name):
        raise InvalidToolCall(result)
    return result


def _answer(outcome: rac.CallOutcome, request: ToolCallRequest) -> ToolResult:
    """What the model gets: the tool's own result, or the report as an error message."""
    if outcome.ok:
        return outcome.result  # type: ignore[no-any-return]
    call = request.tool_call
    return ToolMessage(content=outcome.message or f"RAC: {call['name']} failed.",
                       tool_call_id=call["id"], name=call["name"], status="error")
