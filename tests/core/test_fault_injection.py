"""``rac_inject_fault``: a plugin makes one attempt fail on purpose, before the tool runs or
after its effect, for actions and compensations alike, under every call path."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import rac
from rac.testing import TravelWorld


class Injector:
    """Fails the attempts it is told to: ``(tool, phase) -> exception factory``."""

    def __init__(self, faults: dict[tuple[str, str], Callable[[], BaseException]]) -> None:
        self.faults = faults
        self.asked: list[tuple[str, str, str, int]] = []

    @rac.hookimpl
    def rac_inject_fault(self, record: rac.Record, args: dict[str, Any], phase: str,
                         result: Any) -> BaseException | None:
        self.asked.append((record.tool, str(record.kind), phase, record.attempts))
        make = self.faults.get((record.tool, phase))
        return make() if make is not None else None


def _trip(run: rac.Run, world: TravelWorld) -> None:
    run.call(world.book_flight, passenger="ann", origin="SFO", dest="CDG")
    run.call(world.book_hotel, guest="ann", city="Paris", nights=2)


def test_a_fault_before_the_call_means_the_tool_never_ran(
        make_engine: Callable[..., rac.RAC], world: TravelWorld) -> None:
    injector = Injector({("book_hotel", "before"): lambda: rac.PermanentError("injected")})
    engine = make_engine(plugins=[injector])
    with pytest.raises(rac.ToolCallFailed) as failed, engine.run() as run:
        _trip(run, world)
    assert [b["kind"] for b in world.bookings()] == ["flight"]  # the hotel was never booked
    assert world.live() == []
    assert failed.value.report.clean and run.status == "compensated"
    assert ("book_hotel", "action", "after", 1) not in injector.asked


def test_a_fault_after_the_effect_leaves_a_call_that_may_have_happened(
        make_engine: Callable[..., rac.RAC], world: TravelWorld) -> None:
    injector = Injector({("book_hotel", "after"): lambda: TimeoutError("injected")})
    engine = make_engine(plugins=[injector])
    with pytest.raises(rac.ToolCallFailed) as failed, engine.run() as run:
        _trip(run, world)
    # the hotel was booked, then the answer was lost: RAC cannot call it undone
    assert [b["kind"] for b in world.live()] == ["hotel"]
    report = failed.value.report
    assert not report.clean and run.status == "needs_attention"
    assert [u.tool for u in report.left_live] == ["book_hotel"]
    assert "The world is back" not in str(failed.value)


def test_a_compensation_can_be_made_to_fail(
        make_engine: Callable[..., rac.RAC], world: TravelWorld) -> None:
    world.fail("book_car", "permanent")
    injector = Injector({("cancel_hotel", "before"): lambda: rac.PermanentError("injected")})
    engine = make_engine(plugins=[injector])
    with pytest.raises(rac.ToolCallFailed) as failed, engine.run() as run:
        _trip(run, world)
        run.call(world.book_car, driver="ann", city="Paris")
    assert [b["kind"] for b in world.live()] == ["hotel"]
    assert [u.tool for u in failed.value.report.compensation_failed] == ["book_hotel"]
    assert ("cancel_hotel", "compensation", "before", 1) in injector.asked


async def test_the_async_path_injects_too(make_engine: Callable[..., rac.RAC],
                                          world: TravelWorld) -> None:
    injector = Injector({("book_hotel", "after"): lambda: TimeoutError("injected")})
    engine = make_engine(plugins=[injector])
    with pytest.raises(rac.ToolCallFailed):
        async with engine.run() as run:
            await run.acall(world.book_flight, passenger="ann", origin="SFO", dest="CDG")
            await run.acall(world.book_hotel, guest="ann", city="Paris", nights=2)
    assert [b["kind"] for b in world.live()] == ["hotel"]


def test_an_engine_without_an_injector_is_not_asked(make_engine: Callable[..., rac.RAC],
                                                    world: TravelWorld) -> None:
    engine = make_engine()
    assert not engine.hooks.listened("rac_inject_fault")
    injector = Injector({})
    engine.register_plugin(injector)
    assert engine.hooks.listened("rac_inject_fault") and not engine.hooks.defaults_only
    with engine.run() as run:
        _trip(run, world)
    assert [a[:3] for a in injector.asked] == [
        ("book_flight", "action", "before"), ("book_flight", "action", "after"),
        ("book_hotel", "action", "before"), ("book_hotel", "action", "after")]


class Attempts:
    """Records every attempt's start and end."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, int, str | None]] = []

    @rac.hookimpl
    def rac_attempt_started(self, record: rac.Record) -> None:
        self.seen.append(("start", record.tool, record.attempts, None))

    @rac.hookimpl
    def rac_attempt_finished(self, record: rac.Record, error: BaseException | None) -> None:
        self.seen.append(("end", record.tool, record.attempts,
                          type(error).__name__ if error is not None else None))


def test_every_attempt_is_announced_with_its_number_and_outcome(
        make_engine: Callable[..., rac.RAC], world: TravelWorld) -> None:
    world.fail("book_hotel", "transient", times=1)
    world.fail("book_car", "permanent")
    attempts = Attempts()
    engine = make_engine(plugins=[attempts])
    with pytest.raises(rac.ToolCallFailed), engine.run() as run:
        _trip(run, world)
        run.call(world.book_car, driver="ann", city="Paris")
    assert attempts.seen == [
        ("start", "book_flight", 1, None), ("end", "book_flight", 1, None),
        ("start", "book_hotel", 1, None), ("end", "book_hotel", 1, "TransientError"),
        ("start", "book_hotel", 2, None), ("end", "book_hotel", 2, None),
        ("start", "book_car", 1, None), ("end", "book_car", 1, "PermanentError"),
        ("start", "cancel_hotel", 1, None), ("end", "cancel_hotel", 1, None),
        ("start", "cancel_flight", 1, None), ("end", "cancel_flight", 1, None)]
    assert not engine.hooks.defaults_only  # a listener: the shortcut steps aside
