"""Test helpers: the scripted CrewAI model and the travel world as CrewAI tools (from
``rac_crewai.testing``), an engine on a virtual clock, and readers of what the agent was told."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import rac
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld, VirtualClock
from rac_crewai.testing import ScriptedLLM, world_tools

__all__ = ["FLIGHT", "FLIGHT_UNDONE", "HOTEL", "MCP_SERVER", "ScriptedLLM", "bare_engine", "engine",
           "last_tool_result", "ledger", "only_run", "runs_of", "told", "world_tools"]

#: The example MCP server over the travel world (run as a stdio subprocess by the MCP tests).
MCP_SERVER = str(Path(__file__).resolve().parents[3] / "examples" / "mcp_travel_server.py")
#: A model's arguments for a flight and a hotel of Ada's trip.
FLIGHT = {"passenger": "Ada", "origin": "LHR", "dest": "CDG"}
HOTEL = {"guest": "Ada", "city": "Paris", "nights": 3}
#: The world's ledger after the flight was booked and then cancelled by a rollback.
FLIGHT_UNDONE = [("book_flight", "book"), ("cancel_flight", "cancel")]


def engine(**kw: Any) -> rac.RAC:
    """An in-memory engine for the travel world, on a virtual clock."""
    kw.setdefault("compensations", TRAVEL_COMPENSATIONS)
    kw.setdefault("read_only", TRAVEL_READ_ONLY)
    kw.setdefault("retry", rac.RetryPolicy(max_attempts=3, initial_delay=1.0, jitter=0.0))
    return rac.RAC(store="memory://", clock=VirtualClock(), load_entrypoints=False, **kw)


def bare_engine(**kw: Any) -> rac.RAC:
    """An in-memory engine on a virtual clock with no declarations (an MCP server's come from
    the server)."""
    return rac.RAC(store="memory://", clock=VirtualClock(), load_entrypoints=False, **kw)


def ledger(world: Path) -> list[tuple[str, str]]:
    """What happened in the travel world file, as (tool, event) pairs in order."""
    w = TravelWorld(str(world))
    try:
        return [(tool, event) for tool, _, event in w.ledger()]
    finally:
        w.close()


def told(llm: ScriptedLLM, tool_name: str) -> list[str]:
    """Every result of ``tool_name`` the model was shown, in order (one per call)."""
    out: dict[str, str] = {}
    for messages in llm.seen:
        for m in messages:
            if m.get("role") == "tool" and m.get("name") == tool_name:
                out.setdefault(m["tool_call_id"], str(m.get("content")))
    return list(out.values())


def last_tool_result(messages: list[dict[str, Any]]) -> str:
    """The content of the newest tool message."""
    return next(str(m["content"]) for m in reversed(messages) if m.get("role") == "tool")


def only_run(eng: rac.RAC) -> rac.RunInfo:
    """The one run in the engine's log (fails if there is not exactly one)."""
    [run] = eng.store.list_runs()
    return run


def runs_of(eng: rac.RAC) -> list[rac.RunInfo]:
    """Every run in the engine's log."""
    return eng.store.list_runs()


def closed_connection(text: str) -> bool:
    """Whether ``text`` names an MCP server's exit as its real cause. Which error the client
    meets depends on timing (reading the end of the server's output, or writing to its closed
    input on a busy machine), so either is the real cause."""
    return ("McpError: Connection closed" in text
            or "BrokenResourceError: the server closed the connection" in text)


def server_once(folder: Path) -> Path:
    """A script in ``folder`` that serves the example MCP server once: every later start of
    it exits before answering (a server that crashed and does not come back)."""
    started = folder / "started"
    wrapper = folder / "server_once.py"
    wrapper.write_text(
        "import os, sys\n"
        f"if os.path.exists({str(started)!r}):\n"
        "    sys.exit('this server does not come back')\n"
        f"open({str(started)!r}, 'w').close()\n"
        "from rac.demo.mcp_travel_server import main\n"
        "main(sys.argv[1:])\n")
    return wrapper
