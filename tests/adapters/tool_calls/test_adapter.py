"""The adapter of docs/writing-an-adapter.md, driven by a scripted model."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

import rac
from rac.testing import (
    AdapterConformance,
    TravelWorld,
    assert_no_live_effects,
    assert_rollback_order,
)
from rac.testing.adapters import Step, Told, TurnResult

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples"))
from tool_calls_adapter import agent_loop, arac_agent_loop, rac_agent_loop  # noqa: E402


def tool_call(n: int, name: str, **args: Any) -> dict[str, Any]:
    return {"id": f"call_{n}", "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)}}


class ScriptedModel:
    """Emits predetermined replies and keeps every input it was given."""

    def __init__(self, replies: list[dict[str, Any]]) -> None:
        self._replies: Iterator[dict[str, Any]] = iter(replies)
        self.inputs: list[list[dict[str, Any]]] = []

    def __call__(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        self.inputs.append([dict(m) for m in messages])
        return next(self._replies)


def trip_script() -> ScriptedModel:
    return ScriptedModel([
        {"role": "assistant", "tool_calls": [tool_call(1, "book_flight", passenger="ann",
                                                       origin="SFO", dest="CDG")]},
        {"role": "assistant", "tool_calls": [tool_call(2, "book_hotel", guest="ann",
                                                       city="Paris", nights=2)]},
        {"role": "assistant", "tool_calls": [tool_call(3, "book_car", driver="ann",
                                                       city="Paris")]},
        # the replan after the report: book again, with the partner's car
        {"role": "assistant", "tool_calls": [
            tool_call(4, "book_flight", passenger="ann", origin="SFO", dest="CDG"),
            tool_call(5, "book_hotel", guest="ann", city="Paris", nights=2),
            tool_call(6, "rent_car", driver="ann", city="Paris")]},
        {"role": "assistant", "content": "Your trip is booked."},
    ])


def test_without_rac_the_failure_leaves_bookings_live(world: TravelWorld) -> None:
    world.fail("book_car", "permanent")
    tools = {t.__name__: t for t in world.tools()}
    model = ScriptedModel([
        {"role": "assistant", "tool_calls": [tool_call(1, "book_flight", passenger="a",
                                                       origin="X", dest="Y")]},
        {"role": "assistant", "content": "done"}])
    agent_loop(model, tools, "book")
    assert len(world.live()) == 1


def test_rac_undoes_then_the_model_replans(engine: rac.RAC, world: TravelWorld) -> None:
    world.fail("book_car", "permanent", message="no cars left")
    tools = {t.__name__: t for t in world.tools()}
    model = trip_script()
    run, messages = rac_agent_loop(engine, model, tools, "Book my trip to Paris")

    # what the model saw after the failure: the report, as the car's tool message
    report_msg = model.inputs[3][-1]
    assert report_msg["tool_call_id"] == "call_3" and report_msg["is_error"]
    assert report_msg["content"].startswith("RAC: book_car failed (permanent: no cars left)")
    assert "book_hotel HT-102 (via cancel_hotel), book_flight FL-101" in report_msg["content"]
    # the world: only the replanned trip is live
    assert sorted((b["kind"], b["detail"]) for b in world.live()) == [
        ("car", "partner"), ("flight", "SFO->CDG"), ("hotel", "2 nights")]
    records = engine.store.get_records(run.run_id)
    assert_rollback_order(records, ["book_hotel", "book_flight"])
    assert run.status is rac.RunStatus.COMPLETED
    assert messages[-1]["content"] == "Your trip is booked."


def test_abort_without_replan_leaves_nothing(engine: rac.RAC, world: TravelWorld) -> None:
    world.fail("book_hotel", "permanent")
    tools = {t.__name__: t for t in world.tools()}
    model = ScriptedModel([
        {"role": "assistant", "tool_calls": [tool_call(1, "book_flight", passenger="a",
                                                       origin="X", dest="Y"),
                                             tool_call(2, "book_hotel", guest="a", city="Z",
                                                       nights=1)]},
        {"role": "assistant", "content": "Sorry, no hotel."}])
    run, _ = rac_agent_loop(engine, model, tools, "book")
    assert_no_live_effects(world)
    assert run.status is rac.RunStatus.COMPENSATED


# -- the conformance suite -----------------------------------------------------------------------
class ToolCallsHarness:
    """Runs a conformance turn through the hand-rolled loop."""

    parallel = True

    @staticmethod
    def _model(script: Sequence[Step]) -> ScriptedModel:
        n = iter(range(1, 1000))
        replies: list[dict[str, Any]] = []
        for step in script:
            if isinstance(step, str):
                replies.append({"role": "assistant", "content": step})
            else:
                replies.append({"role": "assistant", "tool_calls": [
                    tool_call(next(n), name, **args) for name, args in step]})
        return ScriptedModel(replies)

    @staticmethod
    def _result(messages: list[dict[str, Any]]) -> TurnResult:
        told = [Told(m["name"], str(m["content"]), bool(m.get("is_error")))
                for m in messages if m.get("role") == "tool"]
        return TurnResult(told, messages[-1].get("content"))

    #: threads for the calls of one reply (None: one per call)
    workers: int | None = None

    def run_turn(self, engine: rac.RAC, world: TravelWorld, script: Sequence[Step], *,
                 agent_id: str) -> TurnResult:
        tools = {t.__name__: t for t in world.tools()}
        _, messages = rac_agent_loop(engine, self._model(script), tools, "Book my trip",
                                     agent_id=agent_id, workers=self.workers)
        return self._result(messages)

    async def arun_turn(self, engine: rac.RAC, world: TravelWorld, script: Sequence[Step], *,
                        agent_id: str) -> TurnResult:
        tools = {t.__name__: t for t in world.tools()}
        _, messages = await arac_agent_loop(engine, self._model(script), tools, "Book my trip",
                                            agent_id=agent_id)
        return self._result(messages)

    def control_flow(self) -> BaseException:
        return LoopStop("the user stopped the loop")


class LoopStop(Exception):  # noqa: N818 - the loop's own control flow
    """How this loop's tools ask the loop to stop (declared a pass-through below)."""


class TestConformance(AdapterConformance):
    @pytest.fixture
    def adapter(self) -> ToolCallsHarness:
        return ToolCallsHarness()

    def make_engine(self, log_path: Path, **kw: Any) -> rac.RAC:
        engine = super().make_engine(log_path, **kw)
        engine.add_passthrough(LoopStop)
        return engine


class SequentialToolCallsHarness(ToolCallsHarness):
    """The same loop running the calls of one reply one after another (one worker thread), as
    many frameworks do: a call after a failed sibling must be refused, never run."""

    parallel = False
    workers = 1


class TestSequentialConformance(TestConformance):
    @pytest.fixture
    def adapter(self) -> ToolCallsHarness:
        return SequentialToolCallsHarness()
