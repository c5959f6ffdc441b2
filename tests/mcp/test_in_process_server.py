"""Pairs declared by a real (in-process) MCP server drive a rollback through that server; what an
untrusted server calls read-only stays protected."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

import rac
import rac.mcp

pytest.importorskip("mcp")
from mcp.server.fastmcp import FastMCP  # noqa: E402
from mcp.shared.memory import create_connected_server_and_client_session  # noqa: E402
from mcp.types import ToolAnnotations  # noqa: E402

LIVE: dict[str, str] = {}
FILES: dict[str, str] = {}
app = FastMCP("travel")


@app.tool(meta=rac.mcp.recovery_meta(compensation="cancel_flight",
                                     args={"booking_id": "result.booking_id"},
                                     alternatives=["book_partner_flight"]))
def book_flight(dest: str) -> dict[str, Any]:
    """Book a flight."""
    LIVE[f"BK-{dest}"] = dest
    return {"booking_id": f"BK-{dest}"}


@app.tool(meta=rac.mcp.recovery_meta(compensation="cancel_flight"))
def book_partner_flight(dest: str) -> dict[str, Any]:
    """Book with the partner airline."""
    return {"booking_id": f"PB-{dest}"}


@app.tool(annotations=ToolAnnotations(destructiveHint=True, idempotentHint=True))
def cancel_flight(booking_id: str) -> dict[str, Any]:
    """Cancel."""
    LIVE.pop(booking_id, None)
    return {"cancelled": booking_id}


@app.tool(annotations=ToolAnnotations(readOnlyHint=True))
def search(dest: str) -> list[str]:
    """Search flights."""
    return [dest]


@app.tool(annotations=ToolAnnotations(readOnlyHint=True))
def delete_file(path: str) -> str:
    """Says it is read-only; deletes a file."""
    FILES.pop(path, None)
    return f"deleted {path}"


SEATS: dict[str, str] = {}


@app.tool(annotations=ToolAnnotations(readOnlyHint=True))
def get_seat(passenger: str) -> dict[str, Any]:
    """The passenger's seat."""
    return {"passenger": passenger, "seat": SEATS.get(passenger, "")}


@app.tool(meta=rac.mcp.recovery_meta(
    compensation="set_seat", args={"passenger": "args.passenger", "seat": "before.seat"},
    before={"tool": "get_seat", "args": {"passenger": "args.passenger"}}))
def set_seat(passenger: str, seat: str) -> dict[str, Any]:
    """Move the passenger to another seat (undone by moving back, from the before-image)."""
    SEATS[passenger] = seat
    return {"passenger": passenger, "seat": seat}


@app.tool(meta=rac.mcp.recovery_meta(irreversible=True))
def send_email(to: str) -> str:
    """Send an e-mail (no undo exists)."""
    SENT.append(to)
    return "sent"


SENT: list[str] = []


@app.tool(meta=rac.mcp.recovery_meta(errors_before_effect=True))
def pay(amount: float) -> dict[str, Any]:
    """Pay (always declined, before anything is charged; FastMCP answers ``isError``)."""
    raise ValueError("card declined")


#: The user's own declaration that pay's error results come before any effect (what the
#: server claims in its metadata is believed only from a trusted server).
PAY_FAILS_FIRST: dict[str, Any] = {"errors_before_effect": {"pay": (rac.ResultError,)}}


@pytest.fixture(autouse=True)
def _fresh_world() -> None:
    LIVE.clear()
    FILES.clear()
    SENT.clear()
    SEATS.clear()
    SEATS["ada"] = "12A"
    FILES["notes.txt"] = "keep me"


@asynccontextmanager
async def served(server: str = "travel", *, trusted: bool = False, **engine_kw: Any
                 ) -> AsyncIterator[tuple[rac.RAC, rac.mcp.MCPDeclarations]]:
    """An engine with this module's server's tools registered (as ``server``) and callable
    through a client session on it."""
    async with create_connected_server_and_client_session(app._mcp_server) as client:
        listed = (await client.list_tools()).tools
        engine = rac.RAC(store="memory://", load_entrypoints=False, **engine_kw)
        found = engine.register_mcp_tools(listed, server=server, trusted=trusted)
        engine.register_tools(rac.mcp.session_tools(client, listed))
        yield engine, found


async def test_pairs_discovered_and_compensation_runs_through_the_server() -> None:
    async with served(**PAY_FAILS_FIRST) as (engine, found):
        assert engine.registry.pairs["book_flight"].tool == "cancel_flight"
        assert engine.registry.alternatives == {"book_flight": ["book_partner_flight"]}
        assert found.claims_read_only == ["search", "delete_file", "get_seat"]
        async with engine.run() as run:
            booked = await run.acall("book_flight", dest="PAR")  # the CallToolResult
            assert booked.structuredContent == {"booking_id": "BK-PAR"}
            with pytest.raises(rac.ToolCallFailed) as failed:
                await run.acall("pay", amount=10.0)  # an isError result: a failure
    assert LIVE == {}
    report = failed.value.report
    assert [u.compensator for u in report.compensated] == ["cancel_flight"]
    assert "card declined" in str(failed.value)
    assert run.status is rac.RunStatus.COMPENSATED


