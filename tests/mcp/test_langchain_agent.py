"""A real MCP server as a subprocess (stdio), used through langchain-mcp-adapters by a
`create_agent` agent under `RACMiddleware`: the pairs come from the server's metadata with no
extra line, compensations run through the server, and an untrusted server's read-only claim is
not believed."""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

import rac
import rac.mcp
from rac.testing import TravelWorld

pytest.importorskip("langchain_mcp_adapters")
from langchain.agents import create_agent  # noqa: E402
from langchain_mcp_adapters.client import MultiServerMCPClient  # noqa: E402

from rac_langgraph import RACMiddleware  # noqa: E402
from tests.adapters.langgraph.support import call, errors, model, say, turn  # noqa: E402

SERVER = str(Path(__file__).resolve().parents[2] / "examples" / "mcp_travel_server.py")
#: The read timeout of the tests whose server hangs on purpose. langchain-mcp-adapters starts the
#: server anew for every call and the timeout also bounds that start, which takes seconds on a
#: loaded machine: generous, so that only the hung call reaches it.
HANG_TIMEOUT = 30.0
ADA = "Ada Lovelace"
TRIP = [call("book_flight", passenger=ADA, origin="LHR", dest="CDG"),
        call("book_hotel", guest=ADA, city="Paris", nights=3),
        call("book_car", driver=ADA, city="Paris")]


def travel_client(world: Path, *faults: str, timeout: float | None = None,
                  prefix: bool = False) -> MultiServerMCPClient:
    """langchain-mcp-adapters' client of the example server (a new process per call)."""
    args = [SERVER, "--world", str(world)]
    for fault in faults:
        args += ["--fail", fault]
    conn: dict[str, Any] = {"command": sys.executable, "args": args, "transport": "stdio"}
    if timeout is not None:
        conn["session_kwargs"] = {"read_timeout_seconds": timedelta(seconds=timeout)}
    return MultiServerMCPClient({"travel": conn}, tool_name_prefix=prefix)  # type: ignore[dict-item]


def engine() -> rac.RAC:
    return rac.RAC(store="memory://", load_entrypoints=False,
                   clock=rac.testing.VirtualClock())


@pytest.fixture
def world_file(tmp_path: Path) -> Path:
    path = tmp_path / "world.db"
    TravelWorld(str(path)).close()
    return path


def timed_out_elsewhere(eng: rac.RAC, hung: str) -> str:
    """A failure message naming the calls other than ``hung`` that timed out, if any."""
    late = [f"{r.tool}: {r.error}" for run in eng.store.list_runs()
            for r in eng.store.get_records(run.run_id)
            if r.tool != hung and "time" in str(r.error or "").lower()]
    return (f"calls other than the hung {hung} timed out: {late}; the server took over "
            f"{HANG_TIMEOUT:g} s to start (a machine busier than HANG_TIMEOUT allows)"
            if late else "")


def ledger(path: Path) -> list[tuple[str, str | None, str]]:
    world = TravelWorld(str(path))
    try:
        return world.ledger()
    finally:
        world.close()


async def book_trip(eng: rac.RAC, tools: list[Any], *, steps: int) -> dict[str, Any]:
    """A `create_agent` agent under `RACMiddleware(eng)` whose model makes the first ``steps``
    calls of the trip, then apologises."""
    agent = create_agent(model(*(turn(c) for c in TRIP[:steps]), say("sorry")),
                         tools, middleware=[RACMiddleware(eng)])
    result: dict[str, Any] = await agent.ainvoke({"messages": [("user", "book my trip")]})
    return result


async def test_pairs_come_from_the_server_and_compensations_run_through_it(
        world_file: Path) -> None:
    tools = await travel_client(world_file, "book_car=permanent").get_tools()
    eng = engine()
    result = await book_trip(eng, tools, steps=3)
    # Discovered from the tools' metadata, with no registration line.
    lookup = rac.Lookup(tool="find_flights", args={"passenger": "args.passenger"},
                        items="result.bookings", match={"place": "args.dest"})
    assert eng.registry.pairs["book_flight"] == rac.Compensation(
        tool="cancel_flight", args={"booking_id": "result.booking_id"}, lookup=lookup)
    assert eng.registry.lookups["book_flight"] == lookup
    # The server's own world: both bookings undone by the server's cancel tools.
    assert [(tool, event) for tool, _, event in ledger(world_file)] == [
        ("book_flight", "book"), ("book_hotel", "book"),
        ("cancel_hotel", "cancel"), ("cancel_flight", "cancel")]
    (report,) = errors(result["messages"])
    assert "Undone, newest first: book_hotel" in str(report.content)
    assert "world is back" in str(report.content)


async def test_an_untrusted_read_only_claim_leaves_the_tool_protected(world_file: Path) -> None:
    tools = await travel_client(world_file, "book_hotel=permanent").get_tools()
    eng = engine()
    agent = create_agent(model(turn(call("find_flights", passenger=ADA)), turn(TRIP[0]),
                               turn(TRIP[1]), say("sorry")),
                         tools, middleware=[RACMiddleware(eng)])
    result = await agent.ainvoke({"messages": [("user", "book my trip")]})
    assert "find_flights" not in eng.registry.read_only
    (report,) = errors(result["messages"])
    text = str(report.content)
    # RAC cannot vouch for what a tool it was told is read-only by an untrusted server did.
    assert "find_flights" in text and "world is back" not in text
    runs = eng.store.list_runs()
    assert [r.status for r in runs] == [rac.RunStatus.NEEDS_ATTENTION]


