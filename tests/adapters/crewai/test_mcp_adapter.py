"""Tools of crewai-tools' ``MCPServerAdapter`` (and of mcpadapt's own ``CrewAIAdapter``) under
RAC, against the example MCP server run as a subprocess over stdio.

Those tools hand CrewAI only the text of the server's answer, also of an ``isError`` answer,
and drop ``_meta``: RAC calls them through the adapter's own session, so a refused booking is
a failure (not a ``completed`` call with an error text) and the pairs come from the server."""

from __future__ import annotations

import asyncio
import logging
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from crewai import Agent, Crew, Task
from crewai.tools import BaseTool
from crewai_tools import MCPServerAdapter
from crewai_tools.adapters.mcp_adapter import CrewAIToolAdapter
from mcp import StdioServerParameters
from mcpadapt.core import MCPAdapt
from mcpadapt.crewai_adapter import CrewAIAdapter
from structlog.testing import capture_logs

import rac
from rac.models import RecordKind, RecordStatus, RunStatus
from rac.testing import TravelWorld
from rac_crewai import enable_rac
from rac_crewai.mcp_adapter import server_label
from rac_crewai.mcp_tools import server_name
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


def params(world: Path, *faults: str) -> StdioServerParameters:
    args = [MCP_SERVER, "--world", str(world)]
    for fault in faults:
        args += ["--fail", fault]
    return StdioServerParameters(command=sys.executable, args=args)


@contextmanager
def served(world: Path, *faults: str, maker: str = "crewai-tools",
           only: tuple[str, ...] = ()) -> Iterator[list[BaseTool]]:
    """The example server's tools as crewai-tools' ``MCPServerAdapter`` (or mcpadapt's
    ``MCPAdapt`` with its ``CrewAIAdapter``) gives them, the server running meanwhile."""
    if maker == "crewai-tools":
        with MCPServerAdapter(params(world, *faults), *only) as tools:
            yield list(tools)
    else:
        with MCPAdapt(params(world, *faults), CrewAIAdapter()) as tools:
            yield list(tools)


def trip_crew(tools: list[BaseTool], script: list[Any]) -> tuple[Crew, ScriptedLLM]:
    llm = ScriptedLLM(script)
    agent = Agent(role="travel agent", goal="Book trips.", backstory="Careful.", llm=llm,
                  tools=tools, max_iter=10)
    task = Task(description="Book Ada's trip to Paris.", expected_output="What was booked",
                agent=agent)
    return Crew(agents=[agent], tasks=[task]), llm


TRIP = [[("book_flight", FLIGHT)], [("book_hotel", HOTEL)], "No hotel; sorry."]
#: Two attempts, no wait: a call that cannot reach its server gives up quickly.
TWO_TRIES = rac.RetryPolicy(max_attempts=2, initial_delay=0, jitter=0)
#: Seconds a server may take to start and answer: generous, as a loaded machine needs.
SERVER_START = 60


def enabled_trip(tools: list[BaseTool], script: list[Any] = TRIP, *,
                 eng: rac.RAC | None = None, **enable: Any) -> tuple[Crew, ScriptedLLM, rac.RAC]:
    """A one-task crew of ``tools`` under RAC (``eng``, else a new engine; ``enable``:
    keywords of ``enable_rac``), with the model that plays ``script`` and its engine."""
    crew, llm = trip_crew(tools, script)
    eng = eng or engine()
    enable_rac(crew, eng, **enable)
    return crew, llm, eng


def assert_flight_named_live(world: Path, llm: ScriptedLLM, eng: rac.RAC) -> str:
    """The flight is booked, and the agent was told it may have happened, never that the
    world is back; the run needs a person. Returns what the agent was told."""
    assert ledger(world) == [("book_flight", "book")]
    [report] = told(llm, "book_flight")
    assert "book_flight (MAY HAVE HAPPENED" in report and "world is back" not in report
    assert only_run(eng).status is RunStatus.NEEDS_ATTENTION
    return report


@pytest.fixture
def world(tmp_path: Path) -> Path:
    path = tmp_path / "world.db"
    TravelWorld(str(path)).close()
    return path


