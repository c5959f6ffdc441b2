"""The mcp 2.x SDK's shapes, built here because mcp 2.x cannot be installed beside this
workspace's pins (crewai and semantic-kernel need mcp < 2).

Built as mcp 2.3.0's types are (checked against the released package): pydantic models with
snake_case attributes and camelCase wire aliases (``alias_generator=to_camel``), ``_meta`` as
``meta``, and unknown keys dropped when a model is read from the wire (pydantic's default), so
``ToolAnnotations`` keeps only ``title`` and the four hints: a custom annotation key such as
``x-compensation-pair`` or SEP-3172's ``recovery`` is gone once the SDK has parsed a listing.
``ClientSession.list_tools`` takes ``params=PaginatedRequestParams(cursor=...)`` and sends a
``ListToolsRequest`` through ``send_request(request, result_type)``, which validates the raw
answer with ``result_type`` (a model or a ``TypeAdapter``); ``call_tool`` takes its
``read_timeout_seconds`` in seconds, as the 2.x session does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import anyio
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from pydantic.alias_generators import to_camel


class MCPModel(BaseModel):
    """The base of mcp 2.x's types."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class ToolAnnotations(MCPModel):
    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None


class Tool(MCPModel):
    name: str
    title: str | None = None
    description: str | None = None
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    output_schema: dict[str, Any] | None = None
    annotations: ToolAnnotations | None = None
    meta: dict[str, Any] | None = Field(alias="_meta", default=None)


class ListToolsResult(MCPModel):
    tools: list[Tool]
    next_cursor: str | None = None


class PaginatedRequestParams(MCPModel):
    cursor: str | None = None


class ListToolsRequest(MCPModel):
    name_param: ClassVar[str | None] = None
    method: str = "tools/list"
    params: PaginatedRequestParams | None = None


class TextContent(MCPModel):
    type: str = "text"
    text: str


class CallToolResult(MCPModel):
    content: list[TextContent]
    structured_content: dict[str, Any] | None = None
    is_error: bool = False


def listed(wire: list[dict[str, Any]]) -> list[Tool]:
    """A ``tools/list`` answer as the 2.x SDK hands it to its caller."""
    return ListToolsResult.model_validate({"tools": wire}).tools


class ClientSession:
    """An mcp 2.x ``ClientSession`` on a server that lists ``pages`` of wire tools and runs
    ``handlers`` (tool name -> function of the arguments returning a result dict)."""

    def __init__(self, pages: list[list[dict[str, Any]]],
                 handlers: Mapping[str, Callable[[dict[str, Any]], dict[str, Any]]]
                 | None = None) -> None:
        self.pages = pages
        self.handlers = dict(handlers or {})
        self.requests: list[str | None] = []

    async def send_request(self, request: Any, result_type: Any) -> Any:
        data = request.model_dump(by_alias=True, mode="json", exclude_none=True)
        assert data["method"] == "tools/list" and type(request).name_param is None
        cursor = (data.get("params") or {}).get("cursor")
        self.requests.append(cursor)
        index = int(cursor) if cursor else 0
        raw: dict[str, Any] = {"tools": self.pages[index]}
        if index + 1 < len(self.pages):
            raw["nextCursor"] = str(index + 1)
        if isinstance(result_type, TypeAdapter):
            return result_type.validate_python(raw, by_name=False)
        return result_type.model_validate(raw, by_name=False)

    async def list_tools(self, *, params: PaginatedRequestParams | None = None
                         ) -> ListToolsResult:
        result: ListToolsResult = await self.send_request(ListToolsRequest(params=params),
                                                          ListToolsResult)
        return result

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None,
                        read_timeout_seconds: float | None = None) -> CallToolResult:
        # The 2.x dispatcher bounds the request with anyio in seconds.
        with anyio.fail_after(read_timeout_seconds):
            try:
                value = self.handlers[name](dict(arguments or {}))
            except Exception as e:  # a server answers a tool's exception as an error result
                return CallToolResult(content=[TextContent(text=str(e))], is_error=True)
        return CallToolResult(content=[TextContent(text=str(value))], structured_content=value)
