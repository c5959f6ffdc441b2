"""Which model turn asked for a tool call: the key of the call's parallel batch.

CrewAI runs the tool calls of one model message in a thread pool; RAC must treat them as one
batch (once a rollback begins, a sibling that has not started is refused, one still running is
undone when it returns). The model call itself runs in another thread than the one that starts
the tools, so a context variable set before it never reaches them. What the tool's thread can
see is the executing agent's conversation: the assistant message that asked for this call is
its turn. :func:`turn_of` finds it (the newest assistant message with tool calls, holding an
unanswered call of this tool with these arguments) and names it by identity. When it cannot be
found for sure (an executor RAC cannot see, arguments changed by a hook) the answer is None: the
call is a batch of its own, which is never a false refusal. A standalone ``Agent.kickoff``
runs its turns in an executor of its own, not ``agent.agent_executor``: the kickoff notes it
(:func:`noting_executor`), so its parallel calls are one batch too.
"""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any, TypeVar

from rac.adapters import ToolCache

R = TypeVar("R")

#: The executor of the standalone ``Agent.kickoff`` running in this context, with its agent:
#: that kickoff makes an executor of its own rather than using ``agent.agent_executor``.
_KICKOFF_EXECUTOR: ContextVar[tuple[Any, Any] | None] = ContextVar(
    "rac_crewai_kickoff_executor", default=None)

_COUNTER = itertools.count(1)


def _new_key(message: Any) -> str:
    return f"crewai-turn-{next(_COUNTER)}"


#: Each assistant message's key, by identity (the cache holds the message, so its id is not
#: reused meanwhile), least recently used out past the limit.
_KEYS: ToolCache[str] = ToolCache(_new_key, limit=4096)


def _arguments(call: dict[str, Any]) -> Any:
    raw = (call.get("function") or {}).get("arguments")
    if isinstance(raw, str):
        try:
            return json.loads(raw) if raw else {}
        except ValueError:
            return None
    return raw


def _asks_for(call: Any, name: str, args: Any) -> bool:
    if not isinstance(call, dict):
        return False
    function = call.get("function") or {}
    return function.get("name") == name and _arguments(call) == args


def noting_executor(agent: Any, prepare: Callable[..., R]) -> Callable[..., R]:
    """``agent._prepare_kickoff`` that notes, for the tool calls of this kickoff, the
    executor it returns first in its result (the executor whose conversation holds the
    kickoff's model turns)."""

    @functools.wraps(prepare)
    def prepared(*args: Any, **kwargs: Any) -> R:
        out = prepare(*args, **kwargs)
        executor = out[0] if isinstance(out, tuple) and out else None
        if executor is not None:
            _KICKOFF_EXECUTOR.set((agent, executor))
        return out

    return prepared


def in_kickoff(method: Callable[..., R]) -> Callable[..., R]:
    """A standalone kickoff that forgets the executor it noted when it returns."""

    @functools.wraps(method)
    def kickoff(*args: Any, **kwargs: Any) -> R:
        token = _KICKOFF_EXECUTOR.set(None)
        try:
            return method(*args, **kwargs)
        finally:
            _KICKOFF_EXECUTOR.reset(token)

    return kickoff


def in_akickoff(method: Callable[..., Awaitable[R]]) -> Callable[..., Awaitable[R]]:
    """Async :func:`in_kickoff`."""

    @functools.wraps(method)
    async def kickoff(*args: Any, **kwargs: Any) -> R:
        token = _KICKOFF_EXECUTOR.set(None)
        try:
            return await method(*args, **kwargs)
        finally:
            _KICKOFF_EXECUTOR.reset(token)

    return kickoff


def executor_of(agent: Any) -> Any:
    """The executor running ``agent``'s model turns here: its standalone kickoff's, else the
    one CrewAI made for its task (``agent.agent_executor``)."""
    noted = _KICKOFF_EXECUTOR.get()
    if noted is not None and noted[0] is agent:
        return noted[1]
    return getattr(agent, "agent_executor", None)


def turn_of(context: Any) -> str | None:
    """The batch key of the tool call a ``pre_tool_call`` hook ``context`` describes, or None
    when its model turn cannot be told for sure."""
    agent = getattr(context, "agent", None)
    executor = executor_of(agent)
    messages = getattr(executor, "messages", None)
    if not isinstance(messages, list):
        return None
    name, args = getattr(context, "tool_name", None), getattr(context, "tool_input", None)
    answered: set[Any] = set()
    for message in reversed(list(messages)):
        if not isinstance(message, dict):
            return None
        role = message.get("role")
        if role == "tool":
            answered.add(message.get("tool_call_id"))
            continue
        calls = message.get("tool_calls") if role == "assistant" else None
        if not calls:
            return None  # the newest turn asked for no tool calls: not this call's
        pending = [c for c in calls if isinstance(c, dict) and c.get("id") not in answered
                   and _asks_for(c, name or "", args)]
        return _KEYS(message) if pending else None
    return None