@pytest.mark.parametrize("maker", ["crewai-tools", "mcpadapt"])
def test_an_error_answer_is_a_failure_and_the_servers_pair_undoes_the_flight(
        world: Path, maker: str) -> None:
    with served(world, "book_hotel=permanent", maker=maker) as tools:
        crew, llm, eng = enabled_trip(tools)

        crew.kickoff()

    assert eng.registry.pairs["book_flight"].tool == "cancel_flight"
    assert ledger(world) == FLIGHT_UNDONE
    [run] = runs_of(eng)
    assert run.status is RunStatus.COMPENSATED
    records = eng.store.get_records(run.run_id)
    assert [(r.tool, r.kind, r.status) for r in records] == [
        ("book_flight", RecordKind.ACTION, RecordStatus.COMPENSATED),
        ("book_hotel", RecordKind.ACTION, RecordStatus.FAILED),
        ("cancel_flight", RecordKind.COMPENSATION, RecordStatus.COMPLETED)]
    [report] = told(llm, "book_hotel")
    assert "book_hotel failed" in report and "not available" in report
    assert "via cancel_flight" in report and "world is back" in report


def test_the_agent_reads_the_text_the_adapter_gives(world: Path) -> None:
    search = {"origin": "LHR", "dest": "CDG"}
    with served(world) as tools:
        by_name = {t.name: t for t in tools}
        direct = by_name["search_flights"].run(**search)  # the adapter's own rendering
        script = [[("search_flights", search)], [("book_flight", FLIGHT)], "Booked."]
        crew, llm, eng = enabled_trip(tools, script)

        crew.kickoff()

    assert told(llm, "search_flights") == [direct]
    [flight] = told(llm, "book_flight")
    assert '"booking_id": "FL-101"' in flight
    assert ledger(world) == [("book_flight", "book")]
    assert only_run(eng).status is RunStatus.COMPLETED


@pytest.mark.parametrize("kickoff", ["sync", "async"])
def test_a_crashed_server_is_reached_on_a_new_connection_to_settle_and_undo(
        world: Path, kickoff: str) -> None:
    # The server books the flight, then its process dies with the request outstanding: the
    # call may have happened. The adapter's connection is gone for good; RAC looks the
    # booking up, and later cancels it, on connections of their own to the same server.
    with served(world, "book_flight=crash@afterx1", "book_hotel=permanent") as tools:
        crew, llm, eng = enabled_trip(tools)

        with capture_logs() as events:
            if kickoff == "sync":
                crew.kickoff()
            else:
                asyncio.run(crew.akickoff())

    assert ledger(world) == FLIGHT_UNDONE
    [flight] = told(llm, "book_flight")
    assert "FL-101" in flight  # the agent is told the booking the lookup found
    [report] = told(llm, "book_hotel")
    assert "via cancel_flight" in report and "world is back" in report
    [run] = runs_of(eng)
    assert run.status is RunStatus.COMPENSATED
    reconnected = [e["tool"] for e in events
                   if e["event"] == "rac_crewai.mcp_adapter.reconnecting"]
    assert reconnected[:1] == ["find_flights"] and "cancel_flight" in reconnected


def test_a_hung_server_leaves_the_booking_named_as_possibly_live(world: Path) -> None:
    # The server books the flight and never answers; a hung process answers no lookup either.
    # RAC cannot tell whether the flight exists: never "the world is back".
    with served(world, "book_flight=hang@afterx1") as tools:
        crew, llm, eng = enabled_trip(tools, [[("book_flight", FLIGHT)], "Stopped."],
                                      mcp_timeout=1)

        crew.kickoff()

    assert "ambiguous" in assert_flight_named_live(world, llm, eng)


@pytest.mark.parametrize("trusted", ["no", "params", "adapter", "name"])
def test_a_read_only_claim_is_believed_only_from_a_trusted_server(world: Path,
                                                                  trusted: str) -> None:
    server = params(world, "book_hotel=permanent")
    adapter = MCPServerAdapter(server)
    try:
        refs = {"no": [], "params": [server], "adapter": [adapter],
                "name": [server_name(server)]}
        crew, llm, eng = enabled_trip(list(adapter.tools), [
            [("search_flights", {"origin": "LHR", "dest": "CDG"})],
            [("book_hotel", HOTEL)], "No hotel; sorry."], trusted_mcp=refs[trusted])

        crew.kickoff()
    finally:
        adapter.stop()

    [report] = told(llm, "book_hotel")
    [run] = runs_of(eng)
    if trusted != "no":
        assert "search_flights" in eng.registry.read_only
        assert run.status is RunStatus.COMPENSATED and "world is back" in report
    else:  # protected like any side effect with no undo: never "the world is back"
        assert "search_flights" not in eng.registry.read_only
        assert run.status is RunStatus.NEEDS_ATTENTION
        assert "world is back" not in report and "search_flights" in report


