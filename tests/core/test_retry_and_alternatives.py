"""Retries count every call, back off on the virtual clock, honour Retry-After; alternatives run
in order and their own compensators undo them."""

from __future__ import annotations

from typing import Any

import pytest

import rac
from rac.testing import TravelWorld, VirtualClock, assert_no_live_effects

CAR = {"driver": "ann", "city": "Paris"}


def test_transient_failure_is_retried_then_succeeds(engine: rac.RAC, world: TravelWorld,
                                                    clock: VirtualClock) -> None:
    world.fail("book_car", "transient", times=2)
    with engine.run() as run:
        result = run.call("book_car", **CAR)
    assert result["booking_id"].startswith("CR-")
    assert world.calls["book_car"] == 3
    assert clock.sleeps == [0.5, 1.0]
    (rec,) = run.records()
    assert rec.attempts == 3 and rec.status is rac.RecordStatus.COMPLETED


def test_max_attempts_is_the_total_number_of_calls(engine: rac.RAC, world: TravelWorld) -> None:
    world.fail("book_car", "transient")
    with engine.run() as run, pytest.raises(rac.ToolCallFailed) as failed:
        run.call("book_car", **CAR)
    assert world.calls["book_car"] == 3
    assert failed.value.report.attempts == 3
    assert "after 3 attempts" in str(failed.value)
    assert run.records()[0].attempts == 3


def test_permanent_failure_is_not_retried(engine: rac.RAC, world: TravelWorld,
                                          clock: VirtualClock) -> None:
    world.fail("book_flight", "permanent")
    with engine.run() as run, pytest.raises(rac.ToolCallFailed) as failed:
        run.call("book_flight", passenger="a", origin="X", dest="Y")
    assert world.calls["book_flight"] == 1 and clock.sleeps == []
    assert "after 1 attempt." in str(failed.value)


def test_retry_after_is_honoured(engine: rac.RAC, world: TravelWorld, clock: VirtualClock) -> None:
    world.fail("book_car", "transient", times=1, retry_after=7.0)
    with engine.run() as run:
        run.call("book_car", **CAR)
    assert clock.sleeps == [7.0]


class HTTPError(Exception):
    def __init__(self, status_code: int, headers: dict[str, str] | None = None) -> None:
        super().__init__(f"HTTP {status_code}")
        self.status_code = status_code
        self.headers = headers or {}


@pytest.mark.parametrize(("error", "calls", "sleeps"), [
    (HTTPError(503), 3, [0.5, 1.0]),
    (HTTPError(429, {"retry-after": "4"}), 3, [4.0, 4.0]),
    (HTTPError(404), 1, []),
    (TimeoutError("read timed out"), 3, [0.5, 1.0]),
    (ConnectionResetError("reset"), 3, [0.5, 1.0]),
    (ValueError("bad input"), 1, []),
])
def test_errors_are_classified_by_type_and_status(make_engine: Any, clock: VirtualClock,
                                                  error: Exception, calls: int,
                                                  sleeps: list[float]) -> None:
    n = {"calls": 0}

    def flaky(x: int) -> dict[str, Any]:
        n["calls"] += 1
        raise error

    engine = make_engine(tools=[flaky], compensations={}, read_only=["flaky"])
    with engine.run() as run, pytest.raises(rac.ToolCallFailed):
        run.call(flaky, x=1)
    assert n["calls"] == calls and clock.sleeps == sleeps


def test_backoff_is_capped_and_jittered_deterministically() -> None:
    policy = rac.RetryPolicy(max_attempts=10, initial_delay=1, multiplier=2, max_delay=5,
                             jitter=0)
    assert [policy.delay(n) for n in range(1, 6)] == [1, 2, 4, 5, 5]
    import random

    jittered = rac.RetryPolicy(initial_delay=1, jitter=0.5)
    values = {jittered.delay(1, rng=random.Random(s)) for s in range(20)}
    assert all(0.5 <= v <= 1.5 for v in values) and len(values) > 1
    with pytest.raises(ValueError, match="max_attempts"):
        rac.RetryPolicy(max_attempts=0)
    with pytest.raises(ValueError, match="max_delay"):
        rac.RetryPolicy(initial_delay=10, max_delay=1)


def test_alternative_runs_and_is_later_undone_by_its_own_compensator(
        make_engine: Any, world: TravelWorld) -> None:
    engine = make_engine(alternatives={"book_car": ["rent_car"]})
    world.fail("book_car", "permanent", message="sold out")
    world.fail("charge_card", "permanent", message="declined")
    with engine.run() as run:
        run.call("book_flight", passenger="ann", origin="SFO", dest="CDG")
        car = run.call("book_car", **CAR)
        assert car["detail"] == "partner"
        with pytest.raises(rac.ToolCallFailed) as failed:
            run.call("charge_card", customer="ann", amount=510.0)
    assert_no_live_effects(world)
    assert [u.compensator for u in failed.value.report.compensated] == ["return_rental",
                                                                        "cancel_flight"]
    recs = {r.seq: r for r in run.records()}
    assert recs[2].tool == "book_car" and recs[2].status is rac.RecordStatus.FAILED
    assert recs[3].tool == "rent_car" and recs[3].alternative_of == 2
    assert recs[3].status is rac.RecordStatus.COMPENSATED


def test_failed_alternatives_are_reported_and_never_count_as_success(
        make_engine: Any, world: TravelWorld) -> None:
    engine = make_engine(alternatives={"book_car": ["rent_car"]})
    world.fail("book_car", "permanent", message="sold out")
    world.fail("rent_car", "permanent", message="partner closed")
    with engine.run() as run:
        run.call("book_flight", passenger="ann", origin="SFO", dest="CDG")
        with pytest.raises(rac.ToolCallFailed) as failed:
            run.call("book_car", **CAR)
    report = failed.value.report
    assert report.failed_tool == "book_car"
    assert [(a.tool, a.error) for a in report.alternatives] == [("rent_car", "partner closed")]
    assert "alternatives tried: rent_car (failed: partner closed)" in str(failed.value)
    assert_no_live_effects(world)
