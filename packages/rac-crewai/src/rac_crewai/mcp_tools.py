"""Tools of ``Agent(mcps=[...])`` under RAC, with the pairs their servers declare.

CrewAI resolves an agent's ``mcps`` inside each task (and each standalone ``kickoff``), after
RAC wrapped the agent's tools, through ``agent.get_mcp_tools``; the tools it builds
(``MCPNativeTool``) keep neither ``_meta`` nor the annotations, and are named
``<server>_<tool>`` where ``<server>`` is, for a stdio server, its whole command line (file-system
paths the model would read, and a log would key on, that change with the checkout). An enabled
agent's ``get_mcp_tools`` is replaced on the instance: the tools it returns are renamed
``<name>_<tool>``, ``<name>`` being the name the user gave the server (``mcp_names=``) or else
the one the server declares for itself when it is initialized (``serverInfo.name``), made unique
per engine; they are then wrapped for RAC and added to the open run. The declarations of each
server are read from a listing of its own (one more connection, once per engine and server)
with :func:`rac.mcp.register_session_tools`, mapped to those names by :class:`rac.mcp.NameMap`
(``MCPNativeTool.original_tool_name``). A server is trusted only if the user says so
(:class:`MCPSettings`): by its config, CrewAI's name for it, or the name the user gave it, never
by the name it declares (any server can declare any name).

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

import anyio
from crewai.mcp.config import MCPServerHTTP, MCPServerSSE, MCPServerStdio
from crewai.mcp.tool_resolver import MCPToolResolver
from crewai.tools import BaseTool
from crewai.tools.mcp_native_tool import MCPNativeTool
from crewai.utilities.string_utils import sanitize_tool_name
from mcp import ClientSession, StdioServerParameters

import rac
from rac.mcp import NameMap, register_session_tools
from rac_crewai.errors import describe, real_error

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
    """The name CrewAI gives a server (``MCPNativeTool.server_name``): for a stdio server its
    command line, for HTTP and SSE servers its URL's host and path; a string is taken as that
    name already. The server parameters of crewai-tools' ``MCPServerAdapter`` (and the adapter)
    are named as the equivalent CrewAI config would be. RAC keys its settings by it (trust, the
    names given); its tools are named by :func:`tool_name`, not by it.

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
    #: the name the user gave each server (by CrewAI's name for it)
    given: dict[str, str] = field(default_factory=dict)
    #: the name RAC's tool names use for each server it listed (by CrewAI's name for it)
    names: dict[str, str] = field(default_factory=dict)

    def is_trusted(self, server: str) -> bool:
        """True if the user trusts ``server`` (CrewAI's name for it), by its config or CrewAI's
        name, or by the name they gave it."""
        given = self.given.get(server)
        return server in self.trusted or (given is not None and given in self.trusted)

    def name_for(self, server: str, declared: str | None) -> str:
        """The name of ``server`` (CrewAI's name for it) in its tools' names: the name the user
        gave it, else the one it ``declared`` (sanitized; ``mcp`` if none), with ``_2``,
        ``_3``... after it when another server of the engine has it already (two copies of one
        server are two systems: a tool of one must never be undone through the other)."""
        known = self.names.get(server)
        if known is not None:
            return known
        given = self.given.get(server)
        base = given if given is not None else sanitize_tool_name(declared or "") or "mcp"
        taken = set(self.names.values())
        name, n = base, 1
        while name in taken:
            if given is not None:
                raise rac.ConfigurationError(
                    f"two MCP servers are both named {given!r} (mcp_names=...): give each "
                    "its own name")
            n += 1
            name = f"{base}_{n}"
        self.names[server] = name
        return name


def settings_of(engine: rac.RAC) -> MCPSettings:
    """The engine's MCP settings (created empty on first use)."""
    found = engine.extensions.get(SETTINGS_KEY)
    if not isinstance(found, MCPSettings):
        found = engine.extensions[SETTINGS_KEY] = MCPSettings()
    return found


