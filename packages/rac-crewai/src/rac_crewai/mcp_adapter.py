"""Tools of crewai-tools' ``MCPServerAdapter`` (and mcpadapt's ``CrewAIAdapter``) under RAC.

``MCPServerAdapter`` holds one MCP session per server open in a thread of its own (mcpadapt's
``MCPAdapt``) and gives CrewAI one tool per MCP tool (class ``CrewAIMCPTool``). Two things
about those tools would make RAC wrong if it took them as ordinary tools:

* they hand CrewAI only the *text* of the server's answer, also of an ``isError`` answer: a
  booking the server refused would reach RAC as a success, be logged ``completed``, and never
  trigger the rollback of what came before it;
* they keep neither the server's ``_meta`` nor its annotations: no pair would be found.

So RAC calls these tools itself, through the session and MCP name each tool's class closes
over (the ``functools.partial`` mcpadapt builds per tool, and the ``MCPAdapt`` whose loop runs
the session), with :func:`rac.mcp.call_session_tool`: an ``isError`` answer becomes a
``ToolFailure`` (as CrewAI's own ``MCPNativeTool`` returns one), any other is rendered as the
adapter renders it, so the agent reads the same text. The server's declarations are read with
:func:`rac.mcp.register_session_tools` over the same session (no new connection), mapped to
the adapter's tool names. Each call is one attempt (mcpadapt does not repeat calls); the
engine's ``mcp_timeout`` bounds it. When the adapter's connection is gone (its server died),
a call is made on a connection of its own, opened and closed for it.

Those closures are mcpadapt's and crewai-tools' internals (read on mcpadapt 0.1.19 and 0.1.20,
whose code is the same there, and crewai-tools 1.15). A ``CrewAIMCPTool``, or a tool whose
class closes over an ``MCPAdapt``, that RAC cannot read is refused with a
:class:`rac.ConfigurationError` when RAC is enabled: its errors would read as successes.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any
from urllib.parse import urlsplit

from crewai.tools import BaseTool
from crewai.tools.tool_failure import ToolFailure, ToolFailureReason
from crewai.utilities.string_utils import sanitize_tool_name

import rac
from rac.events import emit
from rac.mcp import NameMap, call_session_tool, register_session_tools
from rac.run import current_run
from rac_crewai.errors import describe, real_error
from rac_crewai.mcp_tools import run_sync, server_name, settings_of


@dataclass(frozen=True)
class Maker:
    """What a package that makes adapter tools does to names and arguments: crewai-tools
    sanitizes MCP names into tool names; mcpadapt keeps them, and leaves out an argument
    that is None unless the parameter's schema allows null."""

    sanitizes: bool
    drops_null: bool


#: The modules whose ``CrewAIMCPTool`` classes make adapter tools, and how they make them.
MAKERS = {"crewai_tools.adapters.mcp_adapter": Maker(sanitizes=True, drops_null=False),
          "mcpadapt.crewai_adapter": Maker(sanitizes=False, drops_null=True)}
#: How a tool class of another module that closes over an ``MCPAdapt`` is taken.
OTHER_MAKER = Maker(sanitizes=False, drops_null=False)
#: Seconds RAC waits beyond ``mcp_timeout`` for the adapter's thread to answer at all.
GRACE = 5.0


