"""LangChain tools as RAC calls them: compensators and alternatives run outside the model's turn."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from langchain_core.tools import BaseTool

import rac

_CACHE: dict[int, tuple[BaseTool, rac.Tool]] = {}
_CACHE_LOCK = threading.Lock()


def _schema_params(tool: BaseTool) -> tuple[list[str] | None, list[str]]:
    """Parameter names the model (and RAC) may pass, and the required ones; injected arguments
    (state, runtime, tool call id) are left out."""
    schema: Any = tool.tool_call_schema
    try:
        js = schema if isinstance(schema, dict) else schema.model_json_schema()
    except Exception:  # noqa: BLE001 - an exotic schema: let RAC map by the declared paths
        return None, []
    props = js.get("properties")
    if not isinstance(props, dict):
        return None, []
    return list(props), [str(r) for r in js.get("required", ())]


def as_rac_tool(tool: BaseTool) -> rac.Tool:
    """The :class:`rac.Tool` that calls a LangChain tool directly (``invoke``/``ainvoke``).

    RAC uses it for compensating calls and for alternatives the model was not offered. The
    conversion is cached per tool object.
    """
    with _CACHE_LOCK:
        hit = _CACHE.get(id(tool))
        if hit is not None and hit[0] is tool:
            return hit[1]
    params, required = _schema_params(tool)

    def call(args: dict[str, Any]) -> Any:
        return tool.invoke(args)

    async def acall(args: dict[str, Any]) -> Any:
        return await tool.ainvoke(args)

    converted = rac.Tool(tool.name, call=call, acall=acall, params=params, required=required,
                         description=tool.description or "")
    with _CACHE_LOCK:
        _CACHE[id(tool)] = (tool, converted)
    return converted


def as_rac_tools(tools: Iterable[BaseTool | rac.Tool | Callable[..., Any]]
                 ) -> list[rac.Tool | Callable[..., Any]]:
    """Convert the LangChain tools of a list for ``rac.RAC(tools=...)``; others pass as they are."""
    return [as_rac_tool(t) if isinstance(t, BaseTool) else t for t in tools]