def test_a_compensator_the_adapter_filters_out_is_a_clear_error_before_any_call(
        world: Path) -> None:
    with served(world, only=("book_flight", "book_hotel")) as tools:
        crew, _ = trip_crew(tools, [[("book_flight", FLIGHT)], "booked"])

        with pytest.raises(rac.ConfigurationError, match="cancel_flight"):
            enable_rac(crew, engine())

    assert ledger(world) == []


def test_an_adapter_tool_rac_cannot_read_is_refused_not_trusted(world: Path) -> None:
    # A CrewAIMCPTool whose call function is not mcpadapt's (another crewai-tools version):
    # its error answers would reach RAC as text, so RAC refuses to guard it blindly.
    from mcp.types import CallToolResult, TextContent, Tool

    def call(args: dict[str, Any] | None) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text="booked")], isError=False)

    listed = Tool(name="book_flight", inputSchema={
        "type": "object", "properties": {k: {"type": "string"} for k in FLIGHT},
        "required": list(FLIGHT)})
    tool = CrewAIToolAdapter().adapt(call, listed)
    crew, _ = trip_crew([tool], [[("book_flight", FLIGHT)], "booked"])

    with pytest.raises(rac.ConfigurationError, match="MCPServerAdapter"):
        enable_rac(crew, engine(compensations={"book_flight": "cancel_flight"}))


def test_a_server_is_listed_once_per_engine(world: Path) -> None:
    with served(world, "book_hotel=permanent") as tools:
        eng = engine()
        with capture_logs() as events:
            for script in ([[("book_flight", FLIGHT)], "booked"], TRIP[1:]):
                crew, _ = trip_crew(tools, script)
                enable_rac(crew, eng)
                crew.kickoff()

    assert [e["event"] for e in events].count("rac.mcp.registered") == 1
    # The second run's one booking failed: nothing of it is live (the first run's flight is).
    assert [str(r.status) for r in runs_of(eng)] == ["completed", "compensated"]
    assert ledger(world) == [("book_flight", "book")]


def test_parallel_calls_of_one_turn_through_the_adapter_are_one_batch(world: Path) -> None:
    with served(world, "book_hotel=permanent") as tools:
        crew, llm, eng = enabled_trip(tools, [[("book_flight", FLIGHT), ("book_hotel", HOTEL)],
                                              "No hotel; sorry."])

        crew.kickoff()

    assert ledger(world) == FLIGHT_UNDONE
    [run] = runs_of(eng)
    assert run.status is RunStatus.COMPENSATED
    assert "world is back" in told(llm, "book_hotel")[0]


def test_an_async_kickoff_undoes_through_the_adapter(world: Path) -> None:
    with served(world, "book_hotel=permanent") as tools:
        crew, llm, eng = enabled_trip(tools)

        asyncio.run(crew.akickoff())

    assert ledger(world) == FLIGHT_UNDONE
    assert only_run(eng).status is RunStatus.COMPENSATED


def test_server_names_of_the_adapters_parameters_match_crewais(world: Path) -> None:
    from crewai.mcp import MCPServerHTTP, MCPServerSSE, MCPServerStdio

    server = params(world)
    assert server_name(server) == server_name(MCPServerStdio(command=server.command,
                                                             args=list(server.args)))
    url = "http://127.0.0.1:8000/mcp"
    assert server_name({"url": url, "transport": "streamable-http"}) == server_name(
        MCPServerHTTP(url=url))
    assert server_name({"url": url}) == server_name(MCPServerSSE(url=url))
    with pytest.raises(rac.ConfigurationError, match="cannot tell which MCP server"):
        server_name(42)


def test_an_adapter_whose_server_is_gone_is_a_clear_error_when_enabling(world: Path) -> None:
    with served(world) as tools:
        pass  # the adapter is stopped: its session and loop are closed
    crew, _ = trip_crew(tools, [[("book_flight", FLIGHT)], "booked"])

    with pytest.raises(rac.ConfigurationError, match="listing them over the MCPServerAdapter"):
        enable_rac(crew, engine())

    assert ledger(world) == []


STRICT = str(Path(__file__).with_name("strict_mcp_server.py"))


def strict(ledger_file: Path) -> StdioServerParameters:
    """The strict server (arguments checked against its schemas), writing to ``ledger_file``."""
    return StdioServerParameters(command=sys.executable, args=[STRICT, str(ledger_file)])


