"""RAC for agents built with ``langchain.agents.create_agent``: one middleware."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest
from langchain_core.messages import AIMessage, SystemMessage, ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

import rac
from rac.events import emit
from rac_langgraph.calls import RACToolCalls
from rac_langgraph.runs import TOLD_KEY


class RACMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Turns RAC on for a ``create_agent`` agent, with no change to its tools::

        agent = create_agent(model, tools, middleware=[RACMiddleware(
            compensations={"book_flight": "cancel_flight"}, store="sqlite:///rac.db")])

    Every tool call of the agent is logged, retried, replaced by declared alternatives, and on
    an unrecoverable failure everything the current turn did is compensated newest first; the
    model then gets a ``ToolMessage`` with ``status="error"`` holding the recovery report and
    can replan. One invocation (one user turn) is one run; earlier turns of a thread are never
    undone. Interrupts and other ``GraphBubbleUp`` control flow pass through untouched, and so
    do hand-offs (a tool returning ``Command(graph=Command.PARENT)``). With a checkpointer the
    turn's run is durable: resuming the thread (``Command(resume=...)``, ``invoke(None,
    config)``) continues it, in this process or a fresh one, and a call the turn already made
    is answered with its logged result instead of running again.

    The middleware hooks tool calls and model calls (the latter only to tell a resumed model
    of a rollback; ``tell_model=False`` drops that hook) and adds nothing to the agent's
    state. The turn's run is ``running`` while one of its
    tool calls is, and marked ``completed`` after each tool step (and when an interrupt pauses
    one): a crash during a tool call leaves it to ``rac recover``, a later failure in the turn
    still undoes the whole turn (see ``docs/langgraph.md``).

    Args:
        rac: a :class:`rac.RAC` engine, to share one log between agents; otherwise ``config``
            holds the keywords of :class:`rac.RAC` (LangChain tools are accepted in ``tools``).
        agent_id: the agent id written on this agent's records (default: the agent's
            ``name``, else the engine's ``agent_id``).
        finish_steps: mark the turn's run completed after each tool step (default); with
            ``False`` runs stay running until ``middleware.calls.end_turn(state, config)``.
        repeatable: tools run again when a resumed or retried graph repeats a call of them
            (repeatable reads); any other call the turn already made gets its logged answer.
        approvals: ``"interrupt"`` (default): a tool declared ``irreversible={tool:
            "approve"}`` is approved by a person through LangGraph's ``interrupt()``
            (``Command(resume="approve")`` or ``"deny"``); ``"hook"``: by the engine's
            ``rac_approve_action`` plugins.
        tell_model: also hook model calls (default), so that a thread resumed after ``rac
            recover`` rolled its turn back tells the model so before its first model call,
            even when the model then makes no tool call (with a checkpointer and LangGraph's
            default ``durability="async"``, the step before a crash may be lost and the model
            asked again). The hook also learns a new turn's run from the running loop, so
            the turn's first tool call reads nothing of the checkpointer. ``False`` saves
            create_agent's tracing of that hook, about 50 µs per model call, reopens that gap,
            and has that tool call search the checkpointer, behind LangGraph's background
            saves (see ``docs/langgraph.md``).
    """

    def __new__(cls, *args: Any, tell_model: bool = True, **kwargs: Any) -> RACMiddleware:
        # create_agent adds a model-call hook only for a middleware whose class overrides one:
        # with tell_model the instance is of the subclass that does.
        if tell_model and cls is RACMiddleware:
            cls = _RACMiddlewareTellingModel
        return super().__new__(cls)

    def __init__(self, rac: rac.RAC | None = None, *, agent_id: str | None = None,
                 finish_steps: bool = True, repeatable: Iterable[str] = (),
                 approvals: str = "interrupt", tell_model: bool = True,
                 **config: Any) -> None:
        super().__init__()
        calls = RACToolCalls(rac, agent_id=agent_id, finish_steps=finish_steps,
                             repeatable=repeatable, approvals=approvals, **config)
        self.calls = calls
        self.tell_model = tell_model

        # create_agent wraps each hook in LangSmith's ``traceable``, which takes the hook's
        # ``inspect.signature`` on every call: for a bound method about 60 k instructions (a
        # quarter of what a pass-through tool middleware costs a turn), for a plain function
        # that carries its ``__signature__`` a lookup. So the instance exposes the hooks as such
        # functions (the methods below stay for direct calls).
        def wrap_tool_call(request: ToolCallRequest, handler: Callable[
                [ToolCallRequest], ToolMessage | Command[Any]]) -> ToolMessage | Command[Any]:
            return calls.wrap_tool_call(request, handler)

        async def awrap_tool_call(request: ToolCallRequest, handler: Callable[
                [ToolCallRequest], Awaitable[ToolMessage | Command[Any]]]
        ) -> ToolMessage | Command[Any]:
            return await calls.awrap_tool_call(request, handler)

        for hook in (wrap_tool_call, awrap_tool_call):
            setattr(hook, "__signature__", inspect.signature(hook))  # noqa: B010
            hook.__doc__ = getattr(type(self), hook.__name__).__doc__
            self.__dict__[hook.__name__] = hook

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


