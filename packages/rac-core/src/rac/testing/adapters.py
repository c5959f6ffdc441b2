"""The adapter conformance suite: what every RAC adapter must do, checked the same way for all.

An adapter's test module subclasses :class:`AdapterConformance` and gives it an ``adapter``
fixture returning an :class:`AdapterHarness`: something that runs one scripted agent turn
through the real framework with RAC on. The suite builds the world, the engine and the script;
the harness builds the framework's agent (a model that answers with the script, the world's
tools) and reports what the model was told::

    import pytest
    from rac.testing import AdapterConformance

    class TestMyAdapter(AdapterConformance):
        @pytest.fixture
        def adapter(self):
            return MyHarness()

Every ``test_*`` method is inherited and checks one promise, against the world's own ledger,
the log's records and the messages the model received. Needs pytest.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import Hashable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn, Protocol, runtime_checkable

import pytest

from rac.engine import RAC
from rac.hookspecs import hookimpl
from rac.models import Record, RecordKind, RecordStatus, RunStatus
from rac.retry import RetryPolicy
from rac.run import Run
from rac.testing.assertions import assert_compensated_once, assert_no_live_effects
from rac.testing.clock import VirtualClock
from rac.testing.turns import Call, Step, Told, TurnResult
from rac.testing.world import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld

#: How long a gated parallel call waits for its sibling before the test fails (a safety net
#: against a hang; the events normally fire at once, so no test waits this long).
WAIT = 10.0


@runtime_checkable
class AdapterHarness(Protocol):
    """Runs one scripted agent turn through a real framework with RAC on.

    ``run_turn`` builds the framework's agent with RAC enabled on ``engine`` (``rac=engine``),
    the travel world's tools (``world.tools()``, all of them, as the framework's tools) and a
    model that answers with ``script`` in order, one step per model call; each step's calls
    are one model message (several calls: parallel calls, run as the framework runs them). It
    runs one invocation, with ``agent_id`` as the agent id RAC records, and returns what the
    model was told. Exceptions that leave the framework's entry point leave ``run_turn``.

    The crash check runs a turn in a subprocess: there the harness class is made with no
    arguments and the conformance class's ``make_engine`` gives the engine, so both must be
    importable (module-level) and the harness must need no fixture.

    Optional methods turn on the checks of promises a framework's feature needs (each check's
    docstring gives the method's contract; without it the check is skipped, saying so):
    ``run_turn_handling_errors`` (2), ``call_around_hook`` (3), ``run_persisted_turn`` with
    ``resume_persisted_turn`` (4), ``run_delegating_turn`` (5), ``run_paused_turn`` (7),
    ``run_turn_cached`` (8). A framework without the feature a method stands for says why in
    ``not_applicable`` (an optional mapping: method name -> reason), and the check is
    skipped with that reason.
    """

    #: True if the framework runs the calls of one model message concurrently.
    parallel: bool

    def run_turn(self, engine: RAC, world: TravelWorld, script: Sequence[Step], *,
                 agent_id: str) -> TurnResult:
        """Run the turn on the framework's blocking path."""
        ...

    async def arun_turn(self, engine: RAC, world: TravelWorld, script: Sequence[Step], *,
                        agent_id: str) -> TurnResult:
        """Run the turn on the framework's async path."""
        ...

    def control_flow(self) -> BaseException:
        """An exception the framework uses for control flow (an interrupt, a hand-off, a stop),
        which a tool may raise; the adapter must let it through untouched."""
        ...


def _skip_without(adapter: Any, method: str, feature: str) -> NoReturn:
    """Skip the check of an optional harness ``method`` the harness lacks, with the reason its
    ``not_applicable`` gives, else saying which method and ``feature`` it would need."""
    reason = (getattr(adapter, "not_applicable", None) or {}).get(method)
    pytest.skip(f"{method}: {reason}" if reason else
                f"the harness has no {method} ({feature})")


def _flight(n: int = 1) -> Call:
    return ("book_flight", {"passenger": f"ann{n}", "origin": "SFO", "dest": "CDG"})


def _hotel() -> Call:
    return ("book_hotel", {"guest": "ann", "city": "Paris", "nights": 2})


def _car(tool: str = "book_car") -> Call:
    return (tool, {"driver": "ann", "city": "Paris"})


def _charge() -> Call:
    return ("charge_card", {"customer": "ann", "amount": 420.0})


