"""MCP failures as RAC classifies them: JSON-RPC codes, a real request timeout, a transport
closed before sending, and wrapped errors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import anyio
import pytest

import rac
import rac.mcp
from rac.classify import ErrorKind

pytest.importorskip("mcp")
from mcp.server.fastmcp import FastMCP  # noqa: E402
from mcp.server.lowlevel import Server  # noqa: E402
from mcp.shared.exceptions import McpError  # noqa: E402
from mcp.shared.memory import create_connected_server_and_client_session  # noqa: E402
from mcp.types import (  # noqa: E402
    CONNECTION_CLOSED,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    ErrorData,
    Tool,
)
from mcp.types import CallToolResult as SDKCallToolResult  # noqa: E402
from mcp.types import TextContent as SDKTextContent  # noqa: E402


@pytest.mark.parametrize(("code", "kind"), [
    (408, ErrorKind.AMBIGUOUS),                 # the Python SDK's request timeout
    (-32001, ErrorKind.AMBIGUOUS),              # the TypeScript SDK's request timeout
    (CONNECTION_CLOSED, ErrorKind.AMBIGUOUS),   # closed with the request outstanding
    (INTERNAL_ERROR, ErrorKind.AMBIGUOUS),
    (INVALID_PARAMS, ErrorKind.PERMANENT),
    (METHOD_NOT_FOUND, ErrorKind.PERMANENT),
    (-31999, ErrorKind.PERMANENT),              # a server's own code: it answered
])
def test_mcp_error_codes(code: int, kind: ErrorKind) -> None:
    err = McpError(ErrorData(code=code, message="x"))
    verdict = rac.mcp.classify_mcp_error(err)
    assert verdict is not None and verdict.kind is kind


def test_wrapped_and_grouped_errors_are_found_and_the_most_careful_wins() -> None:
    timeout = McpError(ErrorData(code=408, message="timed out"))
    try:
        try:
            raise timeout
        except McpError as e:
            raise RuntimeError("tool call failed") from e
    except RuntimeError as wrapped:
        verdict = rac.mcp.classify_mcp_error(wrapped)
    assert verdict is not None and verdict.kind is ErrorKind.AMBIGUOUS
    group = ExceptionGroup("g", [McpError(ErrorData(code=INVALID_PARAMS, message="bad")), timeout])
    verdict = rac.mcp.classify_mcp_error(group)
    assert verdict is not None and verdict.kind is ErrorKind.AMBIGUOUS
    assert rac.mcp.classify_mcp_error(ValueError("not mcp")) is None


def test_a_closed_stream_before_sending_is_transient() -> None:
    verdict = rac.mcp.classify_mcp_error(anyio.ClosedResourceError())
    assert verdict is not None and verdict.kind is ErrorKind.TRANSIENT


def test_a_broken_stream_is_ambiguous_not_transient() -> None:
    """What a client whose call timed out raises (issue 25: read as transient, the booking
    was made three times): the server may have run the tool."""
    assert rac.mcp.classify_mcp_error(anyio.BrokenResourceError()) is None  # not MCP's
    engine = rac.RAC(store="memory://", load_entrypoints=False,
                     plugins=[rac.mcp.MCPErrors()])
    from rac.run.attempts import classify

    assert classify(engine, "book", anyio.BrokenResourceError()).kind is ErrorKind.AMBIGUOUS


slow = FastMCP("slow")


@slow.tool()
async def book_slowly(dest: str) -> dict[str, str]:
    """Commits, then never answers."""
    BOOKED.append(dest)
    await anyio.Event().wait()
    return {"booking_id": dest}


BOOKED: list[str] = []


async def test_a_real_request_timeout_is_ambiguous_not_retried_and_never_reported_undone(
        ) -> None:
    BOOKED.clear()
    async with create_connected_server_and_client_session(slow._mcp_server) as client:
        listed = (await client.list_tools()).tools
        engine = rac.RAC(store="memory://", load_entrypoints=False,
                         retry=rac.RetryPolicy(max_attempts=3, initial_delay=0, jitter=0))
        engine.register_mcp_tools(listed, server="slow")
        engine.register_tools(rac.mcp.session_tools(client, listed, timeout=0.2))
        async with engine.run() as run:
            with pytest.raises(rac.ToolCallFailed) as failed:
                await run.acall("book_slowly", dest="PAR")
    # The call was sent and may have taken effect: it is not repeated, and not reported undone.
    assert BOOKED == ["PAR"]
    assert failed.value.report.error_kind == "ambiguous"
    assert "timed out" in str(failed.value).lower()
    assert run.status is not rac.RunStatus.COMPENSATED
    assert "world is back" not in str(failed.value)


lax = Server("lax")
LAX_LEDGER: list[str] = []


@lax.list_tools()
async def lax_tools() -> list[Tool]:
    args = {"type": "object", "properties": {"who": {"type": "string"}}, "required": ["who"]}
    return [Tool(name="book_seat", inputSchema=args,  # promises an integer id, sends a string
                 outputSchema={"type": "object",
                               "properties": {"booking_id": {"type": "integer"}}},
                 _meta=rac.mcp.recovery_meta(compensation="cancel_seat",
                                             args={"booking_id": "result.booking_id"})),
            Tool(name="cancel_seat", inputSchema={
                "type": "object", "properties": {"booking_id": {"type": "string"}}})]


@lax.call_tool()
async def lax_call(name: str, args: dict[str, Any]) -> SDKCallToolResult:
    LAX_LEDGER.append(name)
    booked = {"booking_id": "S-1"}
    return SDKCallToolResult(content=[SDKTextContent(type="text", text=str(booked))],
                             structuredContent=booked)


async def test_a_client_error_after_the_server_answered_is_ambiguous_never_undone() -> None:
    # mcp 1.x checks the answer against the tool's outputSchema after the server ran the
    # tool, and raises a plain RuntimeError: the seat is booked all the same.
    LAX_LEDGER.clear()
    async with create_connected_server_and_client_session(lax) as client:
        listed = (await client.list_tools()).tools
        engine = rac.RAC(store="memory://", load_entrypoints=False)
        engine.register_mcp_tools(listed, server="lax")
        engine.register_tools(rac.mcp.session_tools(client, listed))
        async with engine.run() as run:
            with pytest.raises(rac.ToolCallFailed) as failed:
                await run.acall("book_seat", who="Ada")
    assert LAX_LEDGER == ["book_seat"]  # run once, never repeated
    assert failed.value.report.error_kind == "ambiguous"
    assert "outputSchema" in str(failed.value) or "structured content" in str(failed.value)
    assert run.status is rac.RunStatus.NEEDS_ATTENTION
    assert "world is back" not in str(failed.value)


class RefusingSession:
    """A session whose connection is refused before anything is sent."""

    async def call_tool(self, name: str, args: dict[str, Any]) -> Any:
        raise ConnectionRefusedError(f"cannot reach the server for {name}")


async def test_a_client_error_rac_knows_keeps_its_own_verdict() -> None:
    with pytest.raises(ConnectionRefusedError):  # transient: nothing was sent
        await rac.mcp.call_session_tool(RefusingSession(), "book_seat", {"who": "Ada"})


@dataclass
class TextContent:  # mcp 2.x's content block, as its types present it
    text: str
    type: str = "text"


@dataclass
class CallToolResult:  # mcp 2.x's result: snake_case attributes
    content: list[TextContent]
    is_error: bool = False
    structured_content: dict[str, Any] | None = None


@pytest.mark.parametrize("declared", [True, False])
def test_results_of_the_2x_shape_are_read_and_is_error_fails(declared: bool) -> None:
    """An ``isError`` result is a failure; whether the charge may have happened is the
    declaration's to say (issue 25): declared to come before any effect, the rollback is
    clean; undeclared, the payment is named as possibly made."""
    cancelled: list[str] = []

    def book(args: dict[str, Any]) -> CallToolResult:
        return CallToolResult([TextContent('{"booking_id": "B1"}')],
                              structured_content={"booking_id": "B1"})

    def cancel(args: dict[str, Any]) -> CallToolResult:
        cancelled.append(args["booking_id"])
        return CallToolResult([TextContent("ok")])

    def pay(args: dict[str, Any]) -> CallToolResult:
        return CallToolResult([TextContent("card declined")], is_error=True)

    engine = rac.RAC(store="memory://", load_entrypoints=False,
                     plugins=[rac.mcp.MCPErrors()],
                     compensations={"book": {"tool": "cancel",
                                             "args": {"booking_id": "result.booking_id"}}},
                     errors_before_effect={"pay": (rac.ResultError,)} if declared else None,
                     tools=[rac.Tool("book", call=book, params=["dest"]),
                            rac.Tool("cancel", call=cancel, params=["booking_id"]),
                            rac.Tool("pay", call=pay, params=["amount"])])
    with engine.run() as run:
        run.call("book", dest="PAR")
        with pytest.raises(rac.ToolCallFailed, match="card declined") as failed:
            run.call("pay", amount=3)
    assert cancelled == ["B1"]
    if declared:
        assert run.status is rac.RunStatus.COMPENSATED
    else:
        assert [u.tool for u in failed.value.report.in_doubt] == ["pay"]
        assert run.status is rac.RunStatus.NEEDS_ATTENTION
        assert "world is back" not in str(failed.value)
