"""Tools of ``Agent(mcps=[...])`` under RAC, with the pairs their servers declare.

CrewAI resolves an agent's ``mcps`` inside each task (and each standalone ``kickoff``), after
RAC wrapped the agent's tools, through ``agent.get_mcp_tools``; the tools it builds
(``MCPNativeTool``) are renamed ``<server>_<tool>`` and keep neither ``_meta`` nor the
annotations. An enabled agent's ``get_mcp_tools`` is replaced on the instance: the tools it
returns are wrapped for RAC and added to the open run, and the declarations of each server are
read from a listing of its own (one more connection, once per engine and server) with
:func:`rac.mcp.register_session_tools`, mapped to CrewAI's names by
:class:`rac.mcp.NameMap` (``MCPNativeTool.original_tool_name``). A server is trusted only
if the user says so (:class:`MCPSettings`).

CrewAI's MCP client retries a failed or timed-out call up to three times by itself. A booking
whose answer was lost would then be made twice while RAC logs one call, so the clients of
tools under RAC make one attempt each: RAC's policy decides what happens after an error
(a retry, a lookup of the effect, a rollback).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from crewai.mcp.config import MCPServerHTTP, MCPServerSSE, MCPServerStdio
from crewai.mcp.tool_resolver import MCPToolResolver
from crewai.tools import BaseTool
from crewai.tools.mcp_native_tool import MCPNativeTool
from crewai.utilities.string_utils import sanitize_tool_name
from mcp import StdioServerParameters

import rac
from rac.mcp import NameMap, register_session_tools

T = TypeVar("T")

#: Key of ``engine.extensions`` holding the engine's :class:`MCPSettings`.
SETTINGS_KEY = "rac_crewai.mcp"
#: Attribute of an ``MCPNativeTool`` whose client factory makes single-attempt clients.
_SINGLE_ATTEMPT = "_rac_crewai_single_attempt"

class StartedAdapter(Protocol):
    """crewai-tools' ``MCPServerAdapter`` as RAC reads it: the server parameters it was given
    (an attribute of its own, there being no public one)."""

    _serverparams: Any


#: A server as ``trusted_mcp`` takes one: CrewAI's configs, a server name, or (for
#: crewai-tools' ``MCPServerAdapter``) mcp's ``StdioServerParameters``, an adapter's dict
#: (``{"url": ..., "transport": ...}``) or the ``MCPServerAdapter`` itself.
ServerRef = (MCPServerStdio | MCPServerHTTP | MCPServerSSE | str | StdioServerParameters
             | Mapping[str, Any] | StartedAdapter)


def server_name(server: ServerRef) -> str:
    """The name CrewAI gives a server in its tools' names (``<server>_<tool>``): for a stdio
    server its command line, for HTTP and SSE servers its URL's host and path; a string is
    taken as that name already. The server parameters of crewai-tools' ``MCPServerAdapter``
    (and the adapter) are named as the equivalent CrewAI config would be.

    Raises :class:`rac.ConfigurationError` for anything else."""
    if isinstance(server, str):
        return server
    config = _as_config(server)
    if config is None:
        params = getattr(server, "_serverparams", None)  # crewai-tools' MCPServerAdapter
        config = _as_config(params) if params is not None else None
    if config is not None:
        return MCPToolResolver._create_transport(config)[1]
    raise rac.ConfigurationError(
        f"cannot tell which MCP server {server!r} is: give an MCPServerStdio, MCPServerHTTP or "
        "MCPServerSSE config, mcp's StdioServerParameters, an MCPServerAdapter, its "
        "{'url': ...} dict, or the server's name as CrewAI gives it")


def _as_config(server: Any) -> MCPServerStdio | MCPServerHTTP | MCPServerSSE | None:
    """``server`` as the CrewAI config naming it the same way: a config itself, mcp's
    ``StdioServerParameters``, or mcpadapt's ``{"url": ..., "transport": ...}`` (SSE unless
    it says otherwise); None for anything else."""
    if isinstance(server, MCPServerStdio | MCPServerHTTP | MCPServerSSE):
        return server
    if isinstance(server, StdioServerParameters):
        return MCPServerStdio(command=server.command, args=list(server.args), env=server.env)
    if isinstance(server, Mapping) and isinstance(server.get("url"), str):
        if server.get("transport", "sse") == "sse":
            return MCPServerSSE(url=server["url"])
        return MCPServerHTTP(url=server["url"])
    return None


@dataclass
class MCPSettings:
    """How RAC treats the MCP servers of one engine's crews.

    ``trusted`` names the servers whose read-only and idempotency claims RAC believes (see
    :mod:`rac.mcp.trust`); ``timeout`` bounds each call to a server in seconds (None:
    CrewAI's default of 30 s). A call that times out is an ambiguous failure: it may have
    happened. ``listed`` holds, per server, the CrewAI names of the tools whose declarations
    were read already (a server is listed again only for tools it did not offer then).
    """

    trusted: set[str] = field(default_factory=set)
    timeout: float | None = None
    listed: dict[str, set[str]] = field(default_factory=dict)


def settings_of(engine: rac.RAC) -> MCPSettings:
    """The engine's MCP settings (created empty on first use)."""
    found = engine.extensions.get(SETTINGS_KEY)
    if not isinstance(found, MCPSettings):
        found = engine.extensions[SETTINGS_KEY] = MCPSettings()
    return found


def configure(engine: rac.RAC, trusted: Iterable[ServerRef], timeout: float | None) -> None:
    """Add ``trusted`` servers (configs or names) and a call timeout to the engine's
    settings."""
    settings = settings_of(engine)
    settings.trusted.update(server_name(s) for s in trusted)
    if timeout is not None:
        if timeout <= 0:
            raise rac.ConfigurationError(f"mcp_timeout must be a positive number of seconds, "
                                         f"got {timeout!r}")
        settings.timeout = timeout


def run_sync(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine from synchronous code, also when an event loop runs in this thread
    (then in a thread of its own, as CrewAI does for its MCP calls)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    ctx = contextvars.copy_context()
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(ctx.run, asyncio.run, make()).result()


def single_attempt(tool: MCPNativeTool, engine: rac.RAC) -> None:
    """Make ``tool``'s calls one attempt each, bounded by the engine's MCP timeout (once)."""
    if getattr(tool, _SINGLE_ATTEMPT, False):
        return
    make_client = tool._client_factory

    def client() -> Any:
        made = make_client()
        made.max_retries = 1  # RAC decides what follows an error, not a blind repeat
        timeout = settings_of(engine).timeout
        if timeout is not None:
            made.execution_timeout = timeout
        return made

    tool._client_factory = client
    object.__setattr__(tool, _SINGLE_ATTEMPT, True)


def _servers(tools: Iterable[BaseTool]) -> dict[str, list[MCPNativeTool]]:
    by_server: dict[str, list[MCPNativeTool]] = {}
    for t in tools:
        if isinstance(t, MCPNativeTool):
            by_server.setdefault(t.server_name, []).append(t)
    return by_server


def crewai_names(server: str, tools: list[MCPNativeTool]) -> NameMap:
    """The names CrewAI gives the server's tools: those of ``tools``, and for a tool they do
    not include (filtered out) the name CrewAI would give it."""
    given = {t.original_tool_name: t.name for t in tools}

    def name(mcp_name: str) -> str:
        return given.get(mcp_name) or f"{server}_{sanitize_tool_name(mcp_name)}"

    return NameMap(name)


async def _register(engine: rac.RAC, server: str, tools: list[MCPNativeTool],
                    trusted: bool) -> None:
    client = tools[0]._client_factory()
    await client.connect()
    try:
        await register_session_tools(engine, client.session, server=server, trusted=trusted,
                                     names=crewai_names(server, tools))
    finally:
        await client.disconnect()


def adopt(engine: rac.RAC, tools: list[BaseTool]) -> None:
    """Register what the servers of ``tools`` (an agent's resolved ``mcps``) declare, once
    per engine and server, and make their calls single attempts."""
    settings = settings_of(engine)
    for server, group in _servers(tools).items():
        for t in group:
            single_attempt(t, engine)
        names = {t.name for t in group}
        if names <= settings.listed.get(server, set()):
            continue
        trusted = server in settings.trusted
        run_sync(functools.partial(_register, engine, server, group, trusted))
        settings.listed.setdefault(server, set()).update(names)
