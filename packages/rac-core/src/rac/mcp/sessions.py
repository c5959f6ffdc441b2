"""Declarations read from a live MCP client session, for frameworks that drop ``_meta``.

llama-index-tools-mcp, Semantic Kernel's MCP plugins and CrewAI's ``Agent(mcps=...)`` build
tools without the servers' ``_meta`` and annotations, but the raw tools can still be listed:
``BasicMCPClient`` (LlamaIndex) and ``plugin.session`` (Semantic Kernel) answer
``list_tools()``, and for CrewAI a ``mcp.ClientSession`` of your own on the same server does.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, cast, get_args, get_type_hints

from rac.errors import ConfigurationError
from rac.mcp.names import NameMap
from rac.mcp.reading import read_tool
from rac.mcp.registration import MCPDeclarations, apply, declarations_from_mcp
from rac.tools import Tool

if TYPE_CHECKING:
    from rac.engine import RAC

_MAX_PAGES = 1000


async def list_session_tools(session: Any) -> list[Any]:
    """Every tool ``session`` lists (all pages): anything with an async ``list_tools()``
    returning an object with ``tools`` (mcp 1.x ``ClientSession``, mcp 2.x ``ClientSession``
    and ``Client``, LlamaIndex's ``BasicMCPClient``, Semantic Kernel's ``plugin.session``) or a
    list."""
    tools: list[Any] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        listed = await (_next_page(session, cursor) if cursor is not None
                        else session.list_tools())
        if isinstance(listed, list):
            return tools + listed
        tools.extend(getattr(listed, "tools", None) or ())
        cursor = getattr(listed, "nextCursor", None) or getattr(listed, "next_cursor", None)
        if not cursor:
            return tools
    raise RuntimeError(f"MCP session {session!r} kept returning pages after {_MAX_PAGES}")


def _next_page(session: Any, cursor: str) -> Awaitable[Any]:
    """``session.list_tools`` asked for the page at ``cursor``: by ``cursor=`` (mcp 1.x
    ``ClientSession``, mcp 2.x ``Client``, LlamaIndex) or, on an mcp 2.x ``ClientSession``, by
    ``params=`` of the parameter type its signature names (``PaginatedRequestParams``)."""
    method = session.list_tools
    try:
        accepted = inspect.signature(method).parameters
    except (TypeError, ValueError):  # a builtin or C callable: try the common keyword
        accepted = {}  # type: ignore[assignment]
    if "cursor" in accepted or "params" not in accepted:
        return cast("Awaitable[Any]", method(cursor=cursor))
    try:
        hint = get_type_hints(method).get("params")
    except Exception:  # an annotation that does not resolve names no usable type
        hint = None
    members = [t for t in get_args(hint) if isinstance(t, type) and t is not type(None)]
    kind = members[0] if members else hint if isinstance(hint, type) else None
    if kind is None:
        raise ConfigurationError(
            f"MCP session {session!r} lists tools in pages, but RAC cannot ask for the next "
            f"one: its list_tools(params=...) names no parameter type ({hint!r}); pass the "
            "tools of every page to engine.register_mcp_tools(tools, server=...) instead")
    return cast("Awaitable[Any]", method(params=kind(cursor=cursor)))


async def declarations_from_session(session: Any, *, server: str | None = None,
                                    trusted: bool = False, names: NameMap | None = None
                                    ) -> MCPDeclarations:
    """The declarations of the tools ``session`` lists (see
    :func:`rac.mcp.declarations_from_mcp` for the arguments)."""
    return declarations_from_mcp(await list_session_tools(session), server=server,
                                 trusted=trusted, names=names)


async def register_session_tools(engine: RAC, session: Any, *, server: str | None = None,
                                 trusted: bool = False, names: NameMap | None = None
                                 ) -> MCPDeclarations:
    """List the tools of ``session`` and register their declarations on ``engine`` (the one
    documented line for frameworks that hide ``_meta``)."""
    found = await declarations_from_session(session, server=server, trusted=trusted,
                                            names=names)
    apply(engine, found)
    return found


def session_tools(session: Any, listed: list[Any], *, names: NameMap | None = None,
                  timeout: float | None = None) -> list[Tool]:
    """:class:`rac.Tool` objects that call ``listed`` tools through ``session.call_tool`` (for a
    tool-calling loop of your own, or to give RAC the compensators an agent is not offered).

    Each returns the ``CallToolResult``; :class:`rac.mcp.MCPErrors` reads it (``isError``
    results fail). ``timeout`` (seconds) bounds each call (``read_timeout_seconds``: a
    ``timedelta`` for mcp 1.x, seconds for mcp 2.x); a call that times out is an ambiguous
    failure.
    """
    names = names or NameMap()
    limit = _call_timeout(session, timeout)
    out: list[Tool] = []
    for raw in listed:
        view = read_tool(raw, to_framework=names.framework_name)

        async def acall(args: dict[str, Any], _name: str = view.name) -> Any:
            if limit is None:
                return await session.call_tool(_name, args)
            return await session.call_tool(_name, args, read_timeout_seconds=limit)

        schema = dict(view.input_schema) if view.input_schema.get("properties") is not None \
            else None
        out.append(Tool(view.framework_name, acall=acall,
                        params=schema,  # type: ignore[arg-type]
                        description=str(getattr(raw, "description", "") or "")))
    return out


def _call_timeout(session: Any, timeout: float | None) -> Any:
    """``timeout`` as ``session.call_tool``'s ``read_timeout_seconds`` takes it: a
    ``timedelta`` where its signature says so (mcp 1.x), else seconds (mcp 2.x)."""
    if timeout is None:
        return None
    try:
        param = inspect.signature(session.call_tool).parameters.get("read_timeout_seconds")
    except (TypeError, ValueError):
        param = None
    if param is not None and "timedelta" in str(param.annotation):
        from datetime import timedelta

        return timedelta(seconds=timeout)
    return float(timeout)
