"""Which model turn asked for a tool call: the key of the call's parallel batch.

CrewAI runs the tool calls of one model message in a thread pool; RAC must treat them as one
batch (once a rollback begins, a sibling that has not started is refused, one still running is
undone when it returns). The model call itself runs in another thread than the one that starts
the tools, so a context variable set before it never reaches them. What the tool's thread can
see is the executing agent's conversation: the assistant message that asked for this call is
its turn. :func:`turn_of` finds it (the newest assistant message with tool calls, holding an
unanswered call of this tool with these arguments) and names it by identity. When it cannot be
found for sure (an executor RAC cannot see, arguments changed by a hook) the answer is None: the
call is a batch of its own, which is never a false refusal.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from rac.adapters import ToolCache

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


def turn_of(context: Any) -> str | None:
    """The batch key of the tool call a ``pre_tool_call`` hook ``context`` describes, or None
    when its model turn cannot be told for sure."""
    agent = getattr(context, "agent", None)
    executor = getattr(agent, "agent_executor", None)
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