async def test_a_trusted_server_is_believed_and_its_registration_kept(world_file: Path) -> None:
    tools = await travel_client(world_file, "book_hotel=permanent").get_tools()
    eng = engine()
    eng.register_mcp_tools(tools, server="travel", trusted=True)  # before the agent runs
    agent = create_agent(model(turn(call("find_flights", passenger=ADA)), turn(TRIP[0]),
                               turn(TRIP[1]), say("sorry")),
                         tools, middleware=[RACMiddleware(eng)])
    result = await agent.ainvoke({"messages": [("user", "book my trip")]})
    assert "find_flights" in eng.registry.read_only
    (report,) = errors(result["messages"])
    assert "world is back" in str(report.content)
    assert [r.status for r in eng.store.list_runs()] == [rac.RunStatus.COMPENSATED]


async def test_prefixed_tool_names_through_a_name_map(world_file: Path) -> None:
    tools = await travel_client(world_file, "book_hotel=permanent", prefix=True).get_tools()
    eng = engine()
    eng.register_mcp_tools(tools, server="travel", names=rac.mcp.NameMap.prefixed("travel"))
    agent = create_agent(model(turn(call("travel_book_flight", passenger=ADA, origin="LHR",
                                         dest="CDG")),
                               turn(call("travel_book_hotel", guest=ADA, city="Paris",
                                         nights=3)), say("sorry")),
                         tools, middleware=[RACMiddleware(eng)])
    await agent.ainvoke({"messages": [("user", "book my trip")]})
    assert [(tool, event) for tool, _, event in ledger(world_file)] == [
        ("book_flight", "book"), ("cancel_flight", "cancel")]


async def test_a_compensation_the_server_reports_failed_is_not_counted_undone(
        world_file: Path) -> None:
    tools = await travel_client(world_file, "book_hotel=permanent",
                                "cancel_flight=permanent").get_tools()
    eng = rac.RAC(store="memory://", load_entrypoints=False, clock=rac.testing.VirtualClock(),
                  compensation_retry=rac.RetryPolicy(max_attempts=2, initial_delay=0, jitter=0))
    result = await book_trip(eng, tools, steps=2)
    (report,) = errors(result["messages"])
    assert "world is back" not in str(report.content)
    assert [r.status for r in eng.store.list_runs()] == [rac.RunStatus.NEEDS_ATTENTION]
    live = TravelWorld(str(world_file))
    assert [b["kind"] for b in live.live()] == ["flight"]
    live.close()


async def test_a_booking_whose_connection_dropped_is_reconciled_through_the_lookup(
        world_file: Path) -> None:
    # The server books the flight, then its process dies: the client sees the connection
    # close with the request outstanding. RAC looks the booking up (find_flights, declared in
    # the server's metadata) instead of booking again or reporting it undone.
    tools = await travel_client(world_file, "book_flight=crash@afterx1",
                                "book_car=permanent").get_tools()
    eng = engine()
    result = await book_trip(eng, tools, steps=3)
    assert [(tool, event) for tool, _, event in ledger(world_file)] == [
        ("book_flight", "book"), ("book_hotel", "book"),
        ("cancel_hotel", "cancel"), ("cancel_flight", "cancel")]
    (report,) = errors(result["messages"])
    assert "world is back" in str(report.content)
    assert [r.status for r in eng.store.list_runs()] == [rac.RunStatus.COMPENSATED]


async def test_a_timed_out_booking_is_reconciled_not_repeated(world_file: Path) -> None:
    tools = await travel_client(world_file, "book_flight=hang@afterx1", "book_hotel=permanent",
                                timeout=HANG_TIMEOUT).get_tools()
    eng = engine()
    await book_trip(eng, tools, steps=2)
    assert [(tool, event) for tool, _, event in ledger(world_file)] == [
        ("book_flight", "book"), ("cancel_flight", "cancel")], timed_out_elsewhere(
            eng, "book_flight")
    assert [r.status for r in eng.store.list_runs()] == [rac.RunStatus.COMPENSATED]


async def test_a_timed_out_compensation_of_a_trusted_idempotent_tool_is_retried(
        world_file: Path) -> None:
    tools = await travel_client(world_file, "book_hotel=permanent", "cancel_flight=hangx1",
                                timeout=HANG_TIMEOUT).get_tools()
    eng = rac.RAC(store="memory://", load_entrypoints=False, clock=rac.testing.VirtualClock(),
                  compensation_retry=rac.RetryPolicy(max_attempts=3, initial_delay=0, jitter=0))
    eng.register_mcp_tools(tools, server="travel", trusted=True)
    await book_trip(eng, tools, steps=2)
    assert [(tool, event) for tool, _, event in ledger(world_file)] == [
        ("book_flight", "book"), ("cancel_flight", "cancel")], timed_out_elsewhere(
            eng, "cancel_flight")
    assert [r.status for r in eng.store.list_runs()] == [rac.RunStatus.COMPENSATED]
