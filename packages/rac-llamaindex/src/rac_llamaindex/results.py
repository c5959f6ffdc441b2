"""What a LlamaIndex tool call returned, read as the plain value RAC logs, maps and inspects,
and what the model is given back.

A ``FunctionTool`` returns a :class:`~llama_index.core.tools.ToolOutput` wrapping the function's
raw return value. RAC logs and maps the raw value (``result.booking_id``); an MCP tool's raw value
is the server's ``CallToolResult``, read as its structured content. A tool output or an MCP result
flagged as an error becomes ``{"error": text}``, which RAC's structured error detection reads as a
failed attempt.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from llama_index.core.tools import ToolOutput

import rac
from rac.serialize import as_fields


def _mcp_text(result: Any) -> str:
    """The text blocks of an MCP ``CallToolResult``, joined."""
    texts = [getattr(block, "text", None) for block in getattr(result, "content", None) or ()]
    return "".join(t for t in texts if isinstance(t, str))


def _is_mcp_result(value: Any) -> bool:
    """True for an MCP ``CallToolResult`` (read by shape: this package does not import mcp)."""
    return hasattr(value, "isError") and hasattr(value, "structuredContent") \
        and hasattr(value, "content")


def raw_value(value: Any) -> Any:
    """The plain value of what a tool function returned."""
    if _is_mcp_result(value):
        if value.isError:
            return {"error": _mcp_text(value) or "the MCP tool reported an error"}
        structured = value.structuredContent
        if isinstance(structured, Mapping):
            # FastMCP wraps a non-object return value as {"result": value}.
            inner = structured.get("result") if list(structured) == ["result"] else None
            return inner if isinstance(inner, Mapping) else structured
        return as_fields(_mcp_text(value))
    return as_fields(value) if isinstance(value, str) else value


def output_value(output: ToolOutput) -> Any:
    """The plain value of a tool output: its raw output, or its text when it has none."""
    if output.is_error:
        return {"error": output.content or "the tool reported an error"}
    raw = output.raw_output
    return raw_value(raw) if raw is not None else as_fields(output.content)


def as_output(result: Any, tool_name: str, kwargs: dict[str, Any]) -> ToolOutput:
    """``result`` as the tool output the agent receives: a tool output as it is, anything else
    (a plain function registered with the engine, used as an alternative) as its text."""
    if isinstance(result, ToolOutput):
        return result
    return ToolOutput(content=str(result), tool_name=tool_name,
                      raw_input={"args": (), "kwargs": kwargs}, raw_output=result)


def failure_output(outcome: rac.CallOutcome, tool_name: str,
                   kwargs: dict[str, Any]) -> ToolOutput:
    """The tool output for a call RAC could not complete: the rendered recovery report (or why
    the call was refused), flagged as an error. LlamaIndex puts it in the model's next input as
    the tool's result (a ReAct agent's observation) and never ends the run on it, even for a
    ``return_direct`` tool, so the model can replan."""
    message = outcome.message or f"RAC: {tool_name} did not complete."
    return ToolOutput(content=message, tool_name=tool_name,
                      raw_input={"args": (), "kwargs": kwargs}, raw_output=outcome.report,
                      is_error=True,
                      exception=outcome.error if isinstance(outcome.error, Exception) else None)