class _RollbackSignal:
    """Sets an event when a rollback starts (a RAC plugin)."""

    def __init__(self) -> None:
        self.started = threading.Event()

    @hookimpl
    def rac_rollback_started(self, run_id: str, scope: str, seqs: list[int],
                             reason: str) -> None:
        self.started.set()


class AdapterConformance:
    """Inherit this and provide an ``adapter`` fixture (an :class:`AdapterHarness`); every
    ``test_*`` method checks one promise of an adapter."""

    #: The retry budget of the suite's engine.
    max_attempts = 3

    @pytest.fixture
    def adapter(self) -> AdapterHarness:  # pragma: no cover - subclasses override
        raise NotImplementedError("give the adapter conformance suite an `adapter` fixture")

    @pytest.fixture
    def world(self) -> Iterator[TravelWorld]:
        w = TravelWorld()
        yield w
        w.close()

    @pytest.fixture
    def log_path(self, tmp_path: Path) -> Path:
        """The SQLite file of the suite's log (a fresh process can open it again)."""
        return tmp_path / "rac.db"

    def make_engine(self, log_path: Path, **kw: Any) -> RAC:
        """The suite's engine: the travel world's declarations, a SQLite log at
        ``log_path``, a virtual clock, ``max_attempts`` attempts."""
        kw.setdefault("compensations", TRAVEL_COMPENSATIONS)
        kw.setdefault("read_only", TRAVEL_READ_ONLY)
        kw.setdefault("clock", VirtualClock())
        kw.setdefault("retry", RetryPolicy(max_attempts=self.max_attempts, initial_delay=0.5,
                                           jitter=0.0))
        kw.setdefault("compensation_retry", RetryPolicy(max_attempts=3, initial_delay=1.0,
                                                        jitter=0.0))
        kw.setdefault("load_entrypoints", False)
        return RAC(store=f"sqlite:///{log_path}", **kw)

    @pytest.fixture
    def engine(self, log_path: Path) -> Iterator[RAC]:
        eng = self.make_engine(log_path)
        yield eng
        eng.store.close()

    # -- reading the log -----------------------------------------------------------------------
    @staticmethod
    def records(engine: RAC) -> list[Record]:
        """Every record of every run in the log, oldest run first."""
        out: list[Record] = []
        for info in sorted(engine.store.list_runs(), key=lambda i: i.created_at):
            out.extend(engine.store.get_records(info.run_id))
        return out

    @staticmethod
    def compensations(records: Sequence[Record]) -> list[str]:
        """The tools of the compensation records, in the order they were written."""
        return [r.tool for r in records if r.kind is RecordKind.COMPENSATION]

    @staticmethod
    def actions(records: Sequence[Record]) -> list[tuple[str, str]]:
        """(tool, status) of the action records, in the order they were written."""
        return [(r.tool, str(r.status)) for r in records if r.kind is RecordKind.ACTION]

    # -- the promises ----------------------------------------------------------------------------
    def test_rollback_order_and_report(self, adapter: AdapterHarness, engine: RAC,
                                       world: TravelWorld) -> None:
        """A permanent failure undoes the turn's bookings newest first, and the model gets the
        report naming what was undone."""
        world.fail("book_car", "permanent", message="no cars left")
        result = adapter.run_turn(engine, world, [[_flight()], [_hotel()], [_car()],
                                                  "Sorry, nothing is booked."],
                                  agent_id="travel")
        assert_no_live_effects(world)
        assert_compensated_once(world)
        recs = self.records(engine)
        assert self.compensations(recs) == ["cancel_hotel", "cancel_flight"]
        [report] = result.of("book_car")
        assert report.startswith("RAC: book_car failed (permanent: no cars left)"), report
        assert "book_hotel HT-102 (via cancel_hotel)" in report
        assert "book_flight FL-101" in report
        assert report.index("book_hotel") < report.index("book_flight")
        assert [t.error for t in result.told if t.tool == "book_car"] in ([True], [None])
        [info] = engine.store.list_runs()
        assert info.status is RunStatus.COMPENSATED

    def test_replan_completes(self, adapter: AdapterHarness, engine: RAC,
                              world: TravelWorld) -> None:
        """After the rollback the model replans in the same turn; the new bookings stay."""
        world.fail("book_car", "permanent", message="no cars left")
        result = adapter.run_turn(engine, world, [
            [_flight()], [_hotel()], [_car()], [_flight()], [_hotel()], [_car("rent_car")],
            "Your trip is booked."], agent_id="travel")
        assert sorted((b["kind"], b["detail"]) for b in world.live()) == [
            ("car", "partner"), ("flight", "SFO->CDG"), ("hotel", "2 nights")]
        assert_compensated_once(world)
        assert result.final == "Your trip is booked."
        assert all(t.error is not True for t in result.told[3:])
        infos = engine.store.list_runs()
        assert [i.status for i in infos] == [RunStatus.COMPLETED]

    def test_transient_failure_retried_at_most_max_attempts(
            self, adapter: AdapterHarness, engine: RAC, world: TravelWorld) -> None:
        """A transient failure is retried, never more than ``max_attempts`` times in all."""
        world.fail("book_hotel", "transient", times=self.max_attempts - 1)
        world.fail("book_car", "transient", message="car desk busy")
        result = adapter.run_turn(engine, world, [[_hotel()], [_car()], "Sorry."],
                                  agent_id="travel")
        assert world.calls["book_hotel"] == self.max_attempts
        assert world.calls["book_car"] == self.max_attempts
        recs = {r.tool: r for r in self.records(engine) if r.kind is RecordKind.ACTION}
        assert recs["book_hotel"].attempts == self.max_attempts
        assert recs["book_car"].status is RecordStatus.FAILED
        assert self.compensations(self.records(engine)) == ["cancel_hotel"]
        [report] = result.of("book_car")
        assert "car desk busy" in report
        assert_no_live_effects(world)

    def test_alternative_compensated_by_its_own_compensator(
            self, adapter: AdapterHarness, log_path: Path, world: TravelWorld) -> None:
        """A declared alternative replaces a failed call; on rollback it is undone by its own
        compensator, not the failed tool's."""
        engine = self.make_engine(log_path, alternatives={"book_car": ["rent_car"]})
        try:
            world.fail("book_car", "permanent", message="no cars")
            world.fail("book_hotel", "permanent", message="no rooms")
            result = adapter.run_turn(engine, world, [[_flight()], [_car()], [_hotel()],
                                                      "Sorry."], agent_id="travel")
            assert world.calls["rent_car"] == 1
            [car_told] = result.of("book_car")
            assert "CR-" in car_told  # the model got the rental's booking
            recs = self.records(engine)
            assert self.compensations(recs) == ["return_rental", "cancel_flight"]
            assert_no_live_effects(world)
            assert_compensated_once(world)
        finally:
            engine.store.close()

    def test_control_flow_passes_through(self, adapter: AdapterHarness, engine: RAC,
                                         world: TravelWorld) -> None:
        """A framework's control-flow exception raised by a tool is no failure: not retried,
        nothing rolled back, and it reaches the framework as it was raised."""
        signal = adapter.control_flow()

        def raise_signal(args: dict[str, Any]) -> None:
            raise signal

        world.on_call("book_hotel", raise_signal)
        escaped: BaseException | None = None
        try:
            adapter.run_turn(engine, world, [[_flight()], [_hotel()], "Paused."],
                             agent_id="travel")
        except BaseException as e:  # noqa: BLE001 - what escaped is what is checked
            escaped = e
        if escaped is not None:
            assert _chain_holds(escaped, signal), f"{escaped!r} is not {signal!r}"
        assert world.calls["book_hotel"] == 1
        assert [b["kind"] for b in world.live()] == ["flight"]
        recs = self.records(engine)
        assert self.compensations(recs) == []
        assert engine.store.list_runs()[0].status is not RunStatus.COMPENSATED

    def test_parallel_calls_undone(self, adapter: AdapterHarness, log_path: Path,
                                   world: TravelWorld) -> None:
        """A call of one model message still running when its sibling's failure starts the
        rollback is undone when it finishes, and the model is told so."""
        if not adapter.parallel:
            pytest.skip("this adapter's framework runs a message's calls one after another")
        signal = _RollbackSignal()
        engine = self.make_engine(log_path, plugins=[signal])
        flight_started = threading.Event()

        def flight(args: dict[str, Any]) -> None:
            flight_started.set()
            assert signal.started.wait(WAIT), "the rollback never started"

        def car(args: dict[str, Any]) -> None:
            assert flight_started.wait(WAIT), "the flight never started"

        world.on_call("book_flight", flight)
        world.on_call("book_car", car)
        world.fail("book_car", "permanent", message="no cars")
        try:
            result = adapter.run_turn(engine, world, [[_hotel()], [_flight(), _car()],
                                                      "Nothing could be booked."],
                                      agent_id="travel")
            assert_no_live_effects(world)
            assert_compensated_once(world)
            assert sorted(self.actions(self.records(engine))) == [
                ("book_car", "failed"), ("book_flight", "compensated"),
                ("book_hotel", "compensated")]
            [flight_told] = result.of("book_flight")
            assert "undone" in flight_told
            [car_told] = result.of("book_car")
            assert car_told.startswith("RAC: book_car failed")
        finally:
            engine.store.close()

    def test_parallel_call_not_started_is_refused(self, adapter: AdapterHarness,
                                                  engine: RAC, world: TravelWorld) -> None:
        """A call of one model message that had not started when its sibling's failure
        started the rollback is refused (it never runs), and the model is told why; one the
        framework had already started is undone when it finishes. Either way nothing is live
        and the run is not reported clean with the flight booked."""
        world.fail("book_car", "permanent", message="no cars")
        result = adapter.run_turn(engine, world, [[_hotel()], [_car(), _flight()],
                                                  "Nothing could be booked."],
                                  agent_id="travel")
        assert_no_live_effects(world)
        assert_compensated_once(world)
        actions = dict(self.actions(self.records(engine)))
        assert actions["book_car"] == "failed" and actions["book_hotel"] == "compensated"
        [flight_told] = result.of("book_flight")
        if not adapter.parallel:  # a sequential framework starts the flight after the rollback
            assert actions["book_flight"] == "failed", actions
            assert world.calls.get("book_flight", 0) == 0
            assert ("not run: book_flight was asked for in the same model turn as a call that "
                    "failed (book_car failed)") in flight_told, flight_told
        else:  # by timing: done before the rollback, running, or not started yet
            assert actions["book_flight"] in ("failed", "compensated"), actions
            [car_told] = result.of("book_car")
            assert "not run" in flight_told or "undone" in flight_told or (
                actions["book_flight"] == "compensated" and "book_flight" in car_told), (
                flight_told, car_told)
        [info] = engine.store.list_runs()
        assert info.status is RunStatus.COMPENSATED, info.status

    def test_agent_id_recorded(self, adapter: AdapterHarness, engine: RAC,
                               world: TravelWorld) -> None:
        """Every record carries the agent id the adapter was given."""
        adapter.run_turn(engine, world, [[_flight()], [_hotel()], "Booked."],
                         agent_id="planner-7")
        recs = self.records(engine)
        assert [r.tool for r in recs] == ["book_flight", "book_hotel"]
        assert {r.agent_id for r in recs} == {"planner-7"}

    def test_async_equivalent(self, adapter: AdapterHarness, engine: RAC,
                              world: TravelWorld) -> None:
        """The async path retries, rolls back and reports as the blocking one does."""
        world.fail("book_hotel", "transient", times=1)
        world.fail("book_car", "permanent", message="no cars left")
        result = asyncio.run(adapter.arun_turn(engine, world, [[_flight()], [_hotel()],
                                                               [_car()], "Sorry."],
                                               agent_id="travel-async"))
        assert world.calls["book_hotel"] == 2
        assert_no_live_effects(world)
        assert_compensated_once(world)
        recs = self.records(engine)
        assert self.compensations(recs) == ["cancel_hotel", "cancel_flight"]
        assert {r.agent_id for r in recs if r.kind is RecordKind.ACTION} == {"travel-async"}
        [report] = result.of("book_car")
        assert report.startswith("RAC: book_car failed (permanent: no cars left)"), report

    def test_tools_of_one_name_in_two_agents_are_two_tools(
            self, adapter: AdapterHarness, engine: RAC, world: TravelWorld) -> None:
        """Promise 1: two agents of one run, each with its own tools of the same names (two
        vendors' systems), are two sets of tools. When the second agent's call fails for
        good, each agent's booking is undone through that agent's own compensator: neither
        system is undone twice, neither is missed, and the model hears both undone."""
        vendor_b = TravelWorld()
        vendor_b.fail("book_car", "permanent", message="no cars")
        try:
            with engine.run(agent_id="trip"):
                adapter.run_turn(engine, world, [[_flight()], "Booked."], agent_id="vendor-a")
                result = adapter.run_turn(engine, vendor_b, [[_flight(2)], [_car()], "Sorry."],
                                          agent_id="vendor-b")
            for system in (world, vendor_b):
                assert_no_live_effects(system)
                assert_compensated_once(system)
            recs = self.records(engine)
            assert sorted((r.tool, r.agent_id) for r in recs
                          if r.kind is RecordKind.COMPENSATION) == [
                ("cancel_flight", "vendor-a"), ("cancel_flight", "vendor-b")]
            [report] = result.of("book_car")
            assert report.count("book_flight FL-101") == 2, report
            [info] = engine.store.list_runs()
            assert info.status is RunStatus.COMPENSATED
        finally:
            vendor_b.close()

    def test_calls_of_one_model_message_are_one_batch(
            self, adapter: AdapterHarness, engine: RAC, world: TravelWorld,
            monkeypatch: pytest.MonkeyPatch) -> None:
        """Promise 6: the calls of one model message reach RAC as one batch (``batch=`` of
        ``Run.execute``/``aexecute``, see :mod:`rac.adapters.batches`), and the calls of
        another message as another, whether the framework runs them in parallel or one after
        another. Without it a call that starts after its sibling's failure rolled the run back
        runs, and the model is told the world is back while it is live. Checked on what the
        adapter passes, since a framework that starts every call at once rarely shows it."""
        seen = _batches_passed(monkeypatch)
        adapter.run_turn(engine, world, [[_hotel()], [_flight(), _car()], "Booked."],
                         agent_id="travel")
        batch = dict(seen)
        assert set(batch) == {"book_hotel", "book_flight", "book_car"}, seen
        assert batch["book_flight"] is not None, (
            f"the calls of one model message were passed no batch: {seen}")
        assert batch["book_flight"] == batch["book_car"], (
            f"the calls of one model message were passed different batches: {seen}")
        assert batch["book_hotel"] != batch["book_flight"], (
            f"the calls of two model messages were passed one batch: {seen}")

    def test_framework_error_handling_never_hides_the_outcome(
            self, adapter: AdapterHarness, engine: RAC, world: TravelWorld) -> None:
        """Promise 2: with the framework's own handling of tool errors turned on (a handler
        that turns an exception into an answer, registered after RAC), RAC still sees each
        call's real outcome: a transient failure is retried, a permanent one rolls the turn
        back, and the model gets RAC's report, not the handler's text.

        Runs when the harness has ``run_turn_handling_errors`` (same arguments as
        ``run_turn``): the turn with the framework's error handling on."""
        turn = getattr(adapter, "run_turn_handling_errors", None)
        if turn is None:
            _skip_without(adapter, "run_turn_handling_errors", "the framework's own tool error "
                          "handling turned on")
        world.fail("book_hotel", "transient", times=1)
        world.fail("book_car", "permanent", message="no cars left")
        result = turn(engine, world, [[_flight()], [_hotel()], [_car()], "Sorry."],
                      agent_id="travel")
        assert world.calls["book_hotel"] == 2, "the transient failure was not seen: no retry"
        assert_no_live_effects(world)
        assert_compensated_once(world)
        assert self.compensations(self.records(engine)) == ["cancel_hotel", "cancel_flight"]
        [report] = result.of("book_car")
        assert "no cars left" in report and "book_flight FL-101" in report, report
        [info] = engine.store.list_runs()
        assert info.status is RunStatus.COMPENSATED

    def test_a_call_around_the_tool_hook_is_logged_or_refused(
            self, adapter: AdapterHarness, engine: RAC, world: TravelWorld) -> None:
        """Promise 3: a call made through a path of the framework that goes around the hook
        the model's calls take (SK's ``kernel.invoke``, a tool object called directly), while
        a run is open, is a call of that run or is refused: never invisible. A later failure
        of the run undoes it, or it never happened.

        Runs when the harness has ``call_around_hook(engine, world, call, agent_id=...)``:
        it calls ``call`` (tool, args) that way, in the run open in the caller's context."""
        around = getattr(adapter, "call_around_hook", None)
        if around is None:
            _skip_without(adapter, "call_around_hook", "a framework path around the tool hook")
        world.fail("book_car", "permanent", message="no cars")
        with engine.run(agent_id="trip") as run:
            try:
                around(engine, world, _flight(), agent_id="travel")
            except Exception:  # noqa: BLE001 - refused: then it must not have booked
                pass
            result = adapter.run_turn(engine, world, [[_car()], "Sorry."], agent_id="travel")
        assert_no_live_effects(world)
        flights = [r for r in run.records() if r.tool.endswith("book_flight")]
        if world.calls.get("book_flight"):
            assert [str(r.status) for r in flights] == ["compensated"], flights
            [report] = result.of("book_car")
            assert "book_flight FL-101" in report, report
        assert run.status is RunStatus.COMPENSATED

    def test_framework_persistence_resumes_the_crashed_run(
            self, adapter: AdapterHarness, log_path: Path, tmp_path: Path) -> None:
        """Promise 4: the framework's own persistence (a saved ``Context``, ``@persist``, a
        checkpointer) resuming a turn whose process died goes on with the crashed run, or
        learns of it and says so: nothing the crashed process booked is booked again, a later
        failure undoes it too and the model hears so, and no run is left ``running``.

        Runs when the harness has ``run_persisted_turn(engine, world, script, *, agent_id,
        state_path)`` (the turn with the framework saving its state under ``state_path`` as
        its users do; called in a subprocess that dies inside ``get_weather``, after the
        flight and the hotel) and ``resume_persisted_turn(...)`` (same arguments, returns a
        :class:`TurnResult`: the saved state resumed in this process, the model playing
        ``script``)."""
        resume = getattr(adapter, "resume_persisted_turn", None)
        if resume is None or getattr(adapter, "run_persisted_turn", None) is None:
            _skip_without(adapter, "run_persisted_turn", "the framework's own persistence, "
                          "resumed after a crash, with resume_persisted_turn")
        world_path, state_path = tmp_path / "world.db", tmp_path / "framework-state"
        proc = _child(type(self), type(adapter), "persisted", log_path, world_path, state_path)
        assert proc.returncode == _CRASH_CODE, proc.stderr[-4000:]
        world = TravelWorld(str(world_path))
        engine = self.make_engine(log_path)
        try:
            assert sorted(b["kind"] for b in world.live()) == ["flight", "hotel"]
            world.fail("book_car", "permanent", message="no cars")
            result = resume(engine, world, [[_car()], "Sorry, nothing is booked."],
                            agent_id="travel", state_path=state_path)
            kinds = [b["kind"] for b in world.bookings()]
            assert (kinds.count("flight"), kinds.count("hotel")) == (1, 1), (
                f"the resumed turn booked again what the crashed process had booked: "
                f"{world.bookings()}")
            assert_no_live_effects(world)  # the crashed process's bookings were undone too
            assert_compensated_once(world)
            [report] = result.of("book_car")
            assert "book_flight FL-101" in report and "book_hotel HT-102" in report, report
            left = [(i.run_id, str(i.status)) for i in engine.store.list_runs()
                    if i.status in (RunStatus.RUNNING, RunStatus.COMPLETED)]
            assert left == [], f"runs left running or completed with everything undone: {left}"
        finally:
            engine.store.close()
            world.close()

    def test_delegated_work_joins_the_parent_run(self, adapter: AdapterHarness, engine: RAC,
                                                 world: TravelWorld) -> None:
        """Promise 5: the calls of an agent the parent's model delegates to (an agent used as
        a tool, a manager's delegation, CodeAct's code) are calls of the parent's run: the
        parent's later failure undoes them and the parent's model hears it. The delegation
        itself is no side effect left live.

        Runs when the harness has ``run_delegating_turn(engine, world, script, delegate, *,
        agent_id)``: the parent's model delegates first (the framework's own way), the
        delegate's model plays ``delegate`` with the world's tools, then the parent's plays
        ``script``; returns what the parent's model was told."""
        turn = getattr(adapter, "run_delegating_turn", None)
        if turn is None:
            _skip_without(adapter, "run_delegating_turn", "an agent delegating to another")
        world.fail("book_car", "permanent", message="no cars")
        result = turn(engine, world, [[_car()], "Sorry, nothing is booked."],
                      [[_flight()], "Booked flight FL-101."], agent_id="travel")
        assert_no_live_effects(world)
        assert_compensated_once(world)
        recs = self.records(engine)
        assert self.compensations(recs) == ["cancel_flight"]
        assert len({r.run_id for r in recs}) == 1, (
            f"the delegate's calls are not in the parent's run: {self.actions(recs)}")
        [report] = result.of("book_car")
        assert "book_flight FL-101" in report, report
        [info] = engine.store.list_runs()
        assert info.status is RunStatus.COMPENSATED, (info.status, self.actions(recs))

    def test_the_parent_hears_what_its_delegate_undid(self, adapter: AdapterHarness,
                                                      engine: RAC, world: TravelWorld) -> None:
        """Promise 5: when a call of the delegate fails for good, what was done is rolled back
        and the parent's model is told what was undone, whatever the delegate's model answers
        (here: nothing about it). Runs with ``run_delegating_turn``, as above. The run ends
        ``compensated`` (rolled back whole) or, in an adapter that runs the delegate in a
        nested scope of the parent's run, ``completed`` (the delegate's scope rolled back, the
        parent's turn then ended): either way nothing is live and the parent was told."""
        turn = getattr(adapter, "run_delegating_turn", None)
        if turn is None:
            _skip_without(adapter, "run_delegating_turn", "an agent delegating to another")
        world.fail("book_car", "permanent", message="no cars")
        result = turn(engine, world, ["All done."], [[_flight()], [_car()], "Done."],
                      agent_id="travel")
        assert_no_live_effects(world)
        assert_compensated_once(world)
        recs = self.records(engine)
        assert len({r.run_id for r in recs}) == 1, self.actions(recs)
        heard = [t.content for t in result.told if "book_flight FL-101" in t.content]
        assert heard, f"the parent's model was never told the flight was undone: {result.told}"
        [info] = engine.store.list_runs()
        assert info.status in (RunStatus.COMPENSATED, RunStatus.COMPLETED), (
            info.status, self.actions(recs))

    def test_a_pause_resumed_after_a_rollback_is_told(self, adapter: AdapterHarness,
                                                      engine: RAC, world: TravelWorld) -> None:
        """Promise 7: a human-in-the-loop step paused when the run is rolled back, resumed
        later with the person's approval, does not go on as if nothing happened: the approved
        call does not run, and the model hears what was undone before anything else.

        Runs when the harness has ``run_paused_turn(engine, world, before, after, *,
        agent_id)``: ``before``'s last step asks for ``charge_card``, which pauses for a
        person's approval through the framework's own human-in-the-loop; at the pause the run
        is rolled back the way the framework's users do it (a cancelled handler, an operator's
        ``rac undo``); then the paused work is resumed with the approval and the model plays
        ``after``. Returns everything the model was told."""
        turn = getattr(adapter, "run_paused_turn", None)
        if turn is None:
            _skip_without(adapter, "run_paused_turn", "a human-in-the-loop pause resumed after a "
                          "rollback")
        result = turn(engine, world, [[_flight()], [_charge()]],
                      [[_flight(2)], "Booked again; please approve the charge once more."],
                      agent_id="travel")
        assert world.calls.get("charge_card", 0) == 0, "the approved charge ran after the " \
            "rollback, the model not told"
        [first] = [b for b in world.bookings() if b["booking_id"] == "FL-101"]
        assert (first["status"], first["cancellations"]) == ("cancelled", 1), world.bookings()
        assert [b["kind"] for b in world.live()] == ["flight"]  # booked again, knowingly
        after_pause = [t for t in result.told if t.tool == "charge_card"]
        assert after_pause and "book_flight FL-101" in after_pause[-1].content, result.told

    def test_a_cache_never_serves_a_read_from_before_a_rollback(
            self, adapter: AdapterHarness, log_path: Path, world: TravelWorld) -> None:
        """Promise 8: a read the model made before a rollback is not served again as current
        afterwards (a framework's cache of tool results): asked again after the rollback, the
        booking reads as cancelled.

        Runs when the harness has ``run_turn_cached(engine, world, script, *, agent_id)``:
        the turn with the framework's own caching of tool results on, and the world's
        ``get_booking`` offered besides ``world.tools()``."""
        turn = getattr(adapter, "run_turn_cached", None)
        if turn is None:
            _skip_without(adapter, "run_turn_cached", "the framework's own cache of tool results "
                          "turned on")
        engine = self.make_engine(log_path, read_only=[*TRAVEL_READ_ONLY, "get_booking"])
        world.fail("book_car", "permanent", message="no cars")
        read = ("get_booking", {"booking_id": "FL-101"})
        try:
            result = turn(engine, world, [[_flight()], [read], [_car()], [read], "Sorry."],
                          agent_id="travel")
            before, after = result.of("get_booking")
            assert "live" in before, before
            assert "cancelled" in after and "live" not in after, (
                f"the read from before the rollback was served again: {after!r}")
            assert_no_live_effects(world)
        finally:
            engine.store.close()

    def test_crash_mid_call_left_to_recover(self, adapter: AdapterHarness, log_path: Path,
                                            tmp_path: Path) -> None:
        """The process dying during a call (``os._exit`` in a subprocess running the turn)
        leaves the run running with its call in doubt; a fresh engine's ``recover`` (what
        ``rac recover`` runs) undoes what the turn did."""
        world_path = tmp_path / "world.db"
        proc = _child(type(self), type(adapter), "mid-call", log_path, world_path,
                      tmp_path / "unused")
        assert proc.returncode == _CRASH_CODE, proc.stderr[-4000:]
        world = TravelWorld(str(world_path))
        fresh = self.make_engine(log_path, tools=world.tools())
        try:
            assert [b["kind"] for b in world.live()] == ["flight"]  # nothing undone yet
            [info] = fresh.store.list_runs()
            assert info.status is RunStatus.RUNNING
            [recovered] = fresh.recover(stale_after=0.0)
            assert recovered.run_id == info.run_id
            assert world.calls.get("cancel_flight") == 1
            assert "flight" not in [b["kind"] for b in world.live()]
            final = fresh.store.get_run(info.run_id)
            assert final is not None
            assert final.status not in (RunStatus.RUNNING, RunStatus.COMPLETED)
        finally:
            fresh.store.close()
            world.close()


