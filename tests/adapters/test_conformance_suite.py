"""The adapter conformance suite fails the mistakes it exists to catch: a fresh adapter with one
planted mistake is run through the suite's checks, which must fail it.

The adapter is the worked example's loop (``examples/tool_calls_adapter.py``) with its tool
calls sent to RAC one by one, with no ``batch=``: the mistake a first adapter makes, which an
earlier suite passed on a framework that starts every call of a turn at once.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

import rac
from rac.adapters import engine_for, failure_text, open_or_join
from rac.testing import AdapterConformance, TravelWorld
from rac.testing.adapters import Step, TurnResult
from tests.adapters.tool_calls.test_adapter import LoopStop, ToolCallsHarness

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from tool_calls_adapter import JSONToolOutput, agent_loop, call_tool, rac_agent_loop  # noqa: E402


class NoBatchHarness(ToolCallsHarness):
    """The worked example's loop, its calls sent to RAC with no batch (the planted mistake);
    everything else as the example does it."""

    parallel = True

    def run_turn(self, engine: rac.RAC, world: TravelWorld, script: Sequence[Step], *,
                 agent_id: str) -> TurnResult:
        tools: dict[str, Callable[..., Any]] = {t.__name__: t for t in world.tools()}
        engine = engine_for(engine, {}, plugin=JSONToolOutput(), plugin_name="tool_calls.json")
        with open_or_join(engine, agent_id=agent_id, tools=list(tools.values())) as run:

            def execute(name: str, args: dict[str, Any], reply: Any) -> dict[str, Any]:
                outcome = run.execute(name, args, lambda n, a: call_tool(tools, n, a),
                                      agent_id=agent_id)  # no batch=: the mistake
                if outcome.ok:
                    return {"role": "tool", "content": outcome.result}
                return {"role": "tool", "content": failure_text(outcome), "is_error": True}

            messages = agent_loop(self._model(script), tools, "Book my trip", execute=execute,
                                  workers=self.workers)
        return self._result(messages)


class SequentialNoBatchHarness(NoBatchHarness):
    """The same mistake in a loop that runs a turn's calls one after another."""

    parallel = False
    workers = 1


class Suite(AdapterConformance):
    """The suite as an adapter's test module inherits it."""

    def make_engine(self, log_path: Path, **kw: Any) -> rac.RAC:
        engine = super().make_engine(log_path, **kw)
        engine.add_passthrough(LoopStop)
        return engine


@pytest.mark.parametrize("harness", [NoBatchHarness(), SequentialNoBatchHarness()],
                         ids=["parallel", "sequential"])
def test_the_batch_check_fails_an_adapter_that_passes_no_batch(
        harness: NoBatchHarness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    suite = Suite()
    engine = suite.make_engine(tmp_path / "rac.db")
    world = TravelWorld()
    try:
        with pytest.raises(AssertionError, match="passed no batch"):
            suite.test_calls_of_one_model_message_are_one_batch(harness, engine, world,
                                                                monkeypatch)
    finally:
        engine.store.close()
        world.close()


def test_the_late_call_check_fails_a_sequential_adapter_that_passes_no_batch(
        tmp_path: Path) -> None:
    """With a turn's calls run one after another, the call after the failed one starts after
    the rollback: without a batch it runs and books, and the suite says so."""
    suite = Suite()
    engine = suite.make_engine(tmp_path / "rac.db")
    world = TravelWorld()
    try:
        with pytest.raises(AssertionError):
            suite.test_parallel_call_not_started_is_refused(SequentialNoBatchHarness(), engine,
                                                            world)
        assert world.calls.get("book_flight") == 1  # it ran after the rollback
    finally:
        engine.store.close()
        world.close()


def test_the_example_adapter_passes_both_checks(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The control: the same loop with the example's batch passes the checks above."""
    suite = Suite()
    for n, harness in enumerate([ToolCallsHarness(), _sequential()]):
        engine = suite.make_engine(tmp_path / f"rac-{n}.db")
        world = TravelWorld()
        try:
            suite.test_calls_of_one_model_message_are_one_batch(harness, engine, world,
                                                                monkeypatch)
        finally:
            engine.store.close()
            world.close()


def _sequential() -> ToolCallsHarness:
    from tests.adapters.tool_calls.test_adapter import SequentialToolCallsHarness

    return SequentialToolCallsHarness()


def _swallowing(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A tool as a framework's own error handler leaves it when it sits inside the adapter's
    hook: every exception is already an answer."""

    def handled(**kwargs: Any) -> Any:
        try:
            return fn(**kwargs)
        except Exception as e:  # noqa: BLE001 - the planted mistake
            return f"Error: {e}"

    handled.__name__ = fn.__name__
    return handled


class ErrorTextHarness(ToolCallsHarness):
    """Promise 2's planted mistake: the framework's error handler runs inside RAC's hook, so
    RAC is handed the handler's text instead of the exception."""

    def run_turn_handling_errors(self, engine: rac.RAC, world: TravelWorld,
                                 script: Sequence[Step], *, agent_id: str) -> TurnResult:
        tools = {t.__name__: _swallowing(t) for t in world.tools()}
        _, messages = rac_agent_loop(engine, self._model(script), tools, "Book my trip",
                                     agent_id=agent_id, workers=self.workers)
        return self._result(messages)


class AroundHookHarness(ToolCallsHarness):
    """Promise 3's planted mistake: a path around the tool hook calls the tool with RAC
    unaware, while a run is open."""

    def call_around_hook(self, engine: rac.RAC, world: TravelWorld,
                         call: tuple[str, dict[str, Any]], *, agent_id: str) -> Any:
        tool, args = call
        return getattr(world, tool)(**args)


class GuardedPathsHarness(ToolCallsHarness):
    """The controls: no error handler hides anything, and the path around the hook goes
    through the open run."""

    def run_turn_handling_errors(self, engine: rac.RAC, world: TravelWorld,
                                 script: Sequence[Step], *, agent_id: str) -> TurnResult:
        return self.run_turn(engine, world, script, agent_id=agent_id)

    def call_around_hook(self, engine: rac.RAC, world: TravelWorld,
                         call: tuple[str, dict[str, Any]], *, agent_id: str) -> Any:
        tool, args = call
        run = engine.current_run()
        assert run is not None
        return run.execute(tool, args, lambda n, a: getattr(world, n)(**a),
                           agent_id=agent_id).result


@pytest.mark.parametrize(("check", "broken"), [
    ("test_framework_error_handling_never_hides_the_outcome", ErrorTextHarness()),
    ("test_a_call_around_the_tool_hook_is_logged_or_refused", AroundHookHarness()),
], ids=["promise-2", "promise-3"])
def test_each_promise_fails_its_planted_mistake(check: str, broken: ToolCallsHarness,
                                                tmp_path: Path) -> None:
    suite = Suite()
    for n, (harness, fails) in enumerate([(broken, True), (GuardedPathsHarness(), False)]):
        engine = suite.make_engine(tmp_path / f"rac-{n}.db")
        world = TravelWorld()
        try:
            if fails:
                with pytest.raises(AssertionError):
                    getattr(suite, check)(harness, engine, world)
            else:
                getattr(suite, check)(harness, engine, world)
        finally:
            engine.store.close()
            world.close()
