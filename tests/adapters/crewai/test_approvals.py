"""Irreversible tools declared ``"approve"``: RAC's approval hook answered through CrewAI, by
the user's approver or by a person at CrewAI's tool-hook prompt, in a real crew."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from crewai import Agent, Crew, Task

from rac.models import RunStatus
from rac.testing import TravelWorld
from rac_crewai import Approval, ask_in_console, enable_rac
from tests.adapters.crewai.support import ScriptedLLM, engine, runs_of, told, world_tools

CHARGE = {"customer": "ann", "amount": 120.0}
FLIGHT = {"passenger": "ann", "origin": "SFO", "dest": "PAR"}


def payment_crew(world: TravelWorld, script: list[Any]) -> tuple[Crew, ScriptedLLM]:
    llm = ScriptedLLM(script)
    agent = Agent(role="billing agent", goal="g", backstory="b", llm=llm,
                  tools=world_tools(world, "book_flight", "cancel_flight", "charge_card"))
    task = Task(description="Charge ann for her trip", expected_output="x", agent=agent)
    return Crew(agents=[agent], tasks=[task]), llm


def irreversible_engine() -> Any:
    return engine(compensations={"book_flight": "cancel_flight"},
                  irreversible={"charge_card": "approve"})


def test_the_approver_decides_each_irreversible_call_and_the_agent_reads_a_denial() -> None:
    world = TravelWorld()
    asked: list[Approval] = []

    def approver(approval: Approval) -> bool:
        asked.append(approval)
        return len(asked) == 1  # the first charge is approved, the second denied

    crew, llm = payment_crew(world, [[("charge_card", CHARGE)], [("charge_card", CHARGE)],
                                     "charged once"])
    eng = irreversible_engine()
    enable_rac(crew, eng, approver=approver)

    crew.kickoff()

    assert world.calls["charge_card"] == 1
    assert [b["kind"] for b in world.live()] == ["charge"]
    assert [(a.tool, a.args, a.agent, a.task) for a in asked] == [
        ("charge_card", CHARGE, "billing agent", "Charge ann for her trip")] * 2
    first, second = told(llm, "charge_card")
    assert "CH-" in first
    assert "charge_card cannot be undone and its approval was denied" in second
    [run] = runs_of(eng)
    assert run.status is RunStatus.COMPLETED


def test_an_approver_that_does_not_decide_leaves_the_call_waiting_not_run() -> None:
    world = TravelWorld()
    crew, llm = payment_crew(world, [[("charge_card", CHARGE)], "waiting for approval"])
    enable_rac(crew, irreversible_engine(), approver=lambda approval: None)

    crew.kickoff()

    assert world.calls.get("charge_card", 0) == 0
    [result] = told(llm, "charge_card")
    assert "waits for approval; nothing was done" in result


def test_ask_in_console_asks_through_crewais_prompt(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    world = TravelWorld()
    answers = iter(["approve", "no"])  # the person at the console
    monkeypatch.setattr("builtins.input", lambda *a: next(answers))
    crew, llm = payment_crew(world, [[("charge_card", CHARGE)], [("charge_card", CHARGE)],
                                     "charged once"])
    enable_rac(crew, irreversible_engine(), approver=ask_in_console)

    crew.kickoff()

    assert world.calls["charge_card"] == 1
    assert "approval was denied" in told(llm, "charge_card")[1]
    shown = capsys.readouterr().out
    assert "RAC: charge_card (billing agent) cannot be undone" in shown


def test_without_an_approver_an_approve_tool_is_refused_as_waiting() -> None:
    world = TravelWorld()
    crew, llm = payment_crew(world, [[("book_flight", FLIGHT)], [("charge_card", CHARGE)],
                                     "flight only"])
    enable_rac(crew, irreversible_engine())

    crew.kickoff()

    assert world.calls.get("charge_card", 0) == 0
    assert [b["kind"] for b in world.live()] == ["flight"]
    assert "waits for approval" in told(llm, "charge_card")[0]


def test_two_approvals_of_one_turn_are_asked_one_at_a_time(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The model asks for two charges in one turn; CrewAI runs both calls at once. The person
    # answers the newest question on the screen: "approve" for 120, "no" for 9000. With two
    # questions open at once, the 120 call could read the "no" and the 9000 call the
    # "approve"; asked one at a time, each answer goes to its own question.
    from crewai.hooks import tool_hooks

    screen: list[str] = []
    answered: set[int] = set()
    lock = threading.Lock()
    together = threading.Barrier(2)
    at_once = {"now": 0, "most": 0}
    shown = tool_hooks.PRINTER.print

    def printed(content: str = "", *args: Any, **kw: Any) -> None:
        with lock:
            screen.append(str(content))
        shown(content, *args, **kw)

    def person(*_: Any) -> str:
        with lock:
            at_once["now"] += 1
            at_once["most"] = max(at_once["most"], at_once["now"])
        try:  # a person takes a moment: a second question shown meanwhile is seen too
            together.wait(timeout=3)
        except threading.BrokenBarrierError:
            pass
        with lock:
            at_once["now"] -= 1
            i = max(i for i, line in enumerate(screen)
                    if "cannot be undone" in line and i not in answered)
            answered.add(i)
            return "approve" if "120.0" in screen[i] else "no"

    monkeypatch.setattr(tool_hooks.PRINTER, "print", printed)
    monkeypatch.setattr("builtins.input", person)
    world = TravelWorld()
    big = {"customer": "ann", "amount": 9000.0}
    crew, llm = payment_crew(world, [[("charge_card", CHARGE), ("charge_card", big)], "done"])
    enable_rac(crew, irreversible_engine(), approver=ask_in_console)

    crew.kickoff()

    assert at_once["most"] == 1
    assert [b["amount"] for b in world.live()] == [120.0]
    results = told(llm, "charge_card")
    assert sum("approval was denied" in r for r in results) == 1