#: Exit status of the crash child (``os._exit`` inside ``book_hotel``, or ``get_weather``).
_CRASH_CODE = 86
#: The crash child: the conformance class's engine and the adapter's harness (made with no
#: arguments), the turn run against a world in a file. "mid-call": the process ends inside
#: book_hotel; "persisted": the turn runs with the framework's persistence on and the process
#: ends inside get_weather, after the flight and the hotel.
_CRASH_CHILD = f"""
import importlib, os, sys
from pathlib import Path
from rac.testing.world import TravelWorld

def find(module, qualname):
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj

(suite_module, suite_name, harness_module, harness_name, mode, log_path, world_path,
 state_path) = sys.argv[1:]
suite = find(suite_module, suite_name)()
harness = find(harness_module, harness_name)()
world = TravelWorld(world_path)
engine = suite.make_engine(Path(log_path))
flight = ("book_flight", {{"passenger": "ann1", "origin": "SFO", "dest": "CDG"}})
hotel = ("book_hotel", {{"guest": "ann", "city": "Paris", "nights": 2}})
if mode == "mid-call":
    world.on_call("book_hotel", lambda args: os._exit({_CRASH_CODE}))
    harness.run_turn(engine, world, [[flight], [hotel], "Booked."], agent_id="travel")
else:
    world.on_call("get_weather", lambda args: os._exit({_CRASH_CODE}))
    harness.run_persisted_turn(engine, world, [
        [flight], [hotel], [("get_weather", {{"city": "Paris"}})], "Booked."],
        agent_id="travel", state_path=Path(state_path))
sys.exit(1)  # the turn finished: the crash never happened
"""