@pytest.mark.parametrize(("maker", "booked"), [("mcpadapt", True), ("crewai-tools", False)])
def test_arguments_are_sent_as_the_adapter_sends_them(tmp_path: Path, maker: str,
                                                      booked: bool) -> None:
    # mcpadapt leaves out an optional argument the model did not give (a None its schema does
    # not allow); crewai-tools sends it as null, which the strict server refuses. Under RAC
    # each behaves as it does alone: RAC must not turn a working call into a failure.
    seats = tmp_path / "seats.txt"
    params_ = strict(seats)
    with (MCPAdapt(params_, CrewAIAdapter()) if maker == "mcpadapt"
          else MCPServerAdapter(params_)) as tools:
        alone = {t.name: t for t in tools}["book_seat"].run(who="Bo")
        crew, llm, eng = enabled_trip(list(tools), [[("book_seat", {"who": "Ada"})], "Done."])

        crew.kickoff()

    assert ("SEAT-1" in alone) is booked
    [answer] = told(llm, "book_seat")
    records = eng.store.get_records(only_run(eng).run_id)
    if booked:
        assert seats.read_text().split() == ["book_seat", "book_seat"]
        assert "SEAT-1" in answer and records[0].status is RecordStatus.COMPLETED
    else:
        assert not seats.exists()  # refused before the tool ran, alone and under RAC
        assert "Input validation error" in answer and "Input validation error" in alone
        # An isError answer is no evidence that nothing happened (issue 25): the call is
        # never repeated, and it stays named as possibly made, not failed.
        assert records[0].status is RecordStatus.COMPENSATION_FAILED
        assert seats.exists() is False


def test_two_servers_of_one_adapter_are_each_called_and_undone_through_their_own(
        world: Path, tmp_path: Path) -> None:
    seats = tmp_path / "seats.txt"
    travel = params(world, "book_hotel=permanent")
    with MCPAdapt([strict(seats), travel], CrewAIAdapter()) as tools:
        crew, llm, eng = enabled_trip(list(tools), [[("book_seat", {"who": "Ada"})],
                                            [("book_flight", FLIGHT)], [("book_hotel", HOTEL)],
                                            "No hotel; sorry."])

        crew.kickoff()

    assert eng.registry.pairs["book_seat"].tool == "cancel_seat"
    assert eng.registry.pairs["book_flight"].tool == "cancel_flight"
    assert seats.read_text().split() == ["book_seat", "cancel_seat"]
    assert ledger(world) == FLIGHT_UNDONE
    assert only_run(eng).status is RunStatus.COMPENSATED
    assert "world is back" in told(llm, "book_hotel")[0]


@pytest.mark.parametrize("named", [False, True], ids=["unnamed", "mcp_names"])
def test_a_server_that_does_not_come_back_leaves_the_booking_named(world: Path, tmp_path: Path,
                                                                   named: bool) -> None:
    # The server crashes after booking, and every later start of it exits before answering:
    # RAC's connection of its own fails, and the flight, which it could neither look up nor
    # cancel, is named as possibly live. (Later starts exit rather than hang, so that nothing
    # waits on a timeout: the first start gets a bound generous enough for a loaded machine.)
    # The report names the server by a short name (the one mcp_names gives, else its
    # script's), with the real cause: never by its command line, which holds the checkout's,
    # the interpreter's and the world file's paths.
    wrapper = server_once(tmp_path)
    once = StdioServerParameters(command=sys.executable, args=[
        str(wrapper), "--world", str(world), "--fail", "book_flight=crash@afterx1"])
    with MCPServerAdapter(once, connect_timeout=SERVER_START) as tools:
        crew, llm, eng = enabled_trip(list(tools), [[("book_flight", FLIGHT)], "Stopped."],
                                      eng=engine(retry=TWO_TRIES),
                                      **({"mcp_names": {"travel": once}} if named else {}))

        answer = str(crew.kickoff().raw)

    report = assert_flight_named_live(world, llm, eng)
    server = "travel" if named else "server_once"
    assert f"could not connect again to MCP server {server!r}" in report, report
    assert closed_connection(report) and "TaskGroup" not in report, report
    read = answer + "".join(str(m.get("content")) for seen in llm.seen for m in seen)
    for path in (str(tmp_path), sys.executable, str(Path(MCP_SERVER).parents[1])):
        assert path not in read, (path, report)


