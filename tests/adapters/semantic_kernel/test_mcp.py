"""SK's MCP plugin over a real stdio server: pairs come from the server's tool metadata (which
SK drops) and are mapped to SK's renamed functions; compensation goes through the server."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from semantic_kernel import Kernel
from semantic_kernel.connectors.mcp import MCPStdioPlugin

import rac
from rac.models import RecordKind
from rac.testing import TravelWorld
from rac_semantic_kernel import enable_rac
from rac_semantic_kernel.mcp_plugins import MCPToolError
from rac_semantic_kernel.testing import Call, TravelPlugin
from tests.adapters.semantic_kernel.support import HOTEL, trip_agent


async def test_mcp_pairs_from_metadata_and_compensation_through_the_server(
        tmp_path: Path, make_engine: Callable[..., rac.RAC]) -> None:
    db = str(tmp_path / "world.db")
    world = TravelWorld(db)  # the same world the server books in
    world.fail("book_hotel", "permanent", message="hotel full")
    engine = make_engine(compensations={"book_hotel": "cancel_hotel"}, tools=None,
                         read_only=[])
    async with MCPStdioPlugin(name="air", command=sys.executable,
                              args=["-m", "rac_semantic_kernel.mcp_travel_server", db]) as air:
        kernel = Kernel()
        kernel.add_plugin(air)
        kernel.add_plugin(TravelPlugin(world), plugin_name="travel")
        flight = Call("air", "book-flight", {"passenger": "ann", "origin": "SFO", "dest": "CDG"})
        search = Call("air", "search_flights", {"origin": "SFO", "dest": "CDG"})
        agent, model = trip_agent(kernel, [[search], [flight], [HOTEL], "No hotel."])
        enable_rac(agent, rac=engine, trusted_mcp=["air"])  # its read-only hint is believed

        await agent.get_response(messages="Paris trip.")

    assert engine.registry.pairs["air-book-flight"].tool == "air-cancel-flight"
    assert "air-search_flights" in engine.registry.read_only
    assert [(b["kind"], b["status"]) for b in world.bookings()] == [("flight", "cancelled")]
    assert "Undone, newest first: air-book-flight FL-" in model.tool_results(-1)[-1]
    (info,) = engine.store.list_runs()
    records = engine.store.get_records(info.run_id)
    assert [(r.tool, r.kind) for r in records] == [
        ("air-search_flights", RecordKind.ACTION), ("air-book-flight", RecordKind.ACTION),
        ("travel-book_hotel", RecordKind.ACTION), ("air-cancel-flight", RecordKind.COMPENSATION)]
    assert records[1].result["booking_id"].startswith("FL-")
    world.close()


async def test_an_mcp_error_result_is_a_failure_not_a_success(
        tmp_path: Path, make_engine: Callable[..., rac.RAC]) -> None:
    db = str(tmp_path / "world.db")
    world = TravelWorld(db)
    # The server refuses an unknown city before it books anything: the user says so (an
    # MCP error result alone is no evidence that nothing happened, issue 25).
    engine = make_engine(tools=None,
                         errors_before_effect={"air-book-car": (rac.ResultError, MCPToolError)})
    async with MCPStdioPlugin(name="air", command=sys.executable,
                              args=["-m", "rac_semantic_kernel.mcp_travel_server", db]) as air:
        kernel = Kernel()
        kernel.add_plugin(air)
        flight = Call("air", "book-flight", {"passenger": "ann", "origin": "SFO", "dest": "CDG"})
        car = Call("air", "book-car", {"driver": "ann", "city": "Atlantis"})
        agent, model = trip_agent(kernel, [[flight], [car], "No car."])
        enable_rac(agent, rac=engine)

        await agent.get_response(messages="Flight and a car in Atlantis.")

    report = model.tool_results(-1)[-1]
    assert report.startswith("RAC: air-book-car failed") and "no cars in Atlantis" in report
    assert [(b["kind"], b["status"]) for b in world.bookings()] == [("flight", "cancelled")]
    (info,) = engine.store.list_runs()
    car_record = [r for r in engine.store.get_records(info.run_id) if r.tool == "air-book-car"]
    assert car_record[0].status is rac.RecordStatus.FAILED
    world.close()
