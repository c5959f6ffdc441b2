"""LlamaIndex tools as RAC sees them: by name, callable with a dict of arguments.

Compensations and alternatives are called by RAC directly (not through the model), so RAC needs
the agent's own tools by name. :func:`as_rac_tool` adapts one LlamaIndex tool; its parameter
names come from the tool's argument schema, so RAC can map compensation arguments by name.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from contextvars import ContextVar
from typing import Any

from llama_index.core.tools import FunctionTool
from llama_index.core.tools.types import BaseTool, adapt_to_async_tool

import rac
from rac.adapters import params_from_schema

#: The workflow ``Context`` of the tool call being made in this task, if any: handed to a
#: context-taking compensator or alternative RAC calls during that call.
CALL_CONTEXT: ContextVar[Any] = ContextVar("rac_llamaindex_call_context", default=None)
#: The name of the guarded (logged) tool whose inner call is under way in this task, if any:
#: an enabled agent's ``run()`` inside it is an undeclared delegation.
CALLING: ContextVar[str | None] = ContextVar("rac_llamaindex_calling", default=None)
#: The workflow ``Context`` of each RAC run's latest workflow run (its handler's), for a
#: context-taking compensator RAC calls during another tool's call or as the run closes.
RUN_CONTEXTS: weakref.WeakKeyDictionary[rac.Run, Any] = weakref.WeakKeyDictionary()


def unwrap(tool: BaseTool) -> BaseTool:
    """The user's tool behind a RAC wrapper (or ``tool`` itself)."""
    inner = getattr(tool, "rac_inner", None)
    return inner if isinstance(inner, BaseTool) else tool


def tool_name(tool: BaseTool) -> str:
    """The name the model calls ``tool`` by."""
    return tool.metadata.get_name()


def schema_of(tool: BaseTool) -> dict[str, Any]:
    """The JSON schema of ``tool``'s arguments (empty when it has none or it cannot be built)."""
    try:
        schema = tool.metadata.get_parameters_dict()
    except Exception:  # noqa: BLE001 - a schema that cannot be built: parameters unknown
        return {}
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict):
        return {}
    required = [r for r in schema.get("required") or [] if r in props]
    return {"type": "object", "properties": props, "required": required}


def context_kwargs(tool: BaseTool) -> dict[str, Any]:
    """The ``Context`` argument a context-taking ``FunctionTool`` needs: the current tool call's,
    else that of the current run's workflow.

    Raises an error naming the tool when there is neither (RAC recovering a run in a fresh
    process, or a run no enabled agent's ``run()`` took part in)."""
    if not (isinstance(tool, FunctionTool) and tool.requires_context and tool.ctx_param_name):
        return {}
    ctx = CALL_CONTEXT.get()
    if ctx is None:
        run = rac.current_run()
        ctx = RUN_CONTEXTS.get(run) if run is not None else None
    if ctx is None:
        raise rac.ConfigurationError(
            f"tool {tool_name(tool)!r} takes a workflow Context, and RAC is calling it outside "
            "any workflow run: a compensator or alternative used here should not need one")
    return {tool.ctx_param_name: ctx}


def as_rac_tool(tool: BaseTool) -> rac.Tool:
    """A :class:`rac.Tool` calling the LlamaIndex tool (the user's, behind any RAC wrapper); it
    returns the tool's ``ToolOutput``."""
    inner = unwrap(tool)
    async_tool = adapt_to_async_tool(inner)

    def call(args: dict[str, Any]) -> Any:
        return async_tool.call(**args, **context_kwargs(inner))

    async def acall(args: dict[str, Any]) -> Any:
        return await async_tool.acall(**args, **context_kwargs(inner))

    schema = schema_of(inner)
    params, required = params_from_schema(schema or None)
    # Built here rather than with rac.adapters.framework_tool, to keep the whole schema
    # (argument types and descriptions) for what RAC shows a model proposing compensations.
    return rac.Tool(tool_name(inner), call=call, acall=acall, params=params,
                    required=required, schema=schema or None,
                    description=inner.metadata.description or "")


def unique_by_name(tools: Iterable[BaseTool]) -> list[BaseTool]:
    """The first tool of each name, in order."""
    seen: dict[str, BaseTool] = {}
    for t in tools:
        seen.setdefault(tool_name(t), t)
    return list(seen.values())
