"""Tools of ``Agent(mcps=[...])`` under RAC, against the example MCP server run as a
subprocess over stdio: the pairs come from the server's ``_meta`` (which CrewAI drops), mapped
to ``<server>_<tool>`` names (the server's own name, never its command line); compensations run through the server; a lost answer is
reconciled, not repeated; an untrusted server's read-only claim is not believed."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from crewai import Agent, Crew, Task
from crewai.mcp import MCPServerStdio
from crewai.utilities.string_utils import sanitize_tool_name
from structlog.testing import capture_logs

import rac
from rac.models import RecordKind, RecordStatus, RunStatus
from rac.testing import TravelWorld
from rac_crewai import enable_rac
from tests.adapters.crewai.support import (
    FLIGHT,
    FLIGHT_UNDONE,
    HOTEL,
    MCP_SERVER,
    ScriptedLLM,
    closed_connection,
    ledger,
    only_run,
    runs_of,
    server_once,
    told,
)
from tests.adapters.crewai.support import bare_engine as engine


class Travel:
    """The example server over a world file, as CrewAI names its tools."""

    def __init__(self, world: Path, *faults: str, server: str = "travel") -> None:
        args = [MCP_SERVER, "--world", str(world)]
        for fault in faults:
            args += ["--fail", fault]
        self.config = MCPServerStdio(command=sys.executable, args=args)
        #: the server's name in its tools' names: the one it declares (or the user gives it)
        self.server = server

    def name(self, tool: str) -> str:
        """The tool's name in CrewAI (and so in RAC's log and registry)."""
        return f"{self.server}_{tool}"

    def seen(self, tool: str) -> str:
        """The tool's name as the model sees it: the same name (no path, nothing cut)."""
        assert sanitize_tool_name(self.name(tool)) == self.name(tool)
        return self.name(tool)

    def call(self, tool: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """A model's call of the tool."""
        return self.seen(tool), args


def trip_crew(travel: Travel, script: list[Any]) -> tuple[Crew, ScriptedLLM]:
    llm = ScriptedLLM(script)
    agent = Agent(role="travel agent", goal="Book trips.", backstory="Careful.", llm=llm,
                  mcps=[travel.config], max_iter=10)
    task = Task(description="Book Ada's trip to Paris.", expected_output="What was booked",
                agent=agent)
    return Crew(agents=[agent], tasks=[task]), llm


@pytest.fixture
def world(tmp_path: Path) -> Path:
    path = tmp_path / "world.db"
    TravelWorld(str(path)).close()
    return path


def test_pairs_from_the_server_and_compensation_through_it(world: Path) -> None:
    travel = Travel(world, "book_hotel=permanent")
    crew, llm = trip_crew(travel, [[travel.call("book_flight", FLIGHT)],
                                   [travel.call("book_hotel", HOTEL)], "No hotel; sorry."])
    eng = engine()
    enable_rac(crew, eng)

    crew.kickoff()

    assert eng.registry.pairs[travel.name("book_flight")].tool == travel.name("cancel_flight")
    assert ledger(world) == FLIGHT_UNDONE
    [report] = told(llm, travel.seen("book_hotel"))
    assert "book_hotel failed" in report and "not available" in report
    assert f"via {travel.name('cancel_flight')}" in report and "world is back" in report
    assert "travel_book_hotel failed" in report and "/" not in report and "<path>" not in report
    [run] = runs_of(eng)
    assert run.status is RunStatus.COMPENSATED
    records = eng.store.get_records(run.run_id)
    assert [(r.tool, r.kind, r.agent_id) for r in records] == [
        (travel.name("book_flight"), RecordKind.ACTION, "travel agent"),
        (travel.name("book_hotel"), RecordKind.ACTION, "travel agent"),
        (travel.name("cancel_flight"), RecordKind.COMPENSATION, "travel agent")]
    assert records[1].status is RecordStatus.FAILED
    assert records[0].result


def test_a_timed_out_booking_is_looked_up_not_repeated(world: Path) -> None:
    # The server books the flight and never answers: the call times out. CrewAI's client
    # would repeat it (a second flight); under RAC it makes one attempt, and RAC looks the
    # booking up with find_flights (declared in the server's metadata) before deciding.
    travel = Travel(world, "book_flight=hang@afterx1", "book_hotel=permanent")
    crew, llm = trip_crew(travel, [[travel.call("book_flight", FLIGHT)],
                                   [travel.call("book_hotel", HOTEL)], "No hotel; sorry."])
    eng = engine()
    enable_rac(crew, eng, mcp_timeout=2)

    crew.kickoff()

    assert ledger(world) == FLIGHT_UNDONE
    [flight] = told(llm, travel.seen("book_flight"))
    assert "FL-101" in flight  # the agent is told the booking the lookup found
    [report] = told(llm, travel.seen("book_hotel"))
    assert f"via {travel.name('cancel_flight')}" in report and "world is back" in report
    assert only_run(eng).status is RunStatus.COMPENSATED


def test_a_lost_connection_is_ambiguous_and_reconciled(world: Path) -> None:
    # The server books the flight, then its process dies with the request outstanding.
    travel = Travel(world, "book_flight=crash@afterx1", "book_hotel=permanent")
    crew, llm = trip_crew(travel, [[travel.call("book_flight", FLIGHT)],
                                   [travel.call("book_hotel", HOTEL)], "No hotel; sorry."])
    eng = engine()
    enable_rac(crew, eng)

    crew.kickoff()

    assert ledger(world) == FLIGHT_UNDONE
    assert only_run(eng).status is RunStatus.COMPENSATED


@pytest.mark.parametrize("trusted", [False, True])
def test_a_read_only_claim_is_believed_only_from_a_trusted_server(world: Path,
                                                                  trusted: bool) -> None:
    travel = Travel(world, "book_hotel=permanent")
    crew, llm = trip_crew(travel, [[travel.call("search_flights", {"origin": "LHR",
                                                                    "dest": "CDG"})],
                                   [travel.call("book_hotel", HOTEL)], "No hotel; sorry."])
    eng = engine()
    enable_rac(crew, eng, trusted_mcp=[travel.config] if trusted else [])

    crew.kickoff()

    search = travel.name("search_flights")
    [report] = told(llm, travel.seen("book_hotel"))
    [run] = runs_of(eng)
    if trusted:
        assert search in eng.registry.read_only
        assert run.status is RunStatus.COMPENSATED and "world is back" in report
    else:  # protected like any side effect with no undo: never "the world is back"
        assert search not in eng.registry.read_only
        assert run.status is RunStatus.NEEDS_ATTENTION
        assert "world is back" not in report and search in report


def test_a_compensator_the_tool_filter_hides_is_a_clear_error_before_any_call(
        world: Path) -> None:
    travel = Travel(world)
    travel.config.tool_filter = lambda tool: tool["original_name"] != "cancel_flight"
    crew, llm = trip_crew(travel, [[travel.call("book_flight", FLIGHT)], "booked"])
    enable_rac(crew, engine())

    with pytest.raises(rac.ConfigurationError, match="cancel_flight"):
        crew.kickoff()

    assert ledger(world) == []


def test_a_server_is_listed_once_per_engine_not_once_per_task(world: Path) -> None:
    # CrewAI resolves mcps for every task; RAC reads the server's declarations the first time.
    travel = Travel(world, "book_hotel=permanent")
    llm = ScriptedLLM([[travel.call("book_flight", FLIGHT)], "flight booked",
                       [travel.call("book_hotel", HOTEL)], "no hotel"])
    agent = Agent(role="travel agent", goal="Book trips.", backstory="Careful.", llm=llm,
                  mcps=[travel.config], max_iter=10)
    tasks = [Task(description=f"Book Ada's {what}.", expected_output="x", agent=agent)
             for what in ("flight", "hotel")]
    crew = Crew(agents=[agent], tasks=tasks)
    # A pair declared in code keeps its place (the server's is not registered for that tool).
    eng = engine(compensations={travel.name("book_car"): travel.name("cancel_car")})
    enable_rac(crew, eng)

    with capture_logs() as events:
        crew.kickoff()

    assert [e["server"] for e in events if e["event"] == "rac.mcp.registered"] == [
        travel.server]
    assert ledger(world) == FLIGHT_UNDONE
    assert f"via {travel.name('cancel_flight')}" in told(llm, travel.seen("book_hotel"))[0]


def test_two_copies_of_one_server_are_two_systems_named_apart(world: Path,
                                                               tmp_path: Path) -> None:
    # Both servers declare the name "travel": the second one's tools are travel_2_*, and each
    # booking is undone through its own server.
    other = tmp_path / "other.db"
    TravelWorld(str(other)).close()
    first, second = Travel(world), Travel(other, "book_hotel=permanent", server="travel_2")
    llm = ScriptedLLM([[first.call("book_flight", FLIGHT)],
                       [second.call("book_flight", FLIGHT)],
                       [second.call("book_hotel", HOTEL)], "No hotel; sorry."])
    agent = Agent(role="travel agent", goal="Book trips.", backstory="Careful.", llm=llm,
                  mcps=[first.config, second.config], max_iter=10)
    task = Task(description="Book Ada's trip.", expected_output="x", agent=agent)
    eng = engine()
    enable_rac(Crew(agents=[agent], tasks=[task]), eng).kickoff()

    assert ledger(world) == FLIGHT_UNDONE and ledger(other) == FLIGHT_UNDONE
    [report] = told(llm, second.seen("book_hotel"))
    assert f"via {first.name('cancel_flight')}" in report
    assert f"via {second.name('cancel_flight')}" in report and "world is back" in report
    assert only_run(eng).status is RunStatus.COMPENSATED


def test_a_name_the_user_gives_a_server_names_its_tools_and_trusts_it(world: Path) -> None:
    travel = Travel(world, "book_hotel=permanent", server="airline")
    crew, llm = trip_crew(travel, [[travel.call("search_flights", {"origin": "LHR",
                                                                    "dest": "CDG"})],
                                   [travel.call("book_hotel", HOTEL)], "No hotel; sorry."])
    eng = engine()
    enable_rac(crew, eng, mcp_names={"airline": travel.config}, trusted_mcp=["airline"])

    crew.kickoff()

    assert travel.name("search_flights") in eng.registry.read_only
    [report] = told(llm, travel.seen("book_hotel"))
    assert "airline_book_hotel failed" in report and "world is back" in report


def test_a_server_cannot_be_trusted_by_the_name_it_declares(world: Path) -> None:
    travel = Travel(world, "book_hotel=permanent")
    crew, llm = trip_crew(travel, [[travel.call("book_hotel", HOTEL)], "No hotel; sorry."])
    eng = engine()
    enable_rac(crew, eng, trusted_mcp=["travel"])

    crew.kickoff()

    assert travel.name("search_flights") not in eng.registry.read_only


def test_a_server_name_is_a_tool_name_prefix_or_a_clear_error(world: Path) -> None:
    travel = Travel(world)
    crew, _ = trip_crew(travel, [])
    with pytest.raises(rac.ConfigurationError, match="lowercase.*'my_server'"):
        enable_rac(crew, engine(), mcp_names={"My Server": travel.config})


def test_a_server_rac_cannot_list_is_a_clear_error_naming_the_real_cause(
        world: Path, tmp_path: Path) -> None:
    # The server answers CrewAI's listing, then every later start exits before answering:
    # RAC's own listing fails. kickoff() says so with the cause, not with anyio's "unhandled
    # errors in a TaskGroup (1 sub-exception)", and nothing is called.
    wrapper = server_once(tmp_path)
    travel = Travel(world)
    travel.config = MCPServerStdio(command=sys.executable,
                                   args=[str(wrapper), "--world", str(world)])
    crew, llm = trip_crew(travel, [[travel.call("book_flight", FLIGHT)], "booked"])
    eng = engine()
    enable_rac(crew, eng, mcp_names={"travel": travel.config})

    with pytest.raises(rac.ConfigurationError) as failed:
        crew.kickoff()

    message = str(failed.value)
    assert "MCP server 'travel'" in message and closed_connection(message), message
    assert "TaskGroup" not in message
    assert ledger(world) == [] and llm.seen == []