def configure(engine: rac.RAC, trusted: Iterable[ServerRef], timeout: float | None,
              names: Mapping[str, ServerRef] | None = None) -> None:
    """Add ``trusted`` servers (configs or names), a call timeout and the names the user gives
    servers (``{name: server}``) to the engine's settings."""
    settings = settings_of(engine)
    for given, server in (names or {}).items():
        if not isinstance(given, str) or sanitize_tool_name(given) != given:
            raise rac.ConfigurationError(
                f"an MCP server's name in mcp_names must be lowercase letters, digits and "
                f"underscores (it starts its tools' names), got {given!r}; e.g. "
                f"{sanitize_tool_name(str(given)) or 'travel'!r}")
        key = server_name(server)
        before = settings.names.get(key) or settings.given.get(key)
        if before is not None and before != given:
            raise rac.ConfigurationError(
                f"this MCP server is named {before!r} already in this engine, so it cannot "
                f"be named {given!r}: its tools' names in the log cannot change")
        settings.given[key] = given
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


def tool_name(server: str, mcp_name: str) -> str:
    """The name of MCP tool ``mcp_name`` of the server RAC names ``server``, as the agent, RAC's
    log and its registry know it (sanitized as CrewAI sanitizes names for the model)."""
    return sanitize_tool_name(f"{server}_{mcp_name}")


def crewai_names(server: str, tools: list[MCPNativeTool]) -> NameMap:
    """The names of the server's tools (``server`` as RAC names it): those of ``tools``, and
    for a tool they do not include (filtered out) the name it would be given."""
    given = {t.original_tool_name: t.name for t in tools}

    def name(mcp_name: str) -> str:
        return given.get(mcp_name) or tool_name(server, mcp_name)

    return NameMap(name)


def rename(tools: list[MCPNativeTool], server: str) -> None:
    """Name each of ``tools`` (CrewAI's, named after the server's command line) after the
    server's RAC name and its MCP name."""
    for t in tools:
        t.name = tool_name(server, t.original_tool_name)


async def _register(engine: rac.RAC, server: str, tools: list[MCPNativeTool]) -> None:
    """Connect to ``server`` (CrewAI's name for it) as its tools would, learn the name it
    declares, name its tools and register what it declares about them."""
    settings = settings_of(engine)
    client = tools[0]._client_factory()
    transport = client.transport
    async with transport, ClientSession(transport.read_stream, transport.write_stream) as session:
        # anyio's own timeout, not asyncio.wait_for: before Python 3.12 wait_for can swallow the
        # cancellation of the transport's task group when the server exits mid-handshake, and
        # the listing then ends in a bare CancelledError instead of the server's real error.
        with anyio.fail_after(client.connect_timeout):
            init = await session.initialize()
        name = settings.name_for(server, getattr(init.serverInfo, "name", None))
        rename(tools, name)
        await register_session_tools(engine, session, server=name,
                                     trusted=settings.is_trusted(server),
                                     names=crewai_names(name, tools))


def adopt(engine: rac.RAC, tools: list[BaseTool]) -> None:
    """Name the tools of the servers of ``tools`` (an agent's resolved ``mcps``) after their
    servers' RAC names, register what the servers declare, once per engine and server, and
    make their calls single attempts."""
    settings = settings_of(engine)
    for server, group in _servers(tools).items():
        for t in group:
            single_attempt(t, engine)
        name = settings.names.get(server)
        if name is not None:
            rename(group, name)
            if {t.name for t in group} <= settings.listed.get(server, set()):
                continue
        try:
            run_sync(functools.partial(_register, engine, server, group))
        except rac.ConfigurationError:
            raise  # a malformed declaration: named by the MCP mechanism
        except Exception as e:  # named by its real cause, not anyio's "unhandled errors in a
            cause = real_error(e)  # TaskGroup (1 sub-exception)"
            called = name or settings.given.get(server) or server
            raise rac.ConfigurationError(
                f"cannot read what MCP server {called!r} declares about its tools "
                f"({', '.join(sorted(t.original_tool_name for t in group))}): connecting to "
                f"it failed with {describe(cause)}. Is the server running?"
            ) from e
        settings.listed.setdefault(server, set()).update(t.name for t in group)