def _child(suite: type, harness: type, mode: str, log_path: Path, world_path: Path,
           state_path: Path) -> subprocess.CompletedProcess[str]:
    """Run the crash child (see :data:`_CRASH_CHILD`) and return how it ended."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    return subprocess.run(
        [sys.executable, "-c", _CRASH_CHILD, suite.__module__, suite.__qualname__,
         harness.__module__, harness.__qualname__, mode, str(log_path), str(world_path),
         str(state_path)],
        env=env, capture_output=True, text=True, timeout=600, check=False)


def _chain_holds(exc: BaseException, wanted: BaseException) -> bool:
    """True if ``wanted`` is ``exc`` or one of its causes/contexts (a framework may re-raise
    its control flow wrapped)."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        if cur is wanted or (type(cur) is type(wanted) and str(cur) == str(wanted)):
            return True
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return False


def _batches_passed(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Hashable | None]]:
    """Record ``(tool, batch)`` for every call an adapter sends through ``Run.execute`` or
    ``Run.aexecute`` until the test ends (the calls still run as they would)."""
    seen: list[tuple[str, Hashable | None]] = []
    execute, aexecute = Run.execute, Run.aexecute

    def noting(self: Run, name: str, args: dict[str, Any], invoke: Any, *a: Any,
               **kw: Any) -> Any:
        seen.append((name, kw.get("batch")))
        return execute(self, name, args, invoke, *a, **kw)

    async def anoting(self: Run, name: str, args: dict[str, Any], ainvoke: Any, *a: Any,
                      **kw: Any) -> Any:
        seen.append((name, kw.get("batch")))
        return await aexecute(self, name, args, ainvoke, *a, **kw)

    monkeypatch.setattr(Run, "execute", noting)
    monkeypatch.setattr(Run, "aexecute", anoting)
    return seen


#: A harness module imports the turn vocabulary from here too (it lives in rac.testing.turns).
__all__ = ["AdapterConformance", "AdapterHarness", "Call", "Step", "Told", "TurnResult"]