@dataclass(frozen=True)
class AdapterBinding:
    """What one adapter tool calls: ``mcp_name`` on ``session``, whose event loop is ``loop``;
    ``listed`` is the MCP tool as the adapter listed it, ``params`` the adapter's server
    parameters for it, ``key`` CrewAI's name for the server (as
    :func:`rac_crewai.mcp_tools.server_name` gives it for those parameters: for a stdio
    server its command line), by which the engine's settings know it, ``label`` a name for it
    with no file-system path (:func:`server_label`), ``connect_timeout`` the adapter's bound
    on connecting (seconds), ``maker`` how the tool was made."""

    session: Any
    mcp_name: str
    loop: asyncio.AbstractEventLoop
    listed: Any
    params: Any
    key: str
    label: str
    connect_timeout: float
    maker: Maker

    def server_for(self, engine: rac.RAC | None) -> str:
        """The server's name in ``engine``'s log, events and reports: the name the user gave
        it (``mcp_names=``), else its :attr:`label`, made unique per engine
        (:meth:`rac_crewai.mcp_tools.MCPSettings.name_for`); never its command line."""
        if engine is None:
            return self.label
        return settings_of(engine).name_for(self.key, self.label)

    @property
    def server(self) -> str:
        """The server's name for the engine whose run is calling (see :meth:`server_for`)."""
        run = current_run()
        return self.server_for(run.engine if run is not None else None)

    def call(self, args: dict[str, Any]) -> Any:
        """Call the MCP tool once with ``args`` (validated by the tool's schema): the
        adapter's text, or a ``ToolFailure`` for an ``isError`` answer. MCP errors (a timeout,
        a lost connection) are raised as the SDK raises them, for :class:`rac.mcp.MCPErrors`
        to classify; the engine's ``mcp_timeout`` bounds the call.

        If the adapter's connection is gone (its loop stopped, or its server process died so
        that the request could not be sent), the call is made on a connection of its own to
        the same server, opened and closed for it, as CrewAI's ``Agent(mcps=...)`` makes
        every call: a lookup or a compensation after a crash still reaches the server."""
        args = self.sent_args(args)
        timeout = _engine_timeout()
        if self.loop.is_closed() or not self.loop.is_running():
            result = self._fresh(args, timeout, why="the adapter's event loop has stopped")
        else:
            try:
                result = self._on_adapter(args, timeout)
            except Exception as e:
                if not connection_gone(e):
                    raise
                result = self._fresh(args, timeout, why="the adapter's connection to the "
                                                         "server is closed")
        text = rendered(result)
        if getattr(result, "isError", False):
            return ToolFailure(message=text or "the MCP tool reported an error with no text",
                               reason=ToolFailureReason.MCP_ERROR,
                               details={"server": self.server, "tool": self.mcp_name})
        return text

    def sent_args(self, args: dict[str, Any]) -> dict[str, Any]:
        """``args`` as the adapter would send them (mcpadapt leaves out a None the
        parameter's schema does not allow)."""
        if not self.maker.drops_null:
            return args
        schema = getattr(self.listed, "inputSchema", None) or {}
        properties = schema.get("properties", {}) if isinstance(schema, Mapping) else {}
        return {k: v for k, v in args.items()
                if v is not None or k not in properties or allows_null(properties[k])}

    def _on_adapter(self, args: dict[str, Any], timeout: float | None) -> Any:
        future = asyncio.run_coroutine_threadsafe(
            call_session_tool(self.session, self.mcp_name, args, timeout=timeout), self.loop)
        if timeout is None:  # as long as the adapter would wait
            return future.result()
        try:
            return future.result(timeout=timeout + GRACE)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise rac.AmbiguousError(
                f"the MCPServerAdapter's thread did not answer {self.mcp_name!r} within "
                f"{timeout + GRACE:g} s (the request may have been sent)") from None

    def _fresh(self, args: dict[str, Any], timeout: float | None, *, why: str) -> Any:
        emit("rac_crewai.mcp_adapter.reconnecting", server=self.server, tool=self.mcp_name,
             status="reconnecting", reason=f"{why}; the call was not sent, and is made on a "
                                           "new connection")
        return run_sync(functools.partial(self._afresh, args, timeout))

    async def _afresh(self, args: dict[str, Any], timeout: float | None) -> Any:
        from contextlib import AsyncExitStack

        from mcpadapt.core import mcptools  # present: the tool came from mcpadapt

        async with AsyncExitStack() as stack:
            try:
                async with asyncio.timeout(self.connect_timeout):
                    session, _ = await stack.enter_async_context(mcptools(self.params, None))
            except Exception as e:  # nothing was sent: a repeat is safe
                # named by its real cause, not as anyio's "unhandled errors in a TaskGroup"
                cause = real_error(e)
                raise rac.TransientError(
                    f"could not connect again to MCP server {self.server!r} for "
                    f"{self.mcp_name!r}: {describe(cause)}") from e
            return await call_session_tool(session, self.mcp_name, args, timeout=timeout)


def _engine_timeout() -> float | None:
    """The ``mcp_timeout`` of the engine whose run is calling (None outside a run)."""
    run = current_run()
    return settings_of(run.engine).timeout if run is not None else None


def allows_null(schema: Any) -> bool:
    """True if a JSON schema of one parameter allows null (mcpadapt's test: a type list with
    "null", or an ``anyOf`` with a null type)."""
    if not isinstance(schema, Mapping):
        return True
    kind = schema.get("type")
    if isinstance(kind, list):
        return "null" in kind
    options = schema.get("anyOf")
    if isinstance(options, list):
        return any(isinstance(o, Mapping) and o.get("type") == "null" for o in options)
    return False


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


def server_label(params: Any) -> str:
    """A name for an adapter's server with no file-system path in it, for when the user gave
    it none (mcpadapt keeps no ``serverInfo`` of the session it initialized): for a stdio
    server the module of ``-m module``, else the file name (no suffix) of the first argument
    that is not an option, else of the command (``mcp_travel_server``,
    ``server_filesystem``); for an HTTP or SSE server the URL's host."""
    args = [str(a) for a in getattr(params, "args", None) or ()]
    if "-m" in args[:-1]:
        base = args[args.index("-m") + 1].rsplit(".", 1)[-1]
    elif any(not a.startswith("-") for a in args):
        base = PurePath(next(a for a in args if not a.startswith("-"))).stem
    elif isinstance(getattr(params, "command", None), str):
        base = PurePath(params.command).stem
    elif isinstance(params, Mapping) and isinstance(params.get("url"), str):
        base = urlsplit(params["url"]).hostname or ""
    else:
        base = ""
    return sanitize_tool_name(base) or "mcp"


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


def _is_mcpadapt(obj: Any) -> bool:
    return any(c.__name__ == "MCPAdapt" and c.__module__.startswith("mcpadapt")
               for c in type(obj).__mro__)


