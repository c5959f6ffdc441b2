"""Compensation pairs for the functions of Semantic Kernel's MCP plugins.

SK's MCP plugins (``MCPStdioPlugin``, ``MCPSsePlugin``, ...) turn each MCP tool into a kernel
function but keep neither the tool's ``_meta`` nor its annotations, and they rename tools to fit
SK's name rules. The plugin's own session still lists the raw tools: RAC registers their
declarations with :func:`rac.mcp.register_session_tools` (validated, and trusted only as far
as the user says), with a :class:`rac.mcp.NameMap` from each MCP name to the logged name of the
kernel function that calls it (the function's method is ``plugin.call_tool`` bound to the MCP
name), so the pairs land under the names the log uses, e.g. ``travel-book_flight``.

SK also turns a tool's error result (``isError``) into ordinary text. RAC makes the plugin's
session raise :class:`MCPToolError` for it instead, so a failed MCP call is a failure RAC
retries, replaces or rolls back, never a success it would later try to undo.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

from semantic_kernel.functions import KernelFunction

import rac
from rac.mcp import NameMap, register_session_tools

_PATCHED = "_rac_semantic_kernel_checked"


class MCPToolError(Exception):
    """An MCP tool answered with an error result (``isError``); the text is the server's."""

    def __init__(self, tool: str, text: str) -> None:
        super().__init__(f"MCP tool {tool!r} failed: {text}")
        self.tool = tool
        self.text = text


def mcp_target(fn: KernelFunction) -> tuple[Any, str] | None:
    """(MCP plugin object, MCP tool name) if ``fn`` calls a tool of an SK MCP plugin."""
    method = getattr(fn, "method", None)
    if not isinstance(method, functools.partial) or len(method.args) != 1:
        return None
    bound = method.func
    owner = getattr(bound, "__self__", None)
    if owner is None or getattr(bound, "__name__", "") != "call_tool":
        return None
    try:
        from semantic_kernel.connectors.mcp import MCPPluginBase
    except ImportError:  # pragma: no cover - SK installed without its MCP extra
        return None
    if not isinstance(owner, MCPPluginBase) or not isinstance(method.args[0], str):
        return None
    return owner, method.args[0]


def _error_text(result: Any) -> str:
    parts = [getattr(c, "text", None) for c in getattr(result, "content", []) or []]
    return " ".join(p for p in parts if p) or "error result"


def _check_errors(session: Any) -> None:
    """Make ``session.call_tool`` raise :class:`MCPToolError` on an error result (once)."""
    if getattr(session, _PATCHED, False):
        return
    call: Callable[..., Awaitable[Any]] = session.call_tool

    @functools.wraps(call)
    async def checked(name: str, *args: Any, **kwargs: Any) -> Any:
        result = await call(name, *args, **kwargs)
        if getattr(result, "isError", False):
            raise MCPToolError(name, _error_text(result))
        return result

    session.call_tool = checked
    setattr(session, _PATCHED, True)


async def adopt_mcp_plugin(engine: rac.RAC, plugin: Any, names: dict[str, str], *,
                           trusted: bool = False) -> None:
    """Register the declarations ``plugin``'s server makes for its tools, under the logged names
    (``names``: MCP tool name -> logged name of the kernel function calling it)."""
    session = getattr(plugin, "session", None)
    if session is None:
        raise rac.ConfigurationError(
            f"MCP plugin {getattr(plugin, 'name', plugin)!r} is not connected: open it "
            f"(async with plugin / await plugin.connect()) before its functions are called")
    _check_errors(session)
    await register_session_tools(engine, session, server=getattr(plugin, "name", None),
                                 trusted=trusted, names=NameMap(names))
