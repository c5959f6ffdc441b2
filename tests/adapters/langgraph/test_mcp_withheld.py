"""MCP tools whose compensators and lookups are withheld from the model (users hide ``cancel_*``
and ``find_*`` from the LLM) and offered to RAC with ``tools=[...]``: the agent's declarations
name them and are accepted, the undo runs through the server, and the model hears what was
undone. A real MCP server (the example travel server, in process) through
langchain-mcp-adapters, checked against the server's own world."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import rac
from rac.testing import TravelWorld, VirtualClock

pytest.importorskip("langchain_mcp_adapters")
from langchain.agents import create_agent  # noqa: E402
from langchain_mcp_adapters.tools import load_mcp_tools  # noqa: E402
from mcp.shared.memory import create_connected_server_and_client_session  # noqa: E402

from rac.demo.mcp_travel_server import Fault, build_server  # noqa: E402
from rac_langgraph import RACMiddleware  # noqa: E402
from tests.adapters.langgraph.support import call, errors, model, say, turn  # noqa: E402

ADA = "Ada"
FLIGHT = {"passenger": ADA, "origin": "LHR", "dest": "CDG"}
HOTEL = {"guest": ADA, "city": "Paris", "nights": 2}
HIDDEN = ("cancel_", "find_")


async def _tools(world: Path, *faults: Fault) -> AsyncIterator[list[Any]]:
    server = build_server(str(world), list(faults))
    async with create_connected_server_and_client_session(
            getattr(server, "_mcp_server", server)) as session:
        yield await load_mcp_tools(session)


def _engine() -> rac.RAC:
    return rac.RAC(store="memory://", load_entrypoints=False, clock=VirtualClock())


@pytest.fixture
def world_file(tmp_path: Path) -> Path:
    path = tmp_path / "world.db"
    TravelWorld(str(path)).close()
    return path


def _live(path: Path) -> list[str]:
    world = TravelWorld(str(path))
    try:
        return sorted(b["kind"] for b in world.live())
    finally:
        world.close()


async def test_compensators_withheld_from_the_model_undo_through_the_server(
        world_file: Path) -> None:
    async for tools in _tools(world_file, Fault("book_hotel", "permanent")):
        for_model = [t for t in tools if not t.name.startswith(HIDDEN)]
        for_rac = [t for t in tools if t.name.startswith(HIDDEN)]
        eng = _engine()
        m = model(turn(call("book_flight", **FLIGHT)), turn(call("book_hotel", **HOTEL)),
                  say("Sorry, no hotel: nothing is booked."))
        agent = create_agent(m, for_model, middleware=[RACMiddleware(eng, tools=for_rac)])
        out = await agent.ainvoke({"messages": [("user", "flight and hotel to Paris")]})

        # The pair and the lookup come from book_flight's metadata and name tools the model
        # was never offered; the flight was undone through the server's cancel_flight.
        assert eng.registry.pairs["book_flight"].tool == "cancel_flight"
        assert eng.registry.lookups["book_flight"].tool == "find_flights"
        assert _live(world_file) == []
        [report] = errors(out["messages"])
        assert "book_flight FL-101 (via cancel_flight)" in str(report.content)
        assert "world is back" in str(report.content)
        assert not any(t.name.startswith(HIDDEN) for t in agent.nodes["tools"].bound
                       .tools_by_name.values())  # never offered to the model
        [info] = eng.store.list_runs()
        assert info.status is rac.RunStatus.COMPENSATED


async def test_without_the_withheld_tools_the_error_says_where_to_give_them(
        world_file: Path) -> None:
    async for tools in _tools(world_file):
        for_model = [t for t in tools if not t.name.startswith(HIDDEN)]
        agent = create_agent(model(turn(call("book_flight", **FLIGHT)), say("done")), for_model,
                             middleware=[RACMiddleware(_engine())])
        with pytest.raises(rac.ConfigurationError, match=r"cancel_flight.*tools=\[\.\.\.\]"):
            await agent.ainvoke({"messages": [("user", "a flight")]})
        assert _live(world_file) == []  # refused before any effect


async def test_withheld_tools_given_to_an_engine_shared_by_two_agents(world_file: Path) -> None:
    """``tools=`` next to ``rac=``: offered to the shared engine once, used by each agent."""
    async for tools in _tools(world_file, Fault("book_car", "permanent")):
        for_rac = [t for t in tools if t.name.startswith(HIDDEN)]
        eng = _engine()
        RACMiddleware(eng, tools=for_rac)
        flights = [t for t in tools if t.name == "book_flight"]
        cars = [t for t in tools if t.name == "book_car"]
        first = create_agent(model(turn(call("book_flight", **FLIGHT)), say("booked")), flights,
                             middleware=[RACMiddleware(eng)])
        await first.ainvoke({"messages": [("user", "a flight")]})
        second = create_agent(model(turn(call("book_car", driver=ADA, city="Paris")),
                                    say("no car")), cars, middleware=[RACMiddleware(eng)])
        out = await second.ainvoke({"messages": [("user", "a car")]})
        assert _live(world_file) == ["flight"]  # the first turn's flight is not this turn's
        [report] = errors(out["messages"])
        assert "book_car failed" in str(report.content)
