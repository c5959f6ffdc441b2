"""Issue 25, before-images compare before they restore: a restore writes the old value only if
the object still holds the value the action wrote; a later writer's change is never overwritten
and the action is named as conflicting, never "undone"."""

from __future__ import annotations

from typing import Any

import pytest

import rac
from rac.models import RecordStatus, RunStatus
from rac.testing import TravelWorld

FLIGHT = {"passenger": "ann", "origin": "SFO", "dest": "CDG"}


def restoring_engine(make_engine: Any, world: TravelWorld) -> rac.RAC:
    comps = {"book_flight": "cancel_flight", "book_hotel": "cancel_hotel",
             "book_car": "cancel_car",
             "change_detail": rac.Compensation(
                 "change_detail", args={"booking_id": "args.booking_id",
                                        "detail": "before.detail"},
                 before=rac.BeforeImage("get_booking", args={"booking_id": "args.booking_id"}))}
    return make_engine(tools=[*world.tools(), world.get_booking, world.change_detail],
                       compensations=comps,
                       read_only=["get_booking", "search_flights", "get_weather"])


def test_a_later_writers_change_is_not_overwritten_and_the_seat_is_named(
        make_engine: Any, world: TravelWorld) -> None:
    engine = restoring_engine(make_engine, world)
    seat = world.book_flight(**FLIGHT)["booking_id"]  # held before the run: SFO->CDG
    world.fail("book_car", "permanent", message="no cars")
    with pytest.raises(rac.ToolCallFailed) as failed, engine.run() as run:
        run.call("change_detail", booking_id=seat, detail="seat 12A")
        world.change_detail(seat, "seat 30F")  # another task moves the passenger meanwhile
        run.call("book_car", driver="ann", city="Paris")

    assert world.detail_of(seat) == "seat 30F"  # the later writer's change stands
    report = failed.value.report
    assert not report.clean and report.status is RunStatus.NEEDS_ATTENTION
    [left] = report.left_live
    assert left.tool == "change_detail" and "later writer" in (left.error or "")
    text = str(failed.value)
    assert "world is back" not in text and "STILL LIVE" in text
    (rec,) = [r for r in engine.store.get_records(run.run_id) if r.tool == "change_detail"
              and r.kind.value == "action"]
    assert rec.status is RecordStatus.COMPENSATION_FAILED
    assert "'seat 30F' now, not the 'seat 12A' change_detail wrote" in (rec.error or "")


def test_an_object_that_still_holds_what_the_action_wrote_is_restored(
        make_engine: Any, world: TravelWorld) -> None:
    engine = restoring_engine(make_engine, world)
    seat = world.book_flight(**FLIGHT)["booking_id"]
    world.fail("book_car", "permanent", message="no cars")
    with pytest.raises(rac.ToolCallFailed) as failed, engine.run() as run:
        run.call("change_detail", booking_id=seat, detail="seat 12A")
        run.call("book_car", driver="ann", city="Paris")
    assert world.detail_of(seat) == "SFO->CDG" and failed.value.report.clean


def test_an_object_already_back_as_before_is_a_clean_no_op(make_engine: Any,
                                                           world: TravelWorld) -> None:
    engine = restoring_engine(make_engine, world)
    seat = world.book_flight(**FLIGHT)["booking_id"]
    world.fail("book_car", "permanent", message="no cars")
    with pytest.raises(rac.ToolCallFailed) as failed, engine.run() as run:
        run.call("change_detail", booking_id=seat, detail="seat 12A")
        world.change_detail(seat, "SFO->CDG")  # someone already put it back
        run.call("book_car", driver="ann", city="Paris")
    assert world.detail_of(seat) == "SFO->CDG" and failed.value.report.clean


def test_an_object_that_cannot_be_read_again_is_not_restored_blindly(
        make_engine: Any, world: TravelWorld) -> None:
    engine = restoring_engine(make_engine, world)
    seat = world.book_flight(**FLIGHT)["booking_id"]
    world.fail("book_car", "permanent", message="no cars")
    with pytest.raises(rac.ToolCallFailed) as failed, engine.run() as run:
        run.call("change_detail", booking_id=seat, detail="seat 12A")
        world.fail("get_booking", "permanent", message="bookings API down")
        run.call("book_car", driver="ann", city="Paris")
    assert world.detail_of(seat) == "seat 12A"
    [left] = failed.value.report.left_live
    assert left.tool == "change_detail" and "could not be read again" in (left.error or "")
