"""A ``@persist`` Flow of two crews (the flight, then the hotel) over a travel world file and a
SQLite log, run by the persisted-Flow tests in a child process that dies between the crews, and
again in the test's process to resume it."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from crewai import Agent, Crew, Task
from crewai.flow.flow import Flow, listen, start
from crewai.flow.persistence import SQLiteFlowPersistence, persist

import rac
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld, VirtualClock
from rac_crewai import enable_rac
from rac_crewai.testing import ScriptedLLM, world_tools

#: The exit code of the child that died.
CRASHED = 86
#: The id of the Flow's persisted state.
STATE = "trip-ann"
PAR = {"passenger": "ann", "origin": "SFO", "dest": "PAR"}
HOTEL = {"guest": "ann", "city": "PAR", "nights": 2}


def build(world_path: Path, log: Path, saved: Path, *, crash: bool,
          hotel_fails: bool = False) -> tuple[Flow[Any], rac.RAC, ScriptedLLM, ScriptedLLM]:
    """The Flow, enabled on an engine over ``log``, its state persisted in ``saved``; with
    ``crash``, the process dies when the hotels method starts."""
    world = TravelWorld(str(world_path))
    if hotel_fails:
        world.fail("book_hotel", "permanent", message="hotel full")
    f_llm = ScriptedLLM([[("book_flight", PAR)], "flight booked"])
    h_llm = ScriptedLLM([[("book_hotel", HOTEL)], "hotel booked"])

    def crew(llm: ScriptedLLM, role: str, *names: str) -> Crew:
        agent = Agent(role=role, goal="g", backstory="b", llm=llm,
                      tools=world_tools(world, *names))
        return Crew(agents=[agent], tasks=[Task(description=f"{role}: book",
                                                expected_output="x", agent=agent)])

    flights = crew(f_llm, "flights agent", "book_flight", "cancel_flight")
    hotels = crew(h_llm, "hotels agent", "book_hotel", "cancel_hotel")

    @persist(SQLiteFlowPersistence(str(saved)))
    class TripFlow(Flow):  # type: ignore[type-arg]
        @start()
        def flights(self) -> str:
            return str(flights.kickoff().raw)

        @listen(flights)
        def hotels(self, flight: str) -> str:
            if crash:
                os._exit(CRASHED)  # the process dies between the two crews
            return str(hotels.kickoff().raw)

    engine = rac.RAC(compensations=TRAVEL_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                     store=f"sqlite:///{log}", clock=VirtualClock(), load_entrypoints=False)
    return enable_rac(TripFlow(), engine), engine, f_llm, h_llm


if __name__ == "__main__":  # the child: run the Flow until it dies
    world_path, log, saved = (Path(a) for a in sys.argv[1:4])
    flow, _, _, _ = build(world_path, log, saved, crash=True)
    flow.kickoff(inputs={"id": STATE})
    sys.exit(0)  # not reached
