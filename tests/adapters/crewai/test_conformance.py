"""rac-crewai passes the adapter conformance suite (enable_rac on a one-agent crew), and the
suite's checks of promises 2, 3 and 7 fail CrewAI harnesses with the mistake each one exists to
catch."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from crewai import Crew

import rac
from rac.adapters import failure_text
from rac.testing import AdapterConformance, TravelWorld
from rac_crewai import flows, guarded_tool
from rac_crewai.testing import HANDLED, ConformanceHarness, ScriptedLLM, world_tools


class TestConformance(AdapterConformance):
    @pytest.fixture
    def adapter(self) -> ConformanceHarness:
        return ConformanceHarness()


class UnguardedToolsHarness(ConformanceHarness):
    """Promise 3's planted mistake: the tool called directly is the user's own, not the one
    RAC wrapped."""

    def _crew(self, engine: rac.RAC, world: TravelWorld, script: Any, agent_id: str,
              **crew_kw: Any) -> tuple[Crew, ScriptedLLM]:
        crew, llm = super()._crew(engine, world, script, agent_id, **crew_kw)
        crew.agents[0].tools = world_tools(world)
        return crew, llm


def raising_failure(outcome: rac.CallOutcome, run: rac.Run, more: str | None = None) -> Any:
    """Promise 2's planted mistake: the wrapper hands a failed call to CrewAI as an exception,
    for CrewAI's error handling (and the user's hook) to turn into the model's answer."""
    raise RuntimeError(failure_text(outcome))


def test_promise_2_fails_an_adapter_that_raises_its_failures_into_crewai(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    suite = TestConformance()
    engine = suite.make_engine(tmp_path / "rac.db")
    world = TravelWorld()
    monkeypatch.setattr(guarded_tool, "failure_for_agent", raising_failure)
    try:
        # the model read the user's hook's text, not RAC's report
        with pytest.raises(AssertionError, match=re.escape(HANDLED)):
            suite.test_framework_error_handling_never_hides_the_outcome(
                ConformanceHarness(), engine, world)
    finally:
        engine.store.close()
        world.close()


def test_promise_3_fails_a_direct_call_of_the_users_own_tool(tmp_path: Path) -> None:
    suite = TestConformance()
    engine = suite.make_engine(tmp_path / "rac.db")
    world = TravelWorld()
    try:
        with pytest.raises(AssertionError):
            suite.test_a_call_around_the_tool_hook_is_logged_or_refused(
                UnguardedToolsHarness(), engine, world)
        assert world.calls["book_flight"] == 1  # it booked, and RAC never knew
    finally:
        engine.store.close()
        world.close()


def test_promise_7_fails_an_adapter_that_leaves_a_resumed_flow_outside_the_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The planted mistake: Flow.resume is not a run of the state (as before issue 30's
    # promise 7), so the approved charge runs, unlogged, after its run was rolled back.
    monkeypatch.setattr(flows, "ASYNC_ENTRY_POINTS", ("kickoff_async", "akickoff"))
    suite = TestConformance()
    engine = suite.make_engine(tmp_path / "rac.db")
    world = TravelWorld()
    try:
        with pytest.raises(AssertionError, match="the approved charge ran"):
            suite.test_a_pause_resumed_after_a_rollback_is_told(ConformanceHarness(), engine,
                                                                world)
        assert world.calls["charge_card"] == 1
    finally:
        engine.store.close()
        world.close()
