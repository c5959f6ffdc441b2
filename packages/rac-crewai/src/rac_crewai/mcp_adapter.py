"""Tools of crewai-tools' ``MCPServerAdapter`` (and mcpadapt's ``CrewAIAdapter``) under RAC.

``MCPServerAdapter`` holds one MCP session per server open in a thread of its own (mcpadapt's
``MCPAdapt``) and gives CrewAI one tool per MCP tool (class ``CrewAIMCPTool``). Two things
about those tools would make RAC wrong if it took them as ordinary tools:

* they hand CrewAI only the *text* of the server's answer, also of an ``isError`` answer: a
  booking the server refused would reach RAC as a success, be logged ``completed``, and never
  trigger the rollback of what came before it;
* they keep neither the server's ``_meta`` nor its annotations: no pair would be found.

So RAC calls these tools itself, through the session and MCP name each tool closes over (the
``functools.partial`` mcpadapt builds per tool, and the ``MCPAdapt`` whose loop runs the
session), with :func:`rac.mcp.session_tools`: an ``isError`` answer becomes a ``ToolFailure``
(as CrewAI's own ``MCPNativeTool`` returns one), any other is rendered as the adapter renders
it, so the agent reads the same text. The server's declarations are read with
:func:`rac.mcp.register_session_tools` over the same session (no new connection), mapped to
the adapter's tool names. Each call is one attempt (mcpadapt does not repeat calls); the
engine's ``mcp_timeout`` bounds it.

Those closures are mcpadapt's and crewai-tools' internals (checked on mcpadapt 0.1.19/0.1.20,
crewai-tools 1.15). A tool of theirs whose shape RAC cannot read is refused with a
:class:`rac.ConfigurationError` when RAC is enabled: its errors would read as successes.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from crewai.tools import BaseTool
from crewai.tools.tool_failure import ToolFailure, ToolFailureReason
from crewai.utilities.string_utils import sanitize_tool_name

import rac
from rac.events import emit
from rac.mcp import NameMap, register_session_tools, session_tools
from rac_crewai.mcp_tools import MCPSettings, run_sync, server_name, settings_of

#: Modules whose ``CrewAIMCPTool`` classes are mcpadapt-made tools, and whether the module
#: sanitizes MCP names into tool names (crewai-tools does; mcpadapt keeps them).
ADAPTER_MODULES = {"crewai_tools.adapters.mcp_adapter": True, "mcpadapt.crewai_adapter": False}
#: Instance attribute of an adapter tool holding its :class:`AdapterBinding`.
_BINDING = "_rac_crewai_adapter_binding"
#: How long RAC waits for the adapter's session to list the server's tools, in seconds.
LIST_TIMEOUT = 30.0


@dataclass
class AdapterBinding:
    """What one adapter tool calls: ``mcp_name`` on ``session``, whose event loop is ``loop``;
    ``listed`` is the MCP tool as the adapter listed it, ``params`` the adapter's server
    parameters for it, ``server`` the server's name (as
    :func:`rac_crewai.mcp_tools.server_name` gives it for the adapter's server parameters),
    ``settings`` the MCP settings of the engine that adopted the tool (its timeout)."""

    session: Any
    mcp_name: str
    loop: asyncio.AbstractEventLoop
    listed: Any
    params: Any
    server: str
    sanitizes: bool
    settings: MCPSettings

    def call(self, args: dict[str, Any]) -> Any:
        """Call the MCP tool once with ``args``: the adapter's text, or a ``ToolFailure`` for
        an ``isError`` answer. MCP errors (a timeout, a lost connection) are raised as the
        SDK raises them, for :class:`rac.mcp.MCPErrors` to classify.

        If the adapter's connection is gone (its server process died: the request could not
        be sent), the call is made on a connection of its own to the same server, opened and
        closed for it, as CrewAI's ``Agent(mcps=...)`` makes every call: a lookup or a
        compensation after a crash still reaches the server."""
        try:
            result = asyncio.run_coroutine_threadsafe(
                self._acall(self.session, args), self.loop).result()
        except Exception as e:
            if not connection_gone(e):
                raise
            emit("rac_crewai.mcp_adapter.reconnecting", server=self.server, tool=self.mcp_name,
                 status="reconnecting", error=type(e).__name__,
                 reason="the adapter's connection to the server is closed; the call was not "
                        "sent, and is made on a new connection")
            result = run_sync(functools.partial(self._afresh, args))
        text = rendered(result)
        if getattr(result, "isError", False):
            return ToolFailure(message=text or "the MCP tool reported an error with no text",
                               reason=ToolFailureReason.MCP_ERROR,
                               details={"server": self.server, "tool": self.mcp_name})
        return text

    async def _acall(self, session: Any, args: dict[str, Any]) -> Any:
        [tool] = session_tools(session, [self.listed], timeout=self.settings.timeout)
        assert tool.acall is not None  # session_tools makes async tools
        return await tool.acall(args)

    async def _afresh(self, args: dict[str, Any]) -> Any:
        from mcpadapt.core import mcptools  # present: the tool came from mcpadapt

        async with mcptools(self.params, None) as (session, _):
            return await self._acall(session, args)


def connection_gone(error: BaseException) -> bool:
    """True if ``error`` says the connection was closed before the request was sent
    (anyio's ``ClosedResourceError``/``BrokenResourceError``): the call did not happen."""
    import anyio

    return isinstance(error, anyio.ClosedResourceError | anyio.BrokenResourceError)


def rendered(result: Any) -> str:
    """The text crewai-tools' adapter gives CrewAI for a ``CallToolResult``: the one text
    block's text, another single block as a string, or the list of the text blocks' texts."""
    content = list(getattr(result, "content", None) or ())
    if len(content) == 1:
        text = getattr(content[0], "text", None)
        return text if isinstance(text, str) else str(content[0])
    return str([c.text for c in content if isinstance(getattr(c, "text", None), str)])


def is_adapter_tool(tool: BaseTool) -> bool:
    """True for a tool made by crewai-tools' ``MCPServerAdapter`` or mcpadapt's
    ``CrewAIAdapter``."""
    cls = type(tool)
    return cls.__name__ == "CrewAIMCPTool" and cls.__module__ in ADAPTER_MODULES


def _cells(fn: Any) -> dict[str, Any]:
    """The variables ``fn`` closes over, by name."""
    code = getattr(fn, "__code__", None)
    closure = getattr(fn, "__closure__", None) or ()
    found: dict[str, Any] = {}
    for name, cell in zip(code.co_freevars if code else (), closure, strict=False):
        try:
            found[name] = cell.cell_contents
        except ValueError:  # a cell not filled yet
            continue
    return found


def _read(tool: BaseTool, settings: MCPSettings) -> AdapterBinding | None:
    """The binding of an adapter tool, read off mcpadapt's closures; None if their shape is
    not the one RAC knows."""
    func = _cells(type(tool)._run).get("func")
    if not isinstance(func, functools.partial) or len(func.args) != 2:
        return None
    session, mcp_name = func.args
    adapt = _cells(func.func).get("self")
    loop = getattr(adapt, "loop", None)
    sessions = getattr(adapt, "sessions", None)
    listings = getattr(adapt, "mcp_tools", None)
    params = getattr(adapt, "serverparams", None)
    if not (isinstance(mcp_name, str) and isinstance(loop, asyncio.AbstractEventLoop)
            and callable(getattr(session, "call_tool", None)) and isinstance(sessions, list)
            and isinstance(listings, list) and isinstance(params, list)):
        return None
    index = next((i for i, s in enumerate(sessions) if s is session), None)
    if index is None or index >= len(listings) or index >= len(params):
        return None
    listed = next((t for t in listings[index] if getattr(t, "name", None) == mcp_name), None)
    if listed is None:
        return None
    return AdapterBinding(session=session, mcp_name=mcp_name, loop=loop, listed=listed,
                          params=params[index], server=server_name(params[index]),
                          sanitizes=ADAPTER_MODULES[type(tool).__module__], settings=settings)


def binding_of(tool: BaseTool, settings: MCPSettings | None = None) -> AdapterBinding | None:
    """The :class:`AdapterBinding` of an adapter tool (read once, then kept on the tool; given
    ``settings``, bound to them), None for any other tool.

    Raises :class:`rac.ConfigurationError` for an adapter tool RAC cannot read."""
    if not is_adapter_tool(tool):
        return None
    kept = tool.__dict__.get(_BINDING)
    if isinstance(kept, AdapterBinding) and (settings is None or kept.settings is settings):
        return kept
    found = _read(tool, settings if settings is not None else MCPSettings())
    if found is None:
        raise rac.ConfigurationError(
            f"tool {tool.name!r} comes from crewai-tools' MCPServerAdapter (mcpadapt), but RAC "
            "cannot find the MCP session it calls in this version: it would hand RAC only the "
            "text of the server's answers, so a failed call would read as a success. Give the "
            "agent the server as Agent(mcps=[...]) instead, or pin crewai-tools 1.15 and "
            "mcpadapt 0.1.19-0.1.20")
    object.__setattr__(tool, _BINDING, found)
    return found


def adopt_adapter_tools(engine: rac.RAC, tools: Iterable[BaseTool]) -> None:
    """Bind the adapter tools among ``tools`` to ``engine`` and register what their servers
    declare, once per engine and server (through the adapter's own session)."""
    settings = settings_of(engine)
    by_session: dict[int, list[tuple[BaseTool, AdapterBinding]]] = {}
    for t in tools:
        binding = binding_of(t, settings)
        if binding is not None:
            by_session.setdefault(id(binding.session), []).append((t, binding))
    for group in by_session.values():
        first = group[0][1]
        names = {t.name for t, _ in group}
        if names <= settings.listed.get(first.server, set()):
            continue
        listing = register_session_tools(engine, first.session, server=first.server,
                                         trusted=first.server in settings.trusted,
                                         names=adapter_names(group))
        try:
            asyncio.run_coroutine_threadsafe(listing, first.loop).result(timeout=LIST_TIMEOUT)
        except rac.ConfigurationError:
            raise  # a malformed declaration: named by the MCP mechanism
        except Exception as e:
            listing.close()  # never scheduled if the adapter's loop is closed
            raise rac.ConfigurationError(
                f"cannot read what MCP server {first.server!r} declares about its tools "
                f"({', '.join(sorted(names))}): listing them over the MCPServerAdapter's "
                f"session failed with {type(e).__name__}: {e}. Is the adapter started and "
                "its server running?") from e
        settings.listed.setdefault(first.server, set()).update(names)


def adapter_names(group: list[tuple[BaseTool, AdapterBinding]]) -> NameMap:
    """The names the adapter gave a server's tools (MCP name to tool name); a tool not among
    them (filtered out) named as the adapter would name it."""
    given = {b.mcp_name: t.name for t, b in group}
    sanitizes = group[0][1].sanitizes

    def name(mcp_name: str) -> str:
        return given.get(mcp_name) or (sanitize_tool_name(mcp_name) if sanitizes else mcp_name)

    return NameMap(name)


def adapter_params(server: Any) -> Any:
    """The server parameters of a crewai-tools ``MCPServerAdapter`` (``server`` itself for
    anything else)."""
    params = getattr(server, "_serverparams", None)
    return params if params is not None and not isinstance(server, Mapping) else server
