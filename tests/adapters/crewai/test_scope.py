"""What enable_rac does to a crew: run boundaries, the raise policy, idempotence, copies."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from crewai import Agent, Crew, Task
from crewai.tools.tool_failure import ToolExecutionFailedError

import rac
from rac.models import RecordStatus, RunStatus
from rac.testing import TravelWorld
from rac_crewai import CrewAIPlugin, RACTool, enable_rac, enable_rac_for_agent
from tests.adapters.crewai.support import ScriptedLLM, engine, runs_of, told, world_tools

PAR = {"passenger": "ann", "origin": "SFO", "dest": "PAR"}
HOTEL = {"guest": "ann", "city": "PAR", "nights": 2}


def one_agent_crew(world: TravelWorld, script: list[Any], description: str = "trip",
                   **crew_kw: Any) -> tuple[Crew, Agent, ScriptedLLM]:
    llm = ScriptedLLM(script)
    agent = Agent(role="travel agent", goal="g", backstory="b", llm=llm,
                  tools=world_tools(world))
    task = Task(description=description, expected_output="x", agent=agent)
    return Crew(agents=[agent], tasks=[task], **crew_kw), agent, llm


class RollbackCounter:
    """RAC plugin counting rollbacks and checking the world when each one ends."""

    def __init__(self) -> None:
        self.started = 0

    @rac.hookimpl
    def rac_rollback_started(self, run_id: str, scope: str, seqs: list[int],
                             reason: str) -> None:
        self.started += 1


def test_raise_policy_compensates_before_the_error_leaves_kickoff() -> None:
    world = TravelWorld()
    world.fail("book_hotel", "permanent", message="hotel full")
    crew, _, llm = one_agent_crew(world, [[("book_flight", PAR)], [("book_hotel", HOTEL)],
                                          "never reached"], tool_failure_policy="raise")
    counter = RollbackCounter()
    eng = engine(plugins=[counter])
    enable_rac(crew, eng)

    with pytest.raises(ToolExecutionFailedError) as caught:
        crew.kickoff()

    assert world.live() == []
    assert "via cancel_flight" in caught.value.record.failure.message
    assert counter.started == 1  # rolled back once, not again when the error left the run
    [run] = runs_of(eng)
    assert run.status is RunStatus.COMPENSATED
    assert len(llm.seen) == 2  # the agent never got another turn


def test_enable_twice_wraps_once_and_model_sees_the_same_tools() -> None:
    world = TravelWorld()
    script: list[Any] = [[("book_flight", PAR)], "booked"]
    plain, _, plain_llm = one_agent_crew(TravelWorld(), list(script))
    plain.kickoff()
    crew, agent, llm = one_agent_crew(world, list(script))
    eng = engine()

    enable_rac(crew, eng)
    first = list(agent.tools or [])
    assert enable_rac(crew, eng) is crew
    assert list(agent.tools or []) == first and all(
        isinstance(t, RACTool) and not isinstance(t.rac_inner, RACTool) for t in first)
    crew.kickoff()

    assert llm.tool_schemas[0] == plain_llm.tool_schemas[0]
    assert told(llm, "book_flight") == told(plain_llm, "book_flight")
    [run] = runs_of(eng)
    assert [(r.tool, r.attempts, r.status) for r in eng.store.get_records(run.run_id)] == [
        ("book_flight", 1, RecordStatus.COMPLETED)]
    assert run.status is RunStatus.COMPLETED


def test_kickoff_for_each_is_one_run_per_input() -> None:
    world = TravelWorld()
    world.fail("book_hotel", "permanent", when=lambda a: a["city"] == "NCE")

    def book_for(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
        city = "NCE" if any("to NCE" in str(m.get("content")) for m in messages) else "PAR"
        return [("book_flight", {**PAR, "dest": city})]

    def hotel_for(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
        city = "NCE" if any("to NCE" in str(m.get("content")) for m in messages) else "PAR"
        return [("book_hotel", {**HOTEL, "city": city})]

    crew, _, _ = one_agent_crew(world, [book_for, hotel_for, "done", book_for, hotel_for,
                                        "failed"], description="Book a trip to {city}")
    eng = engine()
    enable_rac(crew, eng)

    crew.kickoff_for_each([{"city": "PAR"}, {"city": "NCE"}])

    # The second input's failure undid only its own flight: the first trip stays booked.
    assert sorted((b["kind"], b["place"]) for b in world.live()) == [
        ("flight", "PAR"), ("hotel", "PAR")]
    runs = {r.status: r for r in runs_of(eng)}
    assert sorted(runs) == [RunStatus.COMPENSATED, RunStatus.COMPLETED]
    # The run ids say which input each run was for.
    assert runs[RunStatus.COMPLETED].run_id.endswith("-input-0")
    assert runs[RunStatus.COMPENSATED].run_id.endswith("-input-1")
    assert [r.tool for r in eng.store.get_records(runs[RunStatus.COMPLETED].run_id)] == [
        "book_flight", "book_hotel"]
    assert [r.tool for r in eng.store.get_records(runs[RunStatus.COMPENSATED].run_id)] == [
        "book_flight", "book_hotel", "cancel_flight"]


def test_async_kickoff_for_each_names_each_inputs_run() -> None:
    world = TravelWorld()
    crew, _, _ = one_agent_crew(world, ["nothing to do"] * 3,
                                description="Book a trip to {city}")
    eng = engine()
    enable_rac(crew, eng)

    asyncio.run(crew.kickoff_for_each_async([{"city": "PAR"}, {"city": "NCE"},
                                             {"city": "ROM"}]))

    assert sorted(r.run_id.rsplit("-", 1)[1] for r in runs_of(eng)) == ["0", "1", "2"]
    assert crew.kickoff().raw  # the crew itself, kicked off by the user: a plain run id
    assert sum("-input-" not in r.run_id for r in runs_of(eng)) == 1


def test_single_agent_enabled_in_a_plain_crew_runs_each_task_as_a_run() -> None:
    world = TravelWorld()
    world.fail("book_hotel", "permanent", message="hotel full")
    crew, agent, llm = one_agent_crew(world, [[("book_flight", PAR)], [("book_hotel", HOTEL)],
                                              "nothing booked"])
    eng = engine()
    assert enable_rac_for_agent(agent, eng) is agent

    crew.kickoff()

    assert world.live() == []
    assert "via cancel_flight" in told(llm, "book_hotel")[0]
    [run] = runs_of(eng)
    assert run.agent_id == "travel agent" and run.status is RunStatus.COMPENSATED


def test_compensators_registered_with_the_engine_are_used_unknown_ones_refused() -> None:
    world = TravelWorld()
    world.fail("book_hotel", "permanent", message="hotel full")
    llm = ScriptedLLM([[("book_flight", PAR)], [("book_hotel", HOTEL)], "nothing booked"])
    agent = Agent(role="a", goal="g", backstory="b", llm=llm,
                  tools=world_tools(world, "book_flight", "book_hotel"))
    crew = Crew(agents=[agent], tasks=[Task(description="d", expected_output="x", agent=agent)])
    with pytest.raises(rac.ConfigurationError, match="cancel_flight"):
        enable_rac(crew, engine())

    eng = engine(plugins=[CrewAIPlugin()])
    eng.register_tools(world_tools(world, "cancel_flight", "cancel_hotel"))
    enable_rac(crew, eng)
    crew.kickoff()

    assert world.live() == []
    assert ("cancel_flight", "FL-101", "cancel") in world.ledger()
    assert "via cancel_flight" in told(llm, "book_hotel")[0]


@pytest.mark.parametrize("how", ["enabled alone", "crew member", "inside an open run"])
def test_agent_kickoff_inside_an_event_loop_is_one_run_holding_its_calls(how: str) -> None:
    # Inside a running event loop CrewAI's Agent.kickoff returns kickoff_async's coroutine:
    # the kickoff itself opens no run (before, an empty 'completed' run beside the real one),
    # the awaited coroutine is the one run of the calls, and a failure undoes them.
    world = TravelWorld()
    world.fail("book_hotel", "permanent", message="hotel full")
    crew, agent, llm = one_agent_crew(world, [[("book_flight", PAR)], [("book_hotel", HOTEL)],
                                              "nothing booked"])
    eng = engine()
    if how == "crew member":
        enable_rac(crew, eng)
    else:
        enable_rac_for_agent(agent, eng)

    async def main() -> Any:
        if how != "inside an open run":
            return await agent.kickoff("Book ann's trip")
        with eng.run(agent_id="trip"):
            return await agent.kickoff("Book ann's trip")

    asyncio.run(main())

    assert world.live() == []
    assert "via cancel_flight" in told(llm, "book_hotel")[0]
    [run] = runs_of(eng)
    assert run.agent_id == ("trip" if how == "inside an open run" else "travel agent")
    assert run.status is RunStatus.COMPENSATED
    assert [(r.tool, r.status) for r in eng.store.get_records(run.run_id)] == [
        ("book_flight", RecordStatus.COMPENSATED), ("book_hotel", RecordStatus.FAILED),
        ("cancel_flight", RecordStatus.COMPLETED)]


def test_a_lite_agent_is_refused_naming_its_replacement() -> None:
    # CrewAI's deprecated LiteAgent calls the tools it parsed when it was made: RAC cannot
    # wrap them, so enabling it is refused rather than leaving its calls invisible.
    import warnings

    from crewai.lite_agent import LiteAgent

    world = TravelWorld()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        lite = LiteAgent(role="r", goal="g", backstory="b", llm=ScriptedLLM([]),
                         tools=world_tools(world, "book_flight", "cancel_flight"))
    with pytest.raises(rac.ConfigurationError, match=r"LiteAgent.*Agent\(\.\.\.\)\.kickoff"):
        enable_rac_for_agent(lite, engine())  # type: ignore[arg-type]
