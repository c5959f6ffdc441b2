"""``Crew(memory=...)`` under RAC: what an agent saved to memory during a run that is rolled
back is forgotten with it, and the memory tools' calls are in the log."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from chromadb.api.types import EmbeddingFunction
from crewai import Agent, Crew, Task
from crewai.memory.unified_memory import Memory
from crewai.rag.embeddings.providers.custom.embedding_callable import CustomEmbeddingFunction
from crewai.tools import memory_tools

from rac.models import RecordKind, RecordStatus, RunStatus
from rac.testing import TravelWorld
from rac_crewai import enable_rac, enable_rac_for_agent
from tests.adapters.crewai.support import ScriptedLLM, engine, runs_of, told, world_tools

PAR = {"passenger": "ann", "origin": "SFO", "dest": "PAR"}
HOTEL = {"guest": "ann", "city": "PAR", "nights": 2}
NOTE = "ann's flight FL-101 to Paris is booked"


def embed(texts: list[str]) -> list[list[float]]:
    """A deterministic embedding (no model service)."""
    return [[float(len(t) % 7), 1.0, 0.5, 0.25] for t in texts]


class Embedder(CustomEmbeddingFunction, EmbeddingFunction):  # type: ignore[misc]
    """:func:`embed` as the embedder a crew's ``embedder={"provider": "custom", ...}`` names
    (what ``memory=True`` builds its ``Memory`` with)."""

    def __init__(self, **config: Any) -> None:
        pass

    def __call__(self, input: Any) -> Any:
        return embed(list(input))


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
    """What the agent saved (not what CrewAI saves by itself after each task, or after a
    standalone kickoff: its input and result)."""
    return [m.record.content for m in memory.recall("flight", limit=10, depth="shallow")
            if not m.record.content.startswith(("Task: ", "Input: "))]


def failing_trip_with_a_note(tmp_path: Path) -> tuple[TravelWorld, Any]:
    """A world whose hotel is full, and a memory crew whose model books the flight, saves a
    note about it, searches for it and tries the hotel."""
    world = TravelWorld()
    world.fail("book_hotel", "permanent", message="hotel full")
    return world, memory_crew(tmp_path, world, [
        [("book_flight", PAR)], [("save_to_memory", {"contents": [NOTE]})],
        [("search_memory", {"queries": ["flight"]})], [("book_hotel", HOTEL)],
        "no hotel; nothing booked"])


def rolled_back_and_forgotten(world: TravelWorld, llm: ScriptedLLM, memory: Memory,
                              eng: Any) -> Any:
    """The run of a trip whose hotel failed, checked: nothing live, the note found while the
    run went on, forgotten with its rollback, the agent told so; the run (compensated)."""
    assert world.live() == []
    assert NOTE in told(llm, "search_memory")[0]
    assert remembered(memory) == []  # the note about the cancelled flight is gone
    [report] = told(llm, "book_hotel")
    assert "via Forget saved memory" in report and "world is back" in report
    [run] = runs_of(eng)
    assert run.status is RunStatus.COMPENSATED
    return run


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


@pytest.mark.parametrize("how", ["memory=True", "memory=True, akickoff", "agent's own memory"])
def test_every_memory_tool_a_crew_gives_its_agents_is_under_rac(
        how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Crew(memory=True) builds its own Memory (the crew's embedder, its agent's model unless
    # chat_llm is set); an agent's own memory in a crew without one is given the same tools.
    world, (crew, llm, memory) = failing_trip_with_a_note(tmp_path)
    if how.startswith("memory=True"):
        monkeypatch.setenv("CREWAI_STORAGE_DIR", str(tmp_path / "crewai"))  # its own store
        crew = Crew(agents=crew.agents, tasks=crew.tasks, memory=True,
                    embedder={"provider": "custom", "config": {"embedding_callable": Embedder}},
                    chat_llm=ScriptedLLM(["{}"] * 20))
        assert isinstance(crew._memory, Memory)
        memory = crew._memory
    else:
        crew = Crew(agents=crew.agents, tasks=crew.tasks)
        crew.agents[0].memory = memory
    eng = engine()
    enable_rac(crew, eng)

    if how.endswith("akickoff"):
        asyncio.run(crew.akickoff())
    else:
        crew.kickoff()

    run = rolled_back_and_forgotten(world, llm, memory, eng)
    assert [(r.tool, r.status, r.agent_id) for r in eng.store.get_records(run.run_id)] == [
        ("book_flight", RecordStatus.COMPENSATED, "travel agent"),
        ("Save to memory", RecordStatus.COMPENSATED, "travel agent"),
        ("Search memory", RecordStatus.COMPLETED, "travel agent"),
        ("book_hotel", RecordStatus.FAILED, "travel agent"),
        ("Forget saved memory", RecordStatus.COMPLETED, "travel agent"),
        ("cancel_flight", RecordStatus.COMPLETED, "travel agent")]


@pytest.mark.parametrize("how", ["enabled alone", "enabled alone, akickoff", "crew member"])
def test_a_standalone_agent_kickoffs_memory_tools_are_under_rac(how: str, tmp_path: Path
                                                                ) -> None:
    # Agent(memory=...).kickoff() adds "Save to memory" and "Search memory" itself (not
    # through the crew): they are guarded as a crew's are, and the note of a rolled-back run
    # is forgotten with it.
    world, (crew, llm, memory) = failing_trip_with_a_note(tmp_path)
    [agent] = crew.agents
    agent.memory = memory
    eng = engine()
    if how == "crew member":
        enable_rac(crew, eng)
    else:
        enable_rac_for_agent(agent, eng)

    if how.endswith("akickoff"):
        asyncio.run(agent.akickoff("Book ann's trip"))
    else:
        agent.kickoff("Book ann's trip")

    run = rolled_back_and_forgotten(world, llm, memory, eng)
    assert [(r.tool, r.kind, r.status, r.agent_id)
            for r in eng.store.get_records(run.run_id)] == [
        ("book_flight", RecordKind.ACTION, RecordStatus.COMPENSATED, "travel agent"),
        ("Save to memory", RecordKind.ACTION, RecordStatus.COMPENSATED, "travel agent"),
        ("Search memory", RecordKind.ACTION, RecordStatus.COMPLETED, "travel agent"),
        ("book_hotel", RecordKind.ACTION, RecordStatus.FAILED, "travel agent"),
        ("Forget saved memory", RecordKind.COMPENSATION, RecordStatus.COMPLETED,
         "travel agent"),
        ("cancel_flight", RecordKind.COMPENSATION, RecordStatus.COMPLETED, "travel agent")]
    assert "Forget saved memory" not in str(llm.tool_schemas)  # not offered to the model


def test_memory_tools_made_outside_an_enabled_kickoff_are_crewais_own(tmp_path: Path) -> None:
    world = TravelWorld()
    _, _, memory = memory_crew(tmp_path, world, [])
    enable_rac_for_agent(Agent(role="r", goal="g", backstory="b", llm=ScriptedLLM([]),
                               memory=memory), engine())

    assert {type(t).__name__ for t in create_memory_tools(memory)} == {
        "RecallMemoryTool", "RememberTool"}


def create_memory_tools(memory: Memory) -> list[Any]:
    """CrewAI's memory tools as CrewAI's own code makes them (by name, at the call)."""
    return memory_tools.create_memory_tools(memory)
