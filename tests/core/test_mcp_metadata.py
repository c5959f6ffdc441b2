"""Compensation pairs declared in MCP tool metadata, read from a real in-process MCP server."""

from __future__ import annotations

from typing import Any

import pytest

import rac

mcp = pytest.importorskip("mcp")
from mcp.server.fastmcp import FastMCP  # noqa: E402
from mcp.shared.memory import create_connected_server_and_client_session  # noqa: E402
from mcp.types import Tool, ToolAnnotations  # noqa: E402

LIVE: dict[str, str] = {}
app = FastMCP("travel")


@app.tool(meta={"rac": {"compensation": {"tool": "cancel_flight",
                                         "args": {"booking_id": "result.booking_id"}},
                        "alternatives": ["book_partner_flight"]}})
def book_flight(dest: str) -> dict[str, Any]:
    """Book a flight."""
    LIVE[f"BK-{dest}1"] = dest
    return {"booking_id": f"BK-{dest}1"}


@app.tool(meta={"rac": {"compensation": "cancel_flight"}})
def book_partner_flight(dest: str) -> dict[str, Any]:
    """Book with the partner airline."""
    return {"booking_id": f"PB-{dest}1"}


@app.tool(annotations=ToolAnnotations(destructiveHint=True))
def cancel_flight(booking_id: str) -> dict[str, Any]:
    """Cancel."""
    LIVE.pop(booking_id, None)
    return {"cancelled": booking_id}


@app.tool(annotations=ToolAnnotations(readOnlyHint=True))
def search(dest: str) -> list[str]:
    """Search flights."""
    return [dest]


@app.tool()
def pay(amount: float) -> dict[str, Any]:
    """Pay."""
    raise rac.PermanentError("declined")


async def test_pairs_from_a_real_mcp_server_drive_a_rollback() -> None:
    async with create_connected_server_and_client_session(app._mcp_server) as client:
        tools = (await client.list_tools()).tools

        async def call(name: str, args: dict[str, Any]) -> Any:
            res = await client.call_tool(name, args)
            if res.isError:
                raise rac.PermanentError(res.content[0].text)  # type: ignore[union-attr]
            return res.structuredContent

        engine = rac.RAC(store="memory://", load_entrypoints=False)
        engine.register_mcp_tools(tools)
        assert engine.registry.pairs["book_flight"].tool == "cancel_flight"
        assert engine.registry.alternatives == {"book_flight": ["book_partner_flight"]}
        assert "search" in engine.registry.read_only
        engine.register_tools([rac.Tool(t.name, acall=lambda a, n=t.name: call(n, a),
                                        params=list(t.inputSchema.get("properties", {})),
                                        required=t.inputSchema.get("required", []))
                               for t in tools])
        async with engine.run() as run:
            await run.acall("search", dest="PAR")
            await run.acall("book_flight", dest="PAR")
            with pytest.raises(rac.ToolCallFailed) as failed:
                await run.acall("pay", amount=10.0)
    assert LIVE == {}
    assert [u.compensator for u in failed.value.report.compensated] == ["cancel_flight"]


@pytest.mark.parametrize(("meta", "message"), [
    ({"rac": "cancel"}, "field '_meta.rac' must be an object"),
    ({"rac": {"compensation": 3}}, "field '_meta.rac.compensation' must be a tool name"),
    ({"rac": {"compensation": {"tool": "c", "args": {"x": 1}}}}, "compensation.args' must map"),
    ({"rac": {"alternatives": "b"}}, "alternatives' must be a list"),
    ({"rac": {"compensate": "c"}}, "unknown field(s) in '_meta.rac': ['compensate']"),
    ({"rac": {"compensation": "book"}}, "refers to itself"),
])
def test_untrusted_metadata_is_validated(meta: dict[str, Any], message: str) -> None:
    tool = Tool(name="book", inputSchema={"type": "object"}, _meta=meta)  # type: ignore[call-arg]
    engine = rac.RAC(store="memory://")
    with pytest.raises(rac.ConfigurationError) as err:
        engine.register_mcp_tools([tool])
    assert message in str(err.value) and "book" in str(err.value)
