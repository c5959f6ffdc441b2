"""Failures are read from structure, never free text; failed compensations are retried, then
left visible, and never reported as undone."""

from __future__ import annotations

import json
from typing import Any

import pytest

import rac
from rac.testing import TravelWorld, VirtualClock


def test_error_field_in_a_result_is_a_failure(make_engine: Any, world: TravelWorld) -> None:
    def book_show(name: str) -> dict[str, Any]:
        return {"error": "no seats", "status_code": 409}

    engine = make_engine(tools=[*world.tools(), book_show], read_only=["book_show"])
    with engine.run() as run:
        run.call("book_flight", passenger="a", origin="X", dest="Y")
        with pytest.raises(rac.ToolCallFailed) as failed:
            run.call(book_show, name="x")
    assert failed.value.report.error == "no seats"
    assert world.live() == []


@pytest.mark.parametrize("result", [
    {"status": "failed", "message": "gateway said no"},
    {"success": False},
    {"ok": False, "detail": "quota"},
    json.dumps({"error": {"code": "E1"}}),
])
def test_structured_failure_signals(make_engine: Any, result: Any) -> None:
    def tool(x: int) -> Any:
        return result

    engine = make_engine(tools=[tool], compensations={}, read_only=["tool"])
    with engine.run() as run, pytest.raises(rac.ToolCallFailed):
        run.call(tool, x=1)


@pytest.mark.parametrize("result", [
    "Booking failed? No: confirmed, though the lounge is unavailable.",
    {"message": "the previous attempt failed but this one worked", "status": "confirmed"},
    {"error": None, "booking_id": "B-1"},
    {"errors_seen": 3},
])
def test_free_text_never_triggers_a_rollback(make_engine: Any, result: Any) -> None:
    def tool(x: int) -> Any:
        return result

    engine = make_engine(tools=[tool], compensations={}, read_only=["tool"])
    with engine.run() as run:
        assert run.call(tool, x=1) == result
    assert run.status is rac.RunStatus.COMPLETED


def test_transient_error_result_is_retried(make_engine: Any, clock: VirtualClock) -> None:
    answers = [{"error": "busy", "retryable": True}, {"booking_id": "Z-1"}]

    def tool(x: int) -> Any:
        return answers.pop(0)

    engine = make_engine(tools=[tool], compensations={}, read_only=["tool"])
    with engine.run() as run:
        assert run.call(tool, x=1) == {"booking_id": "Z-1"}
    assert clock.sleeps == [0.5]


def test_failed_compensation_is_retried_then_needs_attention(engine: rac.RAC, world: TravelWorld,
                                                             clock: VirtualClock) -> None:
    world.fail("cancel_hotel", "transient", message="hotel API down")
    world.fail("book_car", "permanent")
    with engine.run() as run, pytest.raises(rac.ToolCallFailed) as failed:
        run.call("book_flight", passenger="a", origin="X", dest="Y")
        run.call("book_hotel", guest="a", city="Rome", nights=1)
        run.call("book_car", driver="a", city="Rome")
    report = failed.value.report
    assert world.calls["cancel_hotel"] == 3  # its own policy: 3 attempts, 1 s then 2 s apart
    assert clock.sleeps == [1.0, 2.0]
    # the rollback went on: the flight was cancelled even though the hotel could not be
    assert [b["kind"] for b in world.live()] == ["hotel"]
    assert [u.tool for u in report.compensated] == ["book_flight"]
    assert [u.tool for u in report.compensation_failed] == ["book_hotel"]
    assert run.status is rac.RunStatus.NEEDS_ATTENTION
    assert engine.store.list_runs(status=rac.RunStatus.NEEDS_ATTENTION)[0].run_id == run.run_id
    hotel = run.records()[1]
    assert hotel.status is rac.RecordStatus.COMPENSATION_FAILED
    assert "cancel_hotel failed after 3 attempt(s): hotel API down" == hotel.error
    text = str(failed.value)
    assert "STILL LIVE: book_hotel HT-102 (undo via cancel_hotel failed" in text
    assert "Undone, newest first: book_flight FL-101" in text


def test_compensation_returning_an_error_is_not_counted_as_done(make_engine: Any,
                                                                world: TravelWorld) -> None:
    def cancel_flight(booking_id: str) -> dict[str, Any]:
        return {"success": False, "message": "too late to cancel"}

    tools = [t for t in world.tools() if t.__name__ != "cancel_flight"] + [cancel_flight]
    engine = make_engine(tools=tools)
    world.fail("book_car", "permanent")
    with engine.run() as run, pytest.raises(rac.ToolCallFailed) as failed:
        run.call("book_flight", passenger="a", origin="X", dest="Y")
        run.call("book_car", driver="a", city="Rome")
    assert failed.value.report.compensated == []
    assert failed.value.report.compensation_failed[0].tool == "book_flight"
    assert run.status is rac.RunStatus.NEEDS_ATTENTION
    assert len(world.live("flight")) == 1