def _closes_over_mcpadapt(fn: Any) -> bool:
    """True if ``fn``, or a function or partial it closes over, closes over an
    ``MCPAdapt``."""
    for value in _cells(fn).values():
        if _is_mcpadapt(value):
            return True
        inner = value.func if isinstance(value, functools.partial) else value
        if callable(inner) and any(_is_mcpadapt(v) for v in _cells(inner).values()):
            return True
    return False


def _read(cls: type[BaseTool], maker: Maker) -> AdapterBinding | None:
    """The binding of an adapter tool class, read off mcpadapt's closures; None if their
    shape is not the one RAC knows."""
    func = _cells(cls._run).get("func")
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
    connect = getattr(adapt, "connect_timeout", None)
    return AdapterBinding(session=session, mcp_name=mcp_name, loop=loop, listed=listed,
                          params=params[index], key=server_name(params[index]),
                          label=server_label(params[index]),
                          connect_timeout=float(connect) if isinstance(connect, int | float)
                          else 30.0, maker=maker)


#: Each tool class's binding (mcpadapt makes one class per tool), or None for other classes.
_BINDINGS: weakref.WeakKeyDictionary[type, AdapterBinding | None] = weakref.WeakKeyDictionary()


def binding_of(tool: BaseTool) -> AdapterBinding | None:
    """The :class:`AdapterBinding` of an adapter tool, None for any other tool.

    Raises :class:`rac.ConfigurationError` for a tool that looks made by mcpadapt (a
    ``CrewAIMCPTool``, or a class closing over an ``MCPAdapt``) but that RAC cannot read."""
    cls = type(tool)
    try:
        return _BINDINGS[cls]
    except KeyError:
        pass
    looks_made = cls.__name__ == "CrewAIMCPTool" or _closes_over_mcpadapt(cls._run)
    found = _read(cls, MAKERS.get(cls.__module__, OTHER_MAKER)) if looks_made else None
    if looks_made and found is None:
        raise rac.ConfigurationError(
            f"tool {tool.name!r} looks made by crewai-tools' MCPServerAdapter (mcpadapt), but "
            "RAC cannot find the MCP session it calls in this version: it would hand RAC only "
            "the text of the server's answers, so a failed call would read as a success. Give "
            "the agent the server as Agent(mcps=[...]) instead, or use crewai-tools 1.15 with "
            "mcpadapt 0.1.19-0.1.20")
    _BINDINGS[cls] = found
    return found


def adopt_adapter_tools(engine: rac.RAC, tools: Iterable[BaseTool]) -> None:
    """Register what the servers of the adapter tools among ``tools`` declare, once per engine
    and server (through the adapter's own session)."""
    settings = settings_of(engine)
    by_session: dict[int, list[tuple[BaseTool, AdapterBinding]]] = {}
    for t in tools:
        binding = binding_of(t)
        if binding is not None:
            by_session.setdefault(id(binding.session), []).append((t, binding))
    for group in by_session.values():
        first = group[0][1]
        names = {t.name for t, _ in group}
        if names <= settings.listed.get(first.key, set()):
            continue
        _list_declarations(engine, first, names, adapter_names(group),
                           trusted=settings.is_trusted(first.key))
        settings.listed.setdefault(first.key, set()).update(names)


def _list_declarations(engine: rac.RAC, binding: AdapterBinding, names: set[str],
                       renamed: NameMap, *, trusted: bool) -> None:
    """Register the declarations of ``binding``'s server, listed over the adapter's session."""
    listing = register_session_tools(engine, binding.session,
                                     server=binding.server_for(engine), trusted=trusted,
                                     names=renamed)
    try:
        future = asyncio.run_coroutine_threadsafe(listing, binding.loop)
    except Exception as e:  # the loop is closed: the coroutine was never scheduled
        listing.close()
        raise _unlisted(binding.server_for(engine), names, e) from e
    try:
        future.result(timeout=binding.connect_timeout)
    except rac.ConfigurationError:
        raise  # a malformed declaration: named by the MCP mechanism
    except Exception as e:
        future.cancel()
        raise _unlisted(binding.server_for(engine), names, e) from e


def _unlisted(server: str, names: set[str], error: BaseException) -> rac.ConfigurationError:
    return rac.ConfigurationError(
        f"cannot read what MCP server {server!r} declares about its tools "
        f"({', '.join(sorted(names))}): listing them over the MCPServerAdapter's session "
        f"failed with {type(error).__name__}: {error}. Is the adapter started and its server "
        "running?")


def adapter_names(group: list[tuple[BaseTool, AdapterBinding]]) -> NameMap:
    """The names the adapter gave a server's tools (MCP name to tool name); a tool not among
    them (filtered out) named as the adapter would name it."""
    given = {b.mcp_name: t.name for t, b in group}
    sanitizes = group[0][1].maker.sanitizes

    def name(mcp_name: str) -> str:
        return given.get(mcp_name) or (sanitize_tool_name(mcp_name) if sanitizes else mcp_name)

    return NameMap(name)
