"""``Crew(memory=...)`` under RAC: what an agent saved to memory during a run that is rolled
back is forgotten with it, and the memory tools' calls are in the log."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from crewai import Agent, Crew, Task
from crewai.memory.unified_memory import Memory

from rac.models import RecordKind, RecordStatus, RunStatus
from rac.testing import TravelWorld
from rac_crewai import enable_rac
from tests.adapters.crewai.support import ScriptedLLM, engine, runs_of, told, world_tools

PAR = {"passenger": "ann", "origin": "SFO", "dest": "PAR"}
HOTEL = {"guest": "ann", "city": "PAR", "nights": 2}
NOTE = "ann's flight FL-101 to Paris is booked"


def embed(texts: list[str]) -> list[list[float]]:
    """A deterministic embedding (no model service)."""
    return [[float(len(t) % 7), 1.0, 0.5, 0.25] for t in texts]


def memory_crew(tmp_path: Path, world: TravelWorld, script: list[Any]
                ) -> tuple[Crew, ScriptedLLM, Memory]:
    memory = Memory(llm=ScriptedLLM(["{}"] * 20), embedder=embed,
                    storage=str(tmp_path / "memory"))
    llm = ScriptedLLM(script)
    agent = Agent(role="travel agent", goal="g", backstory="b", llm=llm,
                  tools=world_tools(world, "book_flight", "cancel_flight", "book_hotel",
                                    "cancel_hotel"))
    crew = Crew(agents=[agent], tasks=[Task(description="trip", expected_output="x",
                                            agent=agent)], memory=memory)
    return crew, llm, memory


def remembered(memory: Memory) -> list[str]:
    """What the agent saved (not the task results CrewAI saves by itself after each task)."""
    return [m.record.content for m in memory.recall("flight", limit=10, depth="shallow")
            if not m.record.content.startswith("Task: ")]


def test_a_note_saved_to_memory_is_forgotten_when_the_run_is_rolled_back(
        tmp_path: Path) -> None:
    world = TravelWorld()
    world.fail("book_hotel", "permanent", message="hotel full")
    crew, llm, memory = memory_crew(tmp_path, world, [
        [("book_flight", PAR)], [("save_to_memory", {"contents": [NOTE]})],
        [("book_hotel", HOTEL)], "no hotel; nothing booked"])
    eng = engine()
    enable_rac(crew, eng)

    crew.kickoff()

    assert world.live() == []
    assert remembered(memory) == []  # the note about the cancelled flight is gone
    [report] = told(llm, "book_hotel")
    assert "via Forget saved memory" in report and "world is back" in report
    [run] = runs_of(eng)
    assert run.status is RunStatus.COMPENSATED
    records = eng.store.get_records(run.run_id)
    assert [(r.tool, r.kind, r.status) for r in records] == [
        ("book_flight", RecordKind.ACTION, RecordStatus.COMPENSATED),
        ("Save to memory", RecordKind.ACTION, RecordStatus.COMPENSATED),
        ("book_hotel", RecordKind.ACTION, RecordStatus.FAILED),
        ("Forget saved memory", RecordKind.COMPENSATION, RecordStatus.COMPLETED),
        ("cancel_flight", RecordKind.COMPENSATION, RecordStatus.COMPLETED)]
    assert "Forget saved memory" not in str(llm.tool_schemas)  # not offered to the model


def test_a_note_of_a_run_that_completes_stays_and_searches_are_logged(tmp_path: Path) -> None:
    world = TravelWorld()
    crew, llm, memory = memory_crew(tmp_path, world, [
        [("book_flight", PAR)], [("save_to_memory", {"contents": [NOTE]})],
        [("search_memory", {"queries": ["flight"]})], "booked"])
    eng = engine()
    enable_rac(crew, eng)

    crew.kickoff()

    assert remembered(memory) == [NOTE]
    assert NOTE in told(llm, "search_memory")[0]
    [run] = runs_of(eng)
    assert run.status is RunStatus.COMPLETED
    assert [r.tool for r in eng.store.get_records(run.run_id)] == [
        "book_flight", "Save to memory", "Search memory"]
