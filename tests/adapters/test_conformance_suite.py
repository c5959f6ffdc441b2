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


class CachingHarness(ToolCallsHarness):
    """Promise 8's planted mistake: the loop keeps a cache of read results (by tool and
    arguments) outside RAC, and serves a read from before the rollback again."""

    def run_turn_cached(self, engine: rac.RAC, world: TravelWorld, script: Sequence[Step], *,
                        agent_id: str) -> TurnResult:
        cache: dict[str, Any] = {}

        def get_booking(booking_id: str) -> Any:
            if booking_id not in cache:
                cache[booking_id] = world.get_booking(booking_id)
            return cache[booking_id]

        tools: dict[str, Callable[..., Any]] = {t.__name__: t for t in world.tools()}
        tools["get_booking"] = get_booking
        _, messages = rac_agent_loop(engine, self._model(script), tools, "Book my trip",
                                     agent_id=agent_id, workers=self.workers)
        return self._result(messages)


class UncachedHarness(ToolCallsHarness):
    """Promise 8's control: every read asks the world."""

    def run_turn_cached(self, engine: rac.RAC, world: TravelWorld, script: Sequence[Step], *,
                        agent_id: str) -> TurnResult:
        tools: dict[str, Callable[..., Any]] = {t.__name__: t for t in world.tools()}
        tools["get_booking"] = world.get_booking
        _, messages = rac_agent_loop(engine, self._model(script), tools, "Book my trip",
                                     agent_id=agent_id, workers=self.workers)
        return self._result(messages)


class LoggedDelegationHarness(ToolCallsHarness):
    """Promise 5's planted mistake: the tool that runs the delegate's loop is logged as a call
    of its own (no compensator: reported live after the rollback), and the delegate's loop,
    run on the tool's worker thread, is a run of its own."""

    def run_delegating_turn(self, engine: rac.RAC, world: TravelWorld, script: Sequence[Step],
                            delegate: Sequence[Step], *, agent_id: str) -> TurnResult:
        world_tools: dict[str, Callable[..., Any]] = {t.__name__: t for t in world.tools()}

        def ask_booker(request: str) -> str:
            _, messages = rac_agent_loop(engine, self._model(delegate), world_tools, request,
                                         agent_id=f"{agent_id}-booker", workers=self.workers)
            return str(messages[-1].get("content"))

        tools = {**world_tools, "ask_booker": ask_booker}
        _, messages = rac_agent_loop(
            engine, self._model([[("ask_booker", {"request": "Book ann's flight."})], *script]),
            tools, "Book my trip", agent_id=agent_id, workers=self.workers)
        return self._result(messages)


def test_the_cache_check_fails_a_cache_that_outlives_the_rollback(tmp_path: Path) -> None:
    suite = Suite()
    for n, (harness, fails) in enumerate([(CachingHarness(), True),
                                          (UncachedHarness(), False)]):
        world = TravelWorld()
        try:
            check = suite.test_a_cache_never_serves_a_read_from_before_a_rollback
            if fails:
                with pytest.raises(AssertionError, match="served again"):
                    check(harness, tmp_path / f"rac-{n}.db", world)
            else:
                check(harness, tmp_path / f"rac-{n}.db", world)
        finally:
            world.close()


def test_the_delegation_checks_fail_a_delegation_logged_as_a_call(tmp_path: Path) -> None:
    """The controls are the framework harnesses that pass them (LlamaIndex's agent used as a
    tool, Semantic Kernel's agent called from a kernel function)."""
    suite = Suite()
    for n, check in enumerate([suite.test_delegated_work_joins_the_parent_run,
                               suite.test_the_parent_hears_what_its_delegate_undid]):
        engine = suite.make_engine(tmp_path / f"rac-{n}.db")
        world = TravelWorld()
        try:
            with pytest.raises(AssertionError):
                check(LoggedDelegationHarness(), engine, world)
        finally:
            engine.store.close()
            world.close()
