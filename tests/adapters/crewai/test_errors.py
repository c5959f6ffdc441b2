"""What a tool's exception group means under RAC: the one error it holds, classified and shown
as itself; a group of several errors stays one unknown error."""

from __future__ import annotations

from typing import Any

from crewai import Agent, Crew, Task
from crewai.tools import tool

from rac.models import RunStatus
from rac.testing import TravelWorld
from rac_crewai import enable_rac
from tests.adapters.crewai.support import ScriptedLLM, engine, runs_of, told, world_tools

PAR = {"passenger": "ann", "origin": "SFO", "dest": "PAR"}
HOTEL = {"guest": "ann", "city": "PAR", "nights": 2}


def trip_with_a_hotel_raising(error: BaseException) -> tuple[Crew, ScriptedLLM, TravelWorld]:
    world = TravelWorld()

    @tool("book_hotel")
    def book_hotel(guest: str, city: str, nights: int) -> Any:
        """Book a hotel room (its client runs in an anyio task group)."""
        raise error

    llm = ScriptedLLM([[("book_flight", PAR)], [("book_hotel", HOTEL)], "no hotel"])
    agent = Agent(role="travel agent", goal="g", backstory="b", llm=llm,
                  tools=[*world_tools(world, "book_flight", "cancel_flight"), book_hotel])
    crew = Crew(agents=[agent], tasks=[Task(description="trip", expected_output="x",
                                            agent=agent)])
    return crew, llm, world


def test_a_group_holding_one_error_is_that_error() -> None:
    refused = ConnectionRefusedError("the hotel service refused the connection")
    crew, llm, world = trip_with_a_hotel_raising(
        ExceptionGroup("unhandled errors in a TaskGroup",
                       [ExceptionGroup("nested", [refused])]))
    eng = engine(compensations={"book_flight": "cancel_flight"})
    enable_rac(crew, eng)

    crew.kickoff()

    [report] = told(llm, "book_hotel")
    assert "refused the connection" in report and "TaskGroup" not in report
    assert "world is back" in report and "MAY HAVE HAPPENED" not in report
    assert world.live() == []
    [run] = runs_of(eng)
    assert run.status is RunStatus.COMPENSATED
    [hotel] = [r for r in eng.store.get_records(run.run_id) if r.tool == "book_hotel"]
    assert "refused the connection" in str(hotel.error)


def test_a_group_of_several_errors_is_never_taken_for_one_that_did_not_happen() -> None:
    crew, llm, world = trip_with_a_hotel_raising(
        ExceptionGroup("unhandled errors in a TaskGroup",
                       [ConnectionRefusedError("refused"), TimeoutError("timed out")]))
    eng = engine(compensations={"book_flight": "cancel_flight"})
    enable_rac(crew, eng)

    crew.kickoff()

    [report] = told(llm, "book_hotel")
    assert "world is back" not in report and "MAY HAVE HAPPENED" in report
    [run] = runs_of(eng)
    assert run.status is RunStatus.NEEDS_ATTENTION
