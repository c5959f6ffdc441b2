"""LangGraph's node cache, made to forget what a rollback made stale.

A ``ToolNode`` cached by LangGraph (``add_node("tools", node, cache_policy=...)`` with a
graph compiled with ``cache=``) answers a repeated call from the cache without running the
tool, so RAC never sees it. A read made before a rollback would then be served as current
after it: a booking cancelled by the rollback read as live. :func:`tool_cache_policy` keys the
cache on the calls the node is asked to make (their tools and arguments, not their ids, which
every model message makes new) and on how many rollbacks this process has seen, so every entry
made before a rollback is a miss after it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

from langgraph.types import CachePolicy

_lock = threading.Lock()
#: How many rollbacks this process has seen (its engines' own, and runs found rolled back in
#: the log): part of every cache key of :func:`tool_cache_key`.
_seen = 0


def rolled_back() -> None:
    """A rollback happened, or was found in the log: every cached tool result is stale."""
    global _seen
    with _lock:
        _seen += 1


def tool_cache_key(node_input: Any) -> str:
    """The cache key of a tool node's input: the calls it is asked to make (the last model
    message's tool calls, or the one call ``create_agent`` sends a node), by tool and
    arguments, and the number of rollbacks seen so far."""
    calls = [[c.get("name"), c.get("args")] for c in _calls(node_input)]
    return json.dumps([_seen, calls], sort_keys=True, default=str)


def tool_cache_policy(ttl: int | None = None) -> CachePolicy[Any]:
    """A LangGraph ``CachePolicy`` for a tool node under RAC (``ttl``: seconds an entry
    lasts, None: until the cache is cleared) whose entries never outlive a rollback (see
    :func:`tool_cache_key`)."""
    return CachePolicy(key_func=tool_cache_key, ttl=ttl)


def _calls(node_input: Any) -> list[Mapping[str, Any]]:
    if isinstance(node_input, Mapping):
        call = node_input.get("tool_call")
        if isinstance(call, Mapping):  # create_agent's Send of one call
            return [call]
        messages = node_input.get("messages")
    else:
        messages = node_input if isinstance(node_input, list) else getattr(
            node_input, "messages", None)
    for m in reversed(messages or []):
        calls = getattr(m, "tool_calls", None)
        if calls:
            return list(calls)
    return []