def test_after_the_adapter_stopped_calls_reach_the_server_on_connections_of_their_own(
        world: Path) -> None:
    # The crew runs after the adapter's `with` block closed its session and event loop: each
    # call (the bookings and the cancel) is made on a connection opened for it.
    with served(world, "book_hotel=permanent") as tools:
        crew, llm, eng = enabled_trip(tools)

    with capture_logs() as events:
        crew.kickoff()

    assert ledger(world) == FLIGHT_UNDONE
    assert only_run(eng).status is RunStatus.COMPENSATED
    # Each booking's lookup matches on its arguments, so RAC asks it right before the call
    # (the snapshot a found booking is told apart from an earlier one by); the hotel's isError
    # answer may have come after a booking (issue 25): RAC asks the lookup again, which shows
    # none, before it rolls back.
    assert [e["tool"] for e in events if e["event"] == "rac_crewai.mcp_adapter.reconnecting"
            ] == ["find_flights", "book_flight", "find_hotels", "book_hotel", "find_hotels",
                  "cancel_flight"]


@contextmanager
def http_server(world: Path, *faults: str) -> Iterator[dict[str, str]]:
    """The example server over streamable HTTP on a free loopback port, as the adapter's
    ``{"url": ..., "transport": ...}`` dict; stopped at the end."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = [sys.executable, MCP_SERVER, "--world", str(world), "--http", str(port)]
    for fault in faults:
        args += ["--fail", fault]
    proc = subprocess.Popen(args)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the HTTP server did not start: {args}") from None
                time.sleep(0.1)
        yield {"url": f"http://127.0.0.1:{port}/mcp", "transport": "streamable-http"}
    finally:
        proc.kill()
        proc.wait()


def test_an_http_server_pairs_and_undo_through_the_adapter(world: Path) -> None:
    with http_server(world, "book_hotel=permanent") as spec, MCPServerAdapter(spec) as tools:
        crew, llm, eng = enabled_trip(list(tools), trusted_mcp=[spec])

        crew.kickoff()

    assert eng.registry.pairs["book_flight"].tool == "cancel_flight"
    assert "search_flights" in eng.registry.read_only  # trusted by its dict
    assert ledger(world) == FLIGHT_UNDONE
    assert only_run(eng).status is RunStatus.COMPENSATED
    assert "world is back" in told(llm, "book_hotel")[0]


# mcpadapt's own thread dies with the server (its loop catches only CancelledError): RAC then
# makes calls on connections of its own, which find no server either.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_an_http_server_that_dies_leaves_the_booking_named(world: Path) -> None:
    # An HTTP server is not started by the client: once it dies, no new connection reaches
    # it, and the flight it may have booked is named as possibly live.
    with http_server(world, "book_flight=crash@afterx1") as spec, \
            MCPServerAdapter(spec) as tools:
        crew, llm, eng = enabled_trip(list(tools), [[("book_flight", FLIGHT)], "Stopped."],
                                      eng=engine(retry=TWO_TRIES), mcp_timeout=2)

        crew.kickoff()

    assert_flight_named_live(world, llm, eng)


@pytest.mark.parametrize("named", [False, True], ids=["unnamed", "mcp_names"])
def test_the_log_names_the_adapters_server_without_its_command_line(
        world: Path, named: bool, caplog: pytest.LogCaptureFixture) -> None:
    # The refused hotel's record, and RAC's events, name the server as the user named it
    # (mcp_names=), else by its script's name: never by its command line, which holds the
    # checkout's and the world file's paths.
    caplog.set_level(logging.INFO)
    server = params(world, "book_hotel=permanent")
    with MCPServerAdapter(server) as tools:
        crew, llm, eng = enabled_trip(list(tools),
                                      **({"mcp_names": {"travel": server}} if named else {}))

        crew.kickoff()

    expected = "travel" if named else "mcp_travel_server"
    [run] = runs_of(eng)
    hotel = next(r for r in eng.store.get_records(run.run_id) if r.tool == "book_hotel")
    assert hotel.result["details"]["server"] == expected, hotel.result
    assert ledger(world) == FLIGHT_UNDONE
    assert f"server='{expected}'" in caplog.text
    assert str(world) not in caplog.text + str(hotel.result) + "".join(told(llm, "book_hotel"))


def test_an_adapter_server_is_labelled_without_paths() -> None:
    assert server_label(StdioServerParameters(
        command="/usr/bin/python3", args=["-m", "rac.demo.mcp_travel_server", "--world",
                                          "/tmp/w.db"])) == "mcp_travel_server"
    assert server_label(StdioServerParameters(
        command="npx", args=["-y", "@modelcontextprotocol/server-filesystem", "/home/ada"])
    ) == "server_filesystem"
    assert server_label(StdioServerParameters(command="/opt/bin/mcp-server-time")) == \
        "mcp_server_time"
    assert server_label({"url": "http://127.0.0.1:8000/mcp", "transport": "streamable-http"}
                        ) == "127_0_0_1"
