"""LangChain tools as RAC calls them: compensators and alternatives run outside the model's turn."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from langgraph.types import Command

import rac
from rac.adapters import ToolCache, framework_tool
from rac_langgraph.results import result_value


def _tool_call(tool: BaseTool, args: dict[str, Any]) -> dict[str, Any]:
    """A tool call of ``tool``: invoked with one, a tool answers with a ``ToolMessage`` whose
    ``status`` says whether it failed (a tool that handles its errors, like those of
    langchain-mcp-adapters, otherwise returns the error as ordinary content)."""
    return {"type": "tool_call", "name": tool.name, "args": args,
            "id": f"rac-{uuid.uuid4().hex[:16]}"}


def plain(result: Any) -> Any:
    """What RAC logs for a LangChain tool's answer: the plain value of a ``ToolMessage`` or
    ``Command`` (an error message becomes ``{"error": text}``, a failure to RAC); anything
    else as it is."""
    value = result_value(result)
    return result if value is None and not isinstance(result, ToolMessage | Command) else value


def _convert(tool: BaseTool) -> rac.Tool:
    schema: Any = tool.tool_call_schema  # injected arguments (state, runtime, call id) left out

    def call(args: dict[str, Any]) -> Any:
        return plain(tool.invoke(_tool_call(tool, args)))

    async def acall(args: dict[str, Any]) -> Any:
        return plain(await tool.ainvoke(_tool_call(tool, args)))

    return framework_tool(tool.name, call=call, acall=acall, schema=schema,
                          description=tool.description or "")


#: Each LangChain tool object's conversion, least recently used out past the limit.
_CACHE: ToolCache[rac.Tool] = ToolCache(_convert, limit=1024)


def as_rac_tool(tool: BaseTool) -> rac.Tool:
    """The :class:`rac.Tool` that calls a LangChain tool directly (``invoke``/``ainvoke``).

    RAC uses it for compensating calls, lookups and alternatives the model was not offered;
    it returns the plain value of the tool's message (see :func:`plain`). The conversion is
    cached per tool object, in a bounded cache.
    """
    return _CACHE(tool)


def as_rac_tools(tools: Iterable[BaseTool | rac.Tool | Callable[..., Any]]
                 ) -> list[rac.Tool | Callable[..., Any]]:
    """Convert the LangChain tools of a list for ``rac.RAC(tools=...)``; others pass as they are."""
    return [as_rac_tool(t) if isinstance(t, BaseTool) else t for t in tools]


def rac_tool_or_none(tool: Any) -> rac.Tool | None:
    """``tool`` as a RAC tool if it is a LangChain tool, else None (left out of a tool set)."""
    return as_rac_tool(tool) if isinstance(tool, BaseTool) else None


def is_handoff_tool(tool: Any) -> bool:
    """True for a hand-off tool of langgraph-swarm or langgraph-supervisor (its metadata names
    the agent it hands over to): it moves the conversation, it changes nothing in the world."""
    metadata = getattr(tool, "metadata", None)
    return isinstance(metadata, dict) and "__handoff_destination" in metadata
