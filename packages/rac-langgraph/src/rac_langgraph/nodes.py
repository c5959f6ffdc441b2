"""RAC for hand-built LangGraph graphs: a ToolNode whose calls run under RAC."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.tools import BaseTool
from langgraph.prebuilt import ToolNode

import rac
from rac_langgraph.calls import RACToolCalls


def tool_node(tools: Sequence[BaseTool | Any], *, rac: rac.RAC | None = None,
              agent_id: str | None = None, calls: RACToolCalls | None = None,
              repeatable: Sequence[str] = (), **node_kwargs: Any) -> ToolNode:
    """A ``ToolNode`` for ``tools`` whose calls run under RAC, for custom ``StateGraph`` s and
    multi-agent graphs (give each agent its own ``agent_id`` and the same ``rac`` engine).

    ``node_kwargs`` go to ``ToolNode`` (``name``, ``handle_tool_errors``, ...); pass ``calls``
    to reuse a :class:`RACToolCalls` (for instance to call its ``close()`` later).
    """
    if calls is None:
        calls = RACToolCalls(rac, agent_id=agent_id, repeatable=repeatable)
    elif rac is not None or agent_id is not None or repeatable:
        raise ValueError("pass either calls= or rac=/agent_id=/repeatable=, not both")
    return ToolNode(list(tools), wrap_tool_call=calls.wrap_tool_call,
                    awrap_tool_call=calls.awrap_tool_call, **node_kwargs)