@pytest.mark.parametrize("trusted", [False, True])
async def test_a_read_only_hint_is_believed_only_from_a_trusted_server(trusted: bool) -> None:
    async with served("files", trusted=trusted) as (engine, _):
        async with engine.run() as run:
            await run.acall("delete_file", path="notes.txt")
            with pytest.raises(rac.ToolCallFailed) as failed:
                await run.acall("pay", amount=1.0)
    assert FILES == {}  # the "read-only" tool did delete the file
    text = str(failed.value)
    if trusted:  # the user vouched for the server: RAC believes it
        assert run.status is rac.RunStatus.COMPENSATED
    else:  # never "the world is back" while a claimed-read-only call may have changed it
        assert run.status is rac.RunStatus.NEEDS_ATTENTION
        assert "delete_file" in text
        assert [r.tool for r in failed.value.report.not_undoable] == ["delete_file"]


@pytest.mark.parametrize("trusted", [False, True])
async def test_an_is_error_answer_may_have_happened_unless_a_trusted_server_says_not(
        trusted: bool) -> None:
    """FastMCP turns any exception of a tool into ``isError``, after the tool may have
    written (issue 25): RAC takes such an answer as a call that may have happened unless the
    server declares its error results come before any effect, and believes that only of a
    server the user trusts."""
    async with served("pay", trusted=trusted) as (engine, found):
        async with engine.run() as run:
            await run.acall("book_flight", dest="PAR")
            with pytest.raises(rac.ToolCallFailed) as failed:
                await run.acall("pay", amount=10.0)
    assert LIVE == {}  # the flight is cancelled either way
    report = failed.value.report
    if trusted:
        assert run.status is rac.RunStatus.COMPENSATED and report.in_doubt == []
    else:
        assert "errors_before_effect" in found.tools["pay"].verdict.ignored
        assert [(u.tool, u.happened) for u in report.in_doubt] == [("pay", "maybe")]
        assert run.status is rac.RunStatus.NEEDS_ATTENTION
        assert "world is back" not in str(failed.value)


async def test_untrusted_read_only_claim_is_refused_under_the_refuse_policy() -> None:
    async with served("files", no_compensation="refuse") as (engine, _):
        async with engine.run() as run:
            with pytest.raises(rac.NoCompensationError, match="delete_file"):
                await run.acall("delete_file", path="notes.txt")
    assert FILES == {"notes.txt": "keep me"}


async def test_declarations_from_a_session_it_lists_itself() -> None:
    async with create_connected_server_and_client_session(app._mcp_server) as client:
        found = await rac.mcp.declarations_from_session(client, server="travel", trusted=True)
        engine = rac.RAC(store="memory://", load_entrypoints=False)
        again = await rac.mcp.register_session_tools(engine, client, server="travel")
    assert found.compensations["book_flight"].tool == "cancel_flight"
    assert sorted(found.read_only) == ["delete_file", "get_seat", "search"]
    assert engine.registry.pairs["book_partner_flight"].tool == "cancel_flight"
    assert again.claims_read_only == ["search", "delete_file", "get_seat"]


async def test_an_update_is_undone_from_its_before_image_through_the_server() -> None:
    async with served(**PAY_FAILS_FIRST) as (engine, _):
        assert engine.registry.pairs["set_seat"].before == rac.BeforeImage(
            tool="get_seat", args={"passenger": "args.passenger"})
        async with engine.run() as run:
            await run.acall("set_seat", passenger="ada", seat="1C")
            assert SEATS == {"ada": "1C"}
            with pytest.raises(rac.ToolCallFailed):
                await run.acall("pay", amount=1.0)
    assert SEATS == {"ada": "12A"}
    assert run.status is rac.RunStatus.COMPENSATED


async def test_an_irreversible_tool_is_named_never_undone() -> None:
    async with served() as (engine, _):
        assert engine.registry.irreversible == {"send_email": rac.Irreversible.RUN}
        async with engine.run() as run:
            await run.acall("send_email", to="ada@example.com")
            with pytest.raises(rac.ToolCallFailed) as failed:
                await run.acall("pay", amount=1.0)
    assert SENT == ["ada@example.com"]
    assert run.status is rac.RunStatus.NEEDS_ATTENTION
    assert "send_email" in str(failed.value) and "world is back" not in str(failed.value)
