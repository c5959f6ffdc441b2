"""What a LlamaIndex tool call returned, read as the plain value RAC logs, maps and inspects,
and what the model is given back.

A ``FunctionTool`` returns a :class:`~llama_index.core.tools.ToolOutput` wrapping the function's
raw return value. RAC logs and maps the raw value (``result.booking_id``); an MCP tool's raw value
is the server's ``CallToolResult``, read as its structured content. A tool output or an MCP result
flagged as an error becomes ``{"error": text}``, which RAC's structured error detection reads as a
failed attempt.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.tools import ToolOutput

import rac
from rac.adapters import failure_text
from rac.mcp.errors import call_tool_result_value, is_call_tool_result
from rac.serialize import as_fields


def raw_value(value: Any) -> Any:
    """The plain value of what a tool function returned (an MCP result read by the core's
    :func:`rac.mcp.call_tool_result_value`, which imports no MCP package)."""
    if is_call_tool_result(value):
        return call_tool_result_value(value)
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
    return ToolOutput(content=failure_text(outcome), tool_name=tool_name,
                      raw_input={"args": (), "kwargs": kwargs}, raw_output=outcome.report,
                      is_error=True,
                      exception=outcome.error if isinstance(outcome.error, Exception) else None)
