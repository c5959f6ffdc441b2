"""Task re-runs: a guardrail's rejected attempt is undone before the task runs again."""

from __future__ import annotations

from typing import Any

from crewai import Agent, Crew, Task

from rac.models import RunStatus
from rac.testing import TravelWorld, assert_compensated_once
from rac_crewai import enable_rac
from tests.adapters.crewai.support import ScriptedLLM, engine, runs_of, told, world_tools

PAR = {"passenger": "ann", "origin": "SFO", "dest": "PAR"}
HOTEL = {"guest": "ann", "city": "PAR", "nights": 2}


def reject_first() -> Any:
    """A guardrail rejecting the first answer it sees and accepting the next (unannotated:
    CrewAI checks a guardrail's return annotation)."""
    seen = []

    def guardrail(output):  # type: ignore[no-untyped-def]
        seen.append(output)
        if len(seen) == 1:
            return False, "the flight must leave in the morning"
        return True, output

    return guardrail


def guarded_crew(world: TravelWorld, script: list[Any], *tasks_before: Task
                 ) -> tuple[Crew, ScriptedLLM, Agent]:
    llm = ScriptedLLM(script)
    agent = Agent(role="travel agent", goal="g", backstory="b", llm=llm,
                  tools=world_tools(world))
    task = Task(description="Book ann's flight", expected_output="the flight", agent=agent,
                guardrail=reject_first(), guardrail_max_retries=2)
    return Crew(agents=[agent], tasks=[task]), llm, agent


def rerun_script() -> list[Any]:
    return [[("book_flight", PAR)], "FL-101 at 18:00",  # rejected by the guardrail
            [("book_flight", PAR)], "FL-102 at 08:00"]


def told_on_rerun(llm: ScriptedLLM) -> str:
    """What the agent was given as the task when it ran again."""
    rerun_first_call = llm.seen[2]
    return "\n".join(str(m.get("content")) for m in rerun_first_call if m.get("role") == "user")


def test_rejected_attempts_booking_is_undone_before_the_task_runs_again() -> None:
    world = TravelWorld()
    crew, llm, _ = guarded_crew(world, rerun_script())
    eng = engine()
    enable_rac(crew, eng)

    crew.kickoff()

    assert [b["booking_id"] for b in world.live()] == ["FL-102"]
    assert ("cancel_flight", "FL-101", "cancel") in world.ledger()
    assert_compensated_once(world)
    rerun = told_on_rerun(llm)
    assert "the flight must leave in the morning" in rerun  # CrewAI's own message
    assert "RAC undid what your rejected attempt did" in rerun and "FL-101" in rerun
    [run] = runs_of(eng)
    assert run.status is RunStatus.COMPLETED
    assert [(r.tool, str(r.status)) for r in eng.store.get_records(run.run_id)] == [
        ("book_flight", "compensated"), ("cancel_flight", "completed"),
        ("book_flight", "completed")]


def test_keyword_leaves_rejected_attempts_effects_in_place() -> None:
    world = TravelWorld()
    crew, llm, _ = guarded_crew(world, rerun_script())
    enable_rac(crew, engine(), undo_rejected_attempts=False)

    crew.kickoff()

    assert sorted(b["booking_id"] for b in world.live()) == ["FL-101", "FL-102"]
    assert "RAC undid" not in told_on_rerun(llm)


def test_failure_inside_a_guarded_task_still_undoes_the_earlier_tasks() -> None:
    world = TravelWorld()
    world.fail("book_hotel", "permanent", message="hotel full")
    llm = ScriptedLLM([[("book_flight", PAR)], "FL-101", [("book_hotel", HOTEL)],
                       "no hotel"])
    agent = Agent(role="travel agent", goal="g", backstory="b", llm=llm,
                  tools=world_tools(world))
    def accept(output):  # type: ignore[no-untyped-def]
        return True, output

    crew = Crew(agents=[agent], tasks=[
        Task(description="Book ann's flight", expected_output="flight", agent=agent),
        Task(description="Book ann's hotel", expected_output="hotel", agent=agent,
             guardrail=accept)])
    eng = engine()
    enable_rac(crew, eng)

    crew.kickoff()

    assert world.live() == []
    report = told(llm, "book_hotel")[0]
    assert "hotel full" in report and "via cancel_flight" in report
    [run] = runs_of(eng)
    assert run.status is RunStatus.COMPENSATED
