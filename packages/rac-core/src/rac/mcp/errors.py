"""What MCP failures mean for RAC: error codes classified, ``isError`` results detected.

A tool called over MCP fails in three ways, and RAC reads each:

* the call's result says ``isError: true`` (the tool ran and reported a failure; MCP server
  frameworks turn any exception of a tool into one): the result is read as
  ``{"error": <its text>}``, an error result, *ambiguous* (the tool may have written before it
  failed) unless a trusted server declares in its recovery metadata that its error results
  come before any effect (``errors_before_effect``);
* the request got a JSON-RPC error: rejected before the tool ran (``-32700`` parse error,
  ``-32600`` invalid request, ``-32601`` method not found, ``-32602`` invalid params,
  ``-32042`` URL elicitation required) is **permanent**; the request timing out (the Python
  SDK's ``408``, the TypeScript SDK's ``-32001``), the connection closing with the request
  outstanding (``-32000``) and an internal error of the server (``-32603``) are **ambiguous**:
  the tool may have run;
* the transport's stream was already closed when the request was to be sent
  (``anyio.ClosedResourceError``, our own end closed): nothing was sent, **transient**. A
  *broken* stream (``anyio.BrokenResourceError``: what a client whose call timed out raises,
  after the server may have run the tool) is **ambiguous** (:data:`rac.classify.LIBRARY_ERRORS`).

Exceptions are matched by their class name and attributes (``McpError``/``MCPError`` with
``.error.code``), also when another exception wraps them (``__cause__``/``__context__``, an
exception group); this module imports neither ``mcp`` nor ``anyio``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rac.classify import Classification, ErrorKind
from rac.hookspecs import hookimpl
from rac.serialize import as_fields

#: Name under which :class:`MCPErrors` is registered in an engine's plugin manager.
PLUGIN_NAME = "rac.mcp.errors"

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
INTERNAL_ERROR, CONNECTION_CLOSED, REQUEST_TIMEOUT = -32603, -32000, -32001
URL_ELICITATION_REQUIRED = -32042
#: The code the Python SDK (1.x) gives a request that timed out (HTTP 408).
SDK_REQUEST_TIMEOUT = 408

_PERMANENT_CODES = {PARSE_ERROR: "parse error", INVALID_REQUEST: "invalid request",
                    METHOD_NOT_FOUND: "method not found", INVALID_PARAMS: "invalid params",
                    URL_ELICITATION_REQUIRED: "URL elicitation required"}
_AMBIGUOUS_CODES = {SDK_REQUEST_TIMEOUT: "request timed out", REQUEST_TIMEOUT: "request timed out",
                    CONNECTION_CLOSED: "connection closed with the request outstanding",
                    INTERNAL_ERROR: "internal error of the server"}
_MCP_ERROR_NAMES = frozenset({"McpError", "MCPError"})
_NOT_SENT_NAMES = frozenset({"ClosedResourceError"})


def mcp_error_code(error: BaseException) -> int | None:
    """The JSON-RPC code of an MCP SDK error (``McpError``/``MCPError``), or None."""
    if not any(cls.__name__ in _MCP_ERROR_NAMES for cls in type(error).__mro__):
        return None
    data = getattr(error, "error", None)
    code = getattr(data, "code", None) if data is not None else getattr(error, "code", None)
    return code if isinstance(code, int) else None


def _classify_one(error: BaseException) -> Classification | None:
    code = mcp_error_code(error)
    if code is not None:
        if code in _AMBIGUOUS_CODES:
            return Classification(ErrorKind.AMBIGUOUS, None, f"MCP {code}: {_AMBIGUOUS_CODES[code]}")
        if code in _PERMANENT_CODES:
            return Classification(ErrorKind.PERMANENT, None, f"MCP {code}: {_PERMANENT_CODES[code]}")
        # Another server-defined code: the server answered, so it did not lose the call; what
        # it means is the server's, and RAC does not guess that a repeat would go better.
        return Classification(ErrorKind.PERMANENT, None, f"MCP error {code}")
    cls = type(error)
    if cls.__name__ in _NOT_SENT_NAMES and cls.__module__.split(".")[0] == "anyio":
        return Classification(ErrorKind.TRANSIENT, None,
                              f"MCP transport closed before sending ({cls.__name__})")
    return None


def classify_mcp_error(error: BaseException) -> Classification | None:
    """The classification of an MCP failure (see the module docstring), or None if ``error``
    is not one. Looks through wrapping exceptions and exception groups; of several MCP errors
    in a group, the most careful verdict wins (ambiguous, then permanent, then transient)."""
    seen: set[int] = set()
    found: list[Classification] = []
    stack: list[BaseException] = [error]
    while stack and len(seen) < 32:
        err = stack.pop()
        if id(err) in seen:
            continue
        seen.add(id(err))
        verdict = _classify_one(err)
        if verdict is not None:
            found.append(verdict)
            continue
        nested = getattr(err, "exceptions", None)
        if isinstance(err, BaseExceptionGroup) and nested:
            stack.extend(nested)
        for inner in (err.__cause__, err.__context__):
            if inner is not None:
                stack.append(inner)
    if not found:
        return None
    order = (ErrorKind.AMBIGUOUS, ErrorKind.PERMANENT, ErrorKind.TRANSIENT)
    return min(found, key=lambda c: order.index(c.kind))


def is_call_tool_result(value: Any) -> bool:
    """True if ``value`` is an MCP ``CallToolResult`` (1.x or 2.x shape)."""
    return type(value).__name__ == "CallToolResult" and hasattr(value, "content") and (
        hasattr(value, "isError") or hasattr(value, "is_error"))


def _text(content: Any) -> str:
    parts: list[str] = []
    for block in content or ():
        text = block.get("text") if isinstance(block, Mapping) else getattr(block, "text", None)
        if isinstance(text, str):
            parts.append(text)
    return "".join(parts)


def call_tool_result_value(result: Any) -> Any:
    """The plain value of a ``CallToolResult``: ``{"error": text}`` if it says ``isError``,
    else its structured content (FastMCP's ``{"result": x}`` wrapper of a non-object return
    unwrapped), else its text content (JSON parsed)."""
    is_error = getattr(result, "isError", None)
    if is_error is None:
        is_error = getattr(result, "is_error", False)
    text = _text(getattr(result, "content", None))
    if is_error:
        return {"error": text or "the MCP tool reported an error with no text"}
    structured = getattr(result, "structuredContent", None)
    if structured is None:
        structured = getattr(result, "structured_content", None)
    if isinstance(structured, Mapping):
        return structured_value(structured)
    return as_fields(text) if text else None


def structured_value(structured: Any) -> Any:
    """A tool's structured MCP result as its plain value: FastMCP's ``{"result": x}`` wrapper
    of a return value that is not an object unwrapped."""
    if isinstance(structured, Mapping):
        if set(structured) == {"result"}:
            return structured["result"]
        return dict(structured)
    return structured


class MCPErrors:
    """RAC plugin: classifies MCP errors (``rac_classify_error``) and reads ``CallToolResult``
    values, ``isError`` results as failures (``rac_normalize_result``).

    :func:`rac.mcp.register_mcp_tools` registers it on the engine; add it yourself with
    ``rac.RAC(plugins=[rac.mcp.MCPErrors()])`` to classify MCP errors of tools registered
    otherwise.
    """

    @hookimpl
    def rac_classify_error(self, tool: str, error: BaseException) -> Classification | None:
        return classify_mcp_error(error)

    @hookimpl
    def rac_normalize_result(self, tool: str, result: Any) -> Any:
        if is_call_tool_result(result):
            return call_tool_result_value(result)
        return None


