"""Declarations read from a live MCP client session, for frameworks that drop ``_meta``.

llama-index-tools-mcp, Semantic Kernel's MCP plugins and CrewAI's ``Agent(mcps=...)`` build
tools without the servers' ``_meta`` and annotations, but the raw tools can still be listed:
``BasicMCPClient`` (LlamaIndex) and ``plugin.session`` (Semantic Kernel) answer
``list_tools()``, and for CrewAI a ``mcp.ClientSession`` of your own on the same server does.

The mcp 2.x SDK drops the annotation keys its ``ToolAnnotations`` does not know (SEP-3172's
``recovery``, ``x-compensation-pair``) when it parses a listing. On an mcp 2.x
``ClientSession`` (or the ``session`` of an mcp 2.x ``Client``) the declarations are therefore
read from the listing's JSON, asked for through the session's own ``send_request``; should that
fail, from the SDK's objects, with a warning (``rac.mcp.raw_listing_failed``).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, cast, get_args, get_type_hints

from rac.classify import default_classify
from rac.errors import AmbiguousError, ConfigurationError
from rac.events import emit
from rac.mcp.errors import classify_mcp_error
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
    :func:`rac.mcp.declarations_from_mcp` for the arguments); read from the listing's JSON on
    an mcp 2.x session (see the module docstring)."""
    return declarations_from_mcp(await _listing_for_declarations(session), server=server,
                                 trusted=trusted, names=names)


async def _listing_for_declarations(session: Any) -> list[Any]:
    raw_session = _v2_session(session)
    if raw_session is not None:
        try:
            return await _list_raw(raw_session)
        except Exception as e:  # noqa: BLE001 - the SDK's objects still carry most of it
            emit("rac.mcp.raw_listing_failed", level="warning", status="typed",
                 error=f"{type(e).__name__}: {e}",
                 reason="RAC could not read this mcp 2.x session's listing as JSON; it reads "
                        "the SDK's objects, which have lost annotation keys the SDK does not "
                        "know (SEP-3172's recovery): declare recovery in _meta to be safe")
    return await list_session_tools(session)


def _takes(method: Any, name: str) -> bool:
    try:
        return name in inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False


def _v2_session(session: Any) -> Any:
    """The mcp 2.x ``ClientSession`` behind ``session`` (itself, or a 2.x ``Client``'s
    ``session``), or None: a ``send_request`` and a ``list_tools`` taking ``params=`` only."""
    for candidate in (session, _attribute(session, "session")):
        list_tools = _attribute(candidate, "list_tools")
        if (candidate is not None and callable(_attribute(candidate, "send_request"))
                and callable(list_tools) and _takes(list_tools, "params")
                and not _takes(list_tools, "cursor")):
            return candidate
    return None


def _attribute(obj: Any, name: str) -> Any:
    try:
        return getattr(obj, name, None)
    except Exception:  # noqa: BLE001 - a property that needs a connection: not this one
        return None


class _ListToolsRequest:
    """A ``tools/list`` request as mcp 2.x's ``send_request`` reads one."""

    name_param: ClassVar[str | None] = None

    def __init__(self, cursor: str | None) -> None:
        self.cursor = cursor

    def model_dump(self, **_: Any) -> dict[str, Any]:
        data: dict[str, Any] = {"method": "tools/list"}
        if self.cursor is not None:
            data["params"] = {"cursor": self.cursor}
        return data


async def _list_raw(session: Any) -> list[Any]:
    """Every tool of an mcp 2.x ``session``'s listing, as the JSON dicts the server sent."""
    from pydantic import TypeAdapter

    adapter = TypeAdapter(dict[str, Any])
    tools: list[Any] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        page = await session.send_request(_ListToolsRequest(cursor), adapter)
        listed = page.get("tools") if isinstance(page, dict) else None
        if not isinstance(listed, list):
            raise TypeError(f"a tools/list answer without a list of tools: {page!r:.200}")
        tools.extend(listed)
        cursor = page.get("nextCursor")
        if not cursor:
            return tools
    raise RuntimeError(f"MCP session {session!r} kept returning pages after {_MAX_PAGES}")


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
    out: list[Tool] = []
    for raw in listed:
        view = read_tool(raw, to_framework=names.framework_name)

        async def acall(args: dict[str, Any], _name: str = view.name) -> Any:
            return await call_session_tool(session, _name, args, timeout=timeout)

        schema = dict(view.input_schema) if view.input_schema.get("properties") is not None \
            else None
        out.append(Tool(view.framework_name, acall=acall,
                        params=schema,  # type: ignore[arg-type]
                        description=str(_field(raw, "description") or "")))
    return out


async def call_session_tool(session: Any, name: str, args: dict[str, Any], *,
                            timeout: float | None = None) -> Any:
    """Call the tool ``name`` once through ``session.call_tool``; the ``CallToolResult``.

    ``timeout`` (seconds) bounds the call (see :func:`session_tools`). MCP errors, and errors
    RAC's default rules know (a refused connection, a timeout, ``rac.TransientError``), are
    raised as they are, for :class:`rac.mcp.MCPErrors` and the rules to classify. Any other
    error the client raises is raised as :class:`rac.AmbiguousError` (the original as its
    ``__cause__``): it may come after the server ran the tool (mcp 1.x checks a result against
    the tool's ``outputSchema`` once the server answered, and raises ``RuntimeError`` if it
    does not match; a malformed answer fails pydantic's validation), so the call may have
    happened.
    """
    limit = _call_timeout(session, timeout)
    try:
        if limit is None:
            return await session.call_tool(name, args)
        return await session.call_tool(name, args, read_timeout_seconds=limit)
    except Exception as e:
        if classify_mcp_error(e) is not None or not default_classify(e).fallback:
            raise  # a verdict of its own
        raise AmbiguousError(
            f"the MCP client failed on {name!r} with {type(e).__name__}: {e} (the server may "
            "have run the tool)") from e


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


def _field(raw: Any, name: str) -> Any:
    """A field of a listed tool, an SDK object or a wire dict."""
    return raw.get(name) if isinstance(raw, Mapping) else getattr(raw, name, None)
