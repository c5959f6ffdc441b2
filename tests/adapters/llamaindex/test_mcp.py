"""MCP tools loaded with llama-index-tools-mcp, from a real MCP server started as a subprocess
(FastMCP over stdio): the server's tools declare their compensations in ``_meta``, which
llama-index-tools-mcp drops; one line reads them from the client, and the rollback runs through
the server."""

import sys
from pathlib import Path

import pytest
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.tools.mcp import BasicMCPClient, McpToolSpec

import rac
import rac.mcp
from rac.models import RunStatus
from rac.testing import TravelWorld, VirtualClock
from rac_llamaindex import enable_rac, rac_run_of
from rac_llamaindex.testing import ScriptedModel

FLIGHT = {"passenger": "ann", "origin": "OSL", "dest": "PAR"}
HOTEL = {"guest": "ann", "city": "PAR", "nights": 2}
CAR = {"driver": "ann", "city": "PAR"}


def server(world: Path, *faults: str) -> BasicMCPClient:
    """A client of the demo's travel MCP server over stdio (a process per session)."""
    args = ["-m", "rac.demo.mcp_travel_server", "--world", str(world)]
    for fault in faults:
        args += ["--fail", fault]
    return BasicMCPClient(sys.executable, args=args, timeout=60)


@pytest.fixture
def world_path(tmp_path: Path) -> Path:
    return tmp_path / "travel.db"


async def test_pairs_come_from_the_server_and_the_rollback_runs_through_it(
        world_path: Path) -> None:
    client = server(world_path, "book_car=permanent")
    tools = await McpToolSpec(client).to_tool_list_async()
    assert tools and not any(t.metadata.name.startswith("rac") for t in tools)
    engine = rac.RAC(store="memory://", clock=VirtualClock())  # no pairs declared in code
    found = await rac.mcp.register_session_tools(engine, client, server="travel")
    assert found.compensations["book_flight"].tool == "cancel_flight"

    model = ScriptedModel([[("book_flight", FLIGHT)], [("book_hotel", HOTEL)],
                           [("book_car", CAR)], "No car in Paris; nothing is booked."])
    agent = enable_rac(FunctionAgent(name="travel", tools=tools,
                                     llm=model.function_calling_llm()), engine)

    handler = agent.run(user_msg="Book ann's trip to Paris")
    assert str(await handler) == "No car in Paris; nothing is booked."

    world = TravelWorld(str(world_path))
    try:
        assert world.live() == []
        assert [(t, e) for t, _, e in world.ledger() if e.startswith("cancel")] == [
            ("cancel_hotel", "cancel"), ("cancel_flight", "cancel")]
    finally:
        world.close()
    report = model.inputs[3].tool_results()[-1]
    assert report.startswith("RAC: book_car failed"), report
    assert "Undone, newest first: book_hotel HT-102 (via cancel_hotel), book_flight FL-101" \
        in report
    run = rac_run_of(handler)
    assert run is not None and run.status is RunStatus.COMPENSATED
    (flight,) = [r for r in run.records() if r.tool == "book_flight"]
    assert flight.result["booking_id"] == "FL-101"  # the structured content, logged
