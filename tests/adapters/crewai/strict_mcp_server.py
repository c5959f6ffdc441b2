"""A small strict MCP server (stdio) for the MCPServerAdapter tests: it checks arguments
against its tools' input schemas (a null where a string is expected is refused), and writes
what it does to a ledger file.

``python strict_mcp_server.py LEDGER`` serves ``book_seat(who, note?)``, undone by
``cancel_seat(booking_id)``, as its ``_meta`` declares.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from rac.mcp import recovery_meta


def build(ledger: Path) -> Server[Any, Any]:
    """The server, writing to ``ledger``."""
    server: Server[Any, Any] = Server("strict")

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        seat = {"type": "object", "required": ["who"],
                "properties": {"who": {"type": "string"}, "note": {"type": "string"}}}
        cancel = {"type": "object", "required": ["booking_id"],
                  "properties": {"booking_id": {"type": "string"}}}
        return [types.Tool(name="book_seat", description="Book a seat.", inputSchema=seat,
                           _meta=recovery_meta(compensation="cancel_seat",
                                               args={"booking_id": "result.booking_id"})),
                types.Tool(name="cancel_seat", description="Cancel a seat.",
                           inputSchema=cancel, _meta=recovery_meta(effect="idempotent"))]

    @server.call_tool()  # validates arguments against the schemas above
    async def call_tool(name: str, args: dict[str, Any]) -> dict[str, Any]:
        with ledger.open("a") as f:
            f.write(f"{name}\n")
        if name == "book_seat":
            return {"booking_id": "SEAT-1", "who": args["who"]}
        return {"cancelled": args["booking_id"]}

    return server


async def serve(ledger: Path) -> None:
    """Serve over stdio until the client closes."""
    server = build(ledger)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(serve, Path(sys.argv[1]))
