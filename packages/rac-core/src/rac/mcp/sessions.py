"""Declarations read from a live MCP client session, for frameworks that drop ``_meta``.

llama-index-tools-mcp, Semantic Kernel's MCP plugins and CrewAI's ``Agent(mcps=...)`` build
tools without the servers' ``_meta`` and annotations, but the raw tools can still be listed:
``BasicMCPClient`` (LlamaIndex) and ``plugin.session`` (Semantic Kernel) answer
``list_tools()``, and for CrewAI a ``mcp.ClientSession`` of your own on the same server does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rac.mcp.names import NameMap
from rac.mcp.reading import read_tool
from rac.mcp.registration import MCPDeclarations, apply, declarations_from_mcp
from rac.tools import Tool

if TYPE_CHECKING:
    from rac.engine import RAC

_MAX_PAGES = 1000


async def list_session_tools(session: Any) -> list[Any]:
    """Every tool ``session`` lists (all pages): anything with an async ``list_tools()``
    returning an object with ``tools`` (mcp 1.x/2.x ``ClientSession``, LlamaIndex's
    ``BasicMCPClient``, Semantic Kernel's ``plugin.session``) or a list."""
    tools: list[Any] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        listed = await (session.list_tools(cursor=cursor) if cursor is not None
                        else session.list_tools())
        if isinstance(listed, list):
            return tools + listed
        tools.extend(getattr(listed, "tools", None) or ())
        cursor = getattr(listed, "nextCursor", None) or getattr(listed, "next_cursor", None)
        if not cursor:
            return tools
    raise RuntimeError(f"MCP session {session!r} kept returning pages after {_MAX_PAGES}")


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
    results fail). ``timeout`` (seconds) bounds each call (``read_timeout_seconds``); a call
    that times out is an ambiguous failure.
    """
    from datetime import timedelta

    names = names or NameMap()
    limit = timedelta(seconds=timeout) if timeout is not None else None
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
