"""Declarations read from every shape MCP tools come in: mcp 1.x `Tool` objects, the mcp 2.x
shape (snake_case attributes, unknown annotation keys dropped), wire dicts, and the LangChain
tools langchain-mcp-adapters builds (plain and with `tool_name_prefix`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

import rac
import rac.mcp
from tests.mcp import mcp2

pytest.importorskip("mcp")
from mcp.types import Tool, ToolAnnotations  # noqa: E402

KEY = rac.mcp.META_KEY
BOOK_META = {KEY: {"compensation": {"tool": "cancel_flight",
                                    "args": {"booking_id": "result.booking_id"}},
                   "alternatives": ["book_partner"]}}


def v1_tools() -> list[Tool]:
    """The tools as mcp 1.30's `ClientSession.list_tools()` returns them."""
    schema = {"type": "object", "properties": {"dest": {"type": "string"}}}
    return [
        Tool(name="book_flight", inputSchema=schema, _meta=BOOK_META,  # type: ignore[call-arg]
             annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False)),
        Tool(name="book_partner", inputSchema=schema,
             annotations=ToolAnnotations(**{"x-compensation-pair": "cancel_flight"})),
        Tool(name="cancel_flight", inputSchema=schema,
             annotations=ToolAnnotations(destructiveHint=True, idempotentHint=True)),
        Tool(name="search", inputSchema=schema, annotations=ToolAnnotations(readOnlyHint=True)),
    ]


def v2_tools() -> list[mcp2.Tool]:
    """The same tools as mcp 2.x's `ClientSession.list_tools()` returns them."""
    tools = mcp2.listed([t.model_dump(by_alias=True, exclude_none=True) for t in v1_tools()])
    # x-compensation-pair was dropped by 2.x's ToolAnnotations: only _meta carries it now
    assert tools[1].annotations == mcp2.ToolAnnotations()
    tools[1].meta = {KEY: {"compensation": "cancel_flight"}}
    return tools


def langchain_tools(prefix: bool = False) -> list[Any]:
    pytest.importorskip("langchain_mcp_adapters")
    from langchain_mcp_adapters.tools import convert_mcp_tool_to_langchain_tool

    connection: Any = {"transport": "stdio", "command": "unused", "args": []}
    return [convert_mcp_tool_to_langchain_tool(None, t, connection=connection,
                                               server_name="travel", tool_name_prefix=prefix)
            for t in v1_tools()]


SHAPES = {
    "mcp 1.x Tool": v1_tools,
    "mcp 2.x Tool": v2_tools,
    "wire dicts": lambda: [t.model_dump(by_alias=True, exclude_none=True) for t in v1_tools()],
    "langchain-mcp-adapters": langchain_tools,
}


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("trusted", [False, True])
def test_every_shape_gives_the_same_declarations(shape: str, trusted: bool) -> None:
    engine = rac.RAC(store="memory://", load_entrypoints=False)
    found = engine.register_mcp_tools(SHAPES[shape](), server="travel", trusted=trusted)
    assert engine.registry.pairs["book_flight"] == rac.Compensation(
        tool="cancel_flight", args={"booking_id": "result.booking_id"})
    assert engine.registry.pairs["book_partner"].tool == "cancel_flight"
    assert engine.registry.alternatives == {"book_flight": ["book_partner"]}
    if trusted:
        assert engine.registry.read_only == {"search"}
        assert found.effects == {"search": "read_only", "cancel_flight": "idempotent"}
        assert engine.registry.effects == {"cancel_flight": rac.Effect.IDEMPOTENT}
    else:  # hints that would make RAC less careful are not taken from an untrusted server
        assert engine.registry.read_only == set()
        assert found.claims_read_only == ["search"]
        assert found.effects == {}
        assert engine.registry.effects == {}


def test_langchain_tools_with_a_server_prefix_are_registered_under_their_names() -> None:
    tools = langchain_tools(prefix=True)
    assert [t.name for t in tools][:2] == ["travel_book_flight", "travel_book_partner"]
    engine = rac.RAC(store="memory://", load_entrypoints=False)
    engine.register_mcp_tools(tools, server="travel", names=rac.mcp.NameMap.prefixed("travel"))
    assert engine.registry.pairs["travel_book_flight"].tool == "travel_cancel_flight"
    assert engine.registry.alternatives == {"travel_book_flight": ["travel_book_partner"]}


def test_name_maps_for_frameworks_that_rename() -> None:
    sk = rac.mcp.NameMap.semantic_kernel("travel")
    assert sk.framework_name("book flight/v2") == "travel-book-flight-v2"

    @dataclass
    class CrewTool:  # CrewAI's MCPNativeTool keeps the MCP name beside its own
        name: str
        original_tool_name: str

    crew = rac.mcp.NameMap.from_tools([CrewTool("srv_book_flight", "book_flight"),
                                       CrewTool("srv_cancel_flight", "cancel_flight")])
    engine = rac.RAC(store="memory://", load_entrypoints=False)
    engine.register_mcp_tools(v1_tools(), server="srv", names=crew)
    assert engine.registry.pairs["srv_book_flight"].tool == "srv_cancel_flight"
    assert crew.mcp_name("srv_book_flight") == "book_flight"


def test_something_that_is_not_an_mcp_tool_is_an_error() -> None:
    engine = rac.RAC(store="memory://", load_entrypoints=False)
    with pytest.raises(rac.ConfigurationError, match="MCP server 'travel': cannot read int"):
        engine.register_mcp_tools([3], server="travel")


def test_offered_tools_with_bad_metadata_are_a_clear_error() -> None:
    pytest.importorskip("langchain_mcp_adapters")
    from langchain_mcp_adapters.tools import convert_mcp_tool_to_langchain_tool

    bad = Tool(name="book_flight", inputSchema={"type": "object"},  # type: ignore[call-arg]
               _meta={KEY: {"compensation": "cancel_flihgt"}})
    connection: Any = {"transport": "stdio", "command": "unused", "args": []}
    offered = [convert_mcp_tool_to_langchain_tool(None, t, connection=connection)
               for t in [bad, v1_tools()[2]]]
    engine = rac.RAC(store="memory://", load_entrypoints=False)
    with pytest.raises(rac.ConfigurationError) as err:
        rac.mcp.register_offered_tools(engine, offered)
    assert "tool 'book_flight'" in str(err.value) and "'cancel_flihgt'" in str(err.value)
    assert "engine.register_mcp_tools(tools, server=...)" in str(err.value)


def test_offered_tools_without_mcp_metadata_register_nothing() -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.tools import StructuredTool

    def greet(name: str) -> str:
        """Say hello."""
        return f"hello {name}"

    engine = rac.RAC(store="memory://", load_entrypoints=False)
    assert rac.mcp.register_offered_tools(engine, [StructuredTool.from_function(greet)]) is None
    assert engine.plugin_manager.get_plugin("rac.mcp.errors") is None
