"""``Crew(cache=True)`` under RAC: CrewAI's tool cache never answers with a read made before
a rollback, and never replays a side effect."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from crewai import Agent, Crew, Task
from crewai.tools import tool

from rac.testing import TravelWorld
from rac_crewai import enable_rac, enable_rac_for_agent
from tests.adapters.crewai.support import ScriptedLLM, engine, runs_of, told, world_tools

PAR = {"passenger": "ann", "origin": "SFO", "dest": "PAR"}
HOTEL = {"guest": "ann", "city": "PAR", "nights": 2}
LOOK = {"booking_id": "FL-101"}
SCRIPT: list[Any] = [[("book_flight", PAR)], [("get_booking", LOOK)], [("book_hotel", HOTEL)],
                     [("get_booking", LOOK)], "The flight is cancelled; no hotel."]


def cached_crew(world: TravelWorld) -> tuple[Crew, Agent, ScriptedLLM]:
    llm = ScriptedLLM(list(SCRIPT))
    agent = Agent(role="travel agent", goal="g", backstory="b", llm=llm,
                  tools=[*world_tools(world, "book_flight", "cancel_flight", "book_hotel",
                                      "cancel_hotel"), tool("get_booking")(world.get_booking)])
    task = Task(description="Book ann's trip", expected_output="x", agent=agent)
    return Crew(agents=[agent], tasks=[task], cache=True), agent, llm


@pytest.mark.parametrize("how", ["kickoff", "akickoff", "agent kickoff"])
def test_a_read_cached_before_a_rollback_is_not_served_after_it(how: str) -> None:
    world = TravelWorld()
    world.fail("book_hotel", "permanent", message="hotel full")
    crew, agent, llm = cached_crew(world)
    eng = engine(read_only=["get_booking"])
    if how == "agent kickoff":
        enable_rac_for_agent(agent, eng)
        agent.kickoff("Book ann's trip")
    else:
        enable_rac(crew, eng)
        asyncio.run(crew.akickoff()) if how == "akickoff" else crew.kickoff()

    assert world.calls["get_booking"] == 2  # the second read went to the world
    before, after = told(llm, "get_booking")
    assert "'status': 'live'" in before or '"status": "live"' in before
    assert "live" not in after and "cancelled" in after
    assert "via cancel_flight" in told(llm, "book_hotel")[0]
    assert world.live() == []
    [run] = runs_of(eng)
    assert [r.tool for r in eng.store.get_records(run.run_id)].count("get_booking") == 2


def test_a_read_repeated_with_no_rollback_between_is_still_served_from_the_cache() -> None:
    world = TravelWorld()
    crew, _, llm = cached_crew(world)
    llm.script[:] = [[("book_flight", PAR)], [("get_booking", LOOK)], [("get_booking", LOOK)],
                     "booked"]
    enable_rac(crew, engine(read_only=["get_booking"]))

    crew.kickoff()

    assert world.calls["get_booking"] == 1
    assert told(llm, "get_booking")[0] == told(llm, "get_booking")[1]


def side_effect_keys(crew: Crew) -> list[str]:
    """The entries of the crew's tool cache for tools that are not read-only."""
    return [k for k in crew._cache_handler._cache if not k.startswith("get_booking-")]


def test_the_cache_never_stands_in_for_a_side_effect_nor_holds_a_compensations_call() -> None:
    # The crew's cache holds answers for the exact calls of this run's booking and of the
    # rollback's compensation (as an earlier kickoff, before enable_rac, could have left
    # them). Neither answers: the booking, the compensation and the model's own later cancel
    # reach the world and are logged, and the compensation's call leaves nothing in the cache
    # for the model's identical call after it.
    world = TravelWorld()
    world.fail("book_hotel", "permanent", message="hotel full")
    crew, _, llm = cached_crew(world)
    cancel = {"booking_id": "FL-101"}
    llm.script[:] = [[("book_flight", PAR)], [("get_booking", LOOK)], [("book_hotel", HOTEL)],
                     [("cancel_flight", cancel)], [("get_booking", LOOK)], "nothing booked"]
    crew._cache_handler.add(tool="book_flight", input=json.dumps(PAR),
                            output={"booking_id": "FL-900", "cached": True})
    crew._cache_handler.add(tool="cancel_flight", input=json.dumps(cancel),
                            output={"booking_id": "FL-101", "cancelled": True, "cached": True})
    eng = engine(read_only=["get_booking"])
    enable_rac(crew, eng)

    crew.kickoff()

    assert world.calls["book_flight"] == 1 and "FL-101" in told(llm, "book_flight")[0]
    assert [e for t, b, e in world.ledger() if t == "cancel_flight"] == ["cancel", "cancel"]
    assert "cached" not in told(llm, "cancel_flight")[0]
    assert "cancelled" in told(llm, "get_booking")[1]
    [run] = runs_of(eng)
    assert [(r.tool, str(r.kind)) for r in eng.store.get_records(run.run_id)] == [
        ("book_flight", "action"), ("get_booking", "action"), ("book_hotel", "action"),
        ("cancel_flight", "compensation"), ("cancel_flight", "action"),
        ("get_booking", "action")]
    assert side_effect_keys(crew) == []