class _RACMiddlewareTellingModel(RACMiddleware):
    """:class:`RACMiddleware` with ``tell_model=True``: before a model call that is the first
    step of an invocation resuming a thread whose turn recovery rolled back, the rollback
    notice is added to the model's system message (once per turn)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        calls = self.calls

        def wrap_model_call(request: ModelRequest,
                            handler: Callable[[ModelRequest], Any]) -> Any:
            note = calls.rollback_notice(state=request.state)
            if note is None:
                return handler(request)
            return _marked(handler(_with_notice(request, note)), note)

        async def awrap_model_call(request: ModelRequest,
                                   handler: Callable[[ModelRequest], Awaitable[Any]]) -> Any:
            note = await calls.arollback_notice(state=request.state)
            if note is None:
                return await handler(request)
            return _marked(await handler(_with_notice(request, note)), note)

        for hook in (wrap_model_call, awrap_model_call):  # plain functions: see __init__
            setattr(hook, "__signature__", inspect.signature(hook))  # noqa: B010
            hook.__doc__ = getattr(type(self), hook.__name__).__doc__
            self.__dict__[hook.__name__] = hook

    def wrap_model_call(self, request: ModelRequest,
                        handler: Callable[[ModelRequest], Any]) -> Any:
        """Tell a resumed model about a rollback before it acts (blocking path)."""
        note = self.calls.rollback_notice(state=request.state)
        if note is None:
            return handler(request)
        return _marked(handler(_with_notice(request, note)), note)

    async def awrap_model_call(self, request: ModelRequest,
                               handler: Callable[[ModelRequest], Awaitable[Any]]) -> Any:
        """Tell a resumed model about a rollback before it acts (async path)."""
        note = await self.calls.arollback_notice(state=request.state)
        if note is None:
            return await handler(request)
        return _marked(await handler(_with_notice(request, note)), note)


def _marked(response: Any, note: str) -> Any:
    """``response`` (the model's answer to a request that carried ``note``) with its AI
    message marked as told (``response_metadata["rac_rolled_back"]``): saved with the thread,
    the mark tells later turns, in any process, that the model heard of the rollback."""
    messages = getattr(response, "result", None)
    if messages is None:
        messages = [response]
    about = getattr(note, "about", None)
    for m in messages:
        if about and isinstance(m, AIMessage):
            m.response_metadata[TOLD_KEY] = about
            break
    return response


def _with_notice(request: ModelRequest, note: str) -> ModelRequest:
    """``request`` with ``note`` added to its system message."""
    system = request.system_message
    if system is None:
        message = SystemMessage(content=note)
    elif isinstance(system.content, str):
        message = SystemMessage(content=f"{system.content}\n\n{note}" if system.content
                                else note)
    else:
        message = SystemMessage(content=[*system.content, {"type": "text", "text": note}])
    emit("rac_langgraph.rollback_told", where="system message")
    return request.override(system_message=message)
