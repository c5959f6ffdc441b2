"""CrewAI's own limits and entry points under RAC: usage budgets, agents used alone, run ids."""

from __future__ import annotations

from typing import Any

from crewai import Agent, Crew, Task

from rac.models import RecordStatus, RunStatus
from rac.testing import TravelWorld
from rac_crewai import enable_rac
from tests.adapters.crewai.support import ScriptedLLM, engine, runs_of, told, world_tools

PAR = {"passenger": "ann", "origin": "SFO", "dest": "PAR"}
HOTEL = {"guest": "ann", "city": "PAR", "nights": 2}


def travel_crew(world: TravelWorld, script: list[Any], **agent_kw: Any
                ) -> tuple[Crew, Agent, ScriptedLLM]:
    llm = ScriptedLLM(script)
    agent = Agent(role="travel agent", goal="g", backstory="b", llm=llm,
                  tools=agent_kw.pop("tools", None) or world_tools(world), **agent_kw)
    crew = Crew(agents=[agent], tasks=[Task(description="trip", expected_output="x",
                                            agent=agent)])
    return crew, agent, llm


def test_retry_of_a_tool_used_once_does_not_spend_crewais_usage_budget() -> None:
    world = TravelWorld()
    world.fail("book_hotel", "transient", times=1)
    tools = world_tools(world)
    hotel = next(t for t in tools if t.name == "book_hotel")
    hotel.max_usage_count = 1
    crew, _, llm = travel_crew(world, [[("book_flight", PAR)], [("book_hotel", HOTEL)],
                                       [("book_hotel", HOTEL)], "booked"], tools=tools)
    eng = engine()
    enable_rac(crew, eng)

    crew.kickoff()

    # RAC's second attempt is not a use: the trip stands, booked once each.
    assert sorted(b["kind"] for b in world.live()) == ["flight", "hotel"]
    assert world.calls["book_hotel"] == 2
    first, second = told(llm, "book_hotel")
    assert "HT-" in first
    assert "usage limit" in second  # the model's own second use is CrewAI's to refuse
    [run] = runs_of(eng)
    assert run.status is RunStatus.COMPLETED
    records = eng.store.get_records(run.run_id)
    assert [(r.tool, r.attempts, r.status) for r in records] == [
        ("book_flight", 1, RecordStatus.COMPLETED), ("book_hotel", 2, RecordStatus.COMPLETED)]


def test_agent_of_an_enabled_crew_kicked_off_alone_is_one_run() -> None:
    world = TravelWorld()
    world.fail("book_hotel", "permanent", message="hotel full")
    crew, agent, llm = travel_crew(world, [[("book_flight", PAR)], [("book_hotel", HOTEL)],
                                           "nothing booked"])
    eng = engine()
    enable_rac(crew, eng)

    agent.kickoff("Book ann's trip to Paris")

    assert world.live() == []
    assert "via cancel_flight" in told(llm, "book_hotel")[0]
    [run] = runs_of(eng)  # one run for the kickoff, not one per call
    assert run.agent_id == "travel agent" and run.status is RunStatus.COMPENSATED
    assert [r.tool for r in eng.store.get_records(run.run_id)] == [
        "book_flight", "book_hotel", "cancel_flight"]
