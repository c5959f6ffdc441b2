"""The failure path end to end: rollback order, what is undone, what the agent is told."""

from __future__ import annotations

from typing import Any

import pytest

import rac
from rac.testing import TravelWorld, assert_no_live_effects, assert_rollback_order, statuses


def book_trip(engine: rac.RAC, trip: list[tuple[str, dict[str, Any]]]) -> tuple[rac.Run, str]:
    message = ""
    with engine.run() as run:
        for tool, args in trip:
            try:
                run.call(tool, **args)
            except rac.ToolCallFailed as e:
                message = str(e)
                break
    return run, message


def test_failed_car_undoes_hotel_then_flight(engine: rac.RAC, world: TravelWorld,
                                             trip: list[Any]) -> None:
    world.fail("book_car", "permanent", message="no cars left")
    run, message = book_trip(engine, trip)

    assert_no_live_effects(world)
    assert [e for e in world.ledger() if e[2] == "cancel"] == [
        ("cancel_hotel", "HT-102", "cancel"), ("cancel_flight", "FL-101", "cancel")]
    records = engine.store.get_records(run.run_id)
    assert statuses(records) == [
        ("book_flight", "action", "compensated"),
        ("book_hotel", "action", "compensated"),
        ("book_car", "action", "failed"),
        ("cancel_hotel", "compensation", "completed"),
        ("cancel_flight", "compensation", "completed"),
    ]
    assert [r.compensates for r in records[3:]] == [2, 1]
    assert_rollback_order(records, ["book_hotel", "book_flight"])
    assert run.status is rac.RunStatus.COMPENSATED
    assert engine.store.get_run(run.run_id).status is rac.RunStatus.COMPENSATED  # type: ignore[union-attr]
    assert "book_car failed (permanent: no cars left) after 1 attempt" in message
    assert "book_hotel HT-102 (via cancel_hotel), book_flight FL-101 (via cancel_flight)" in message
    assert len(message.splitlines()) <= 4


def test_success_leaves_effects_and_completes(engine: rac.RAC, world: TravelWorld,
                                              trip: list[Any]) -> None:
    run, message = book_trip(engine, trip)
    assert message == ""
    assert len(world.live()) == 3
    assert run.status is rac.RunStatus.COMPLETED
    assert all(r.status is rac.RecordStatus.COMPLETED for r in run.records())


def test_failure_of_tool_without_compensator_still_rolls_back(
        make_engine: Any, world: TravelWorld, trip: list[Any]) -> None:
    # charge_card has no compensator here; its failure must still undo the bookings.
    comps = {"book_flight": "cancel_flight", "book_hotel": "cancel_hotel"}
    engine = make_engine(compensations=comps)
    world.fail("charge_card", "permanent", message="card declined")
    with engine.run() as run:
        run.call("book_flight", **trip[0][1])
        run.call("book_hotel", **trip[1][1])
        with pytest.raises(rac.ToolCallFailed) as failed:
            run.call("charge_card", customer="ann", amount=720.0)
    assert_no_live_effects(world)
    assert failed.value.report.failed_tool == "charge_card"
    assert [u.tool for u in failed.value.report.compensated] == ["book_hotel", "book_flight"]


def test_independent_actions_are_undone_newest_first(engine: rac.RAC, world: TravelWorld) -> None:
    world.fail("charge_card", "permanent")
    with engine.run() as run:
        for i in range(5):
            run.call("book_hotel", guest=f"g{i}", city="Rome", nights=1)
        with pytest.raises(rac.ToolCallFailed):
            run.call("charge_card", customer="x", amount=1.0)
    cancels = [b for t, b, e in world.ledger() if e == "cancel"]
    assert cancels == ["HT-105", "HT-104", "HT-103", "HT-102", "HT-101"]


def test_exception_leaving_the_run_rolls_it_back(engine: rac.RAC, world: TravelWorld,
                                                 trip: list[Any]) -> None:
    with pytest.raises(KeyError), engine.run() as run:
        run.call("book_flight", **trip[0][1])
        raise KeyError("agent crashed")
    assert_no_live_effects(world)
    assert run.status is rac.RunStatus.COMPENSATED
    assert run.last_report is not None and "aborted by KeyError" in run.last_report.reason


def test_manual_rollback(engine: rac.RAC, world: TravelWorld, trip: list[Any]) -> None:
    with engine.run() as run:
        run.call("book_flight", **trip[0][1])
        report = run.rollback("user changed their mind")
    assert report.clean and [u.tool for u in report.compensated] == ["book_flight"]
    assert_no_live_effects(world)


def test_each_turn_is_its_own_scope(engine: rac.RAC, world: TravelWorld, trip: list[Any]) -> None:
    with engine.run() as turn1:
        turn1.call("book_flight", **trip[0][1])
    world.fail("book_car", "permanent")
    with engine.run() as turn3, pytest.raises(rac.ToolCallFailed):
        turn3.call("book_hotel", **trip[1][1])
        turn3.call("book_car", **trip[2][1])
    assert [b["kind"] for b in world.live()] == ["flight"]
    assert turn1.status is rac.RunStatus.COMPLETED


def test_nested_scope_rolls_back_only_itself(engine: rac.RAC, world: TravelWorld,
                                             trip: list[Any]) -> None:
    world.fail("book_car", "permanent")
    with engine.run() as run:
        run.call("book_flight", **trip[0][1])
        with pytest.raises(rac.ToolCallFailed) as failed, run.scope():
            run.call("book_hotel", **trip[1][1])
            run.call("book_car", **trip[2][1])
        assert [u.tool for u in failed.value.report.compensated] == ["book_hotel"]
        assert [b["kind"] for b in world.live()] == ["flight"]
        with pytest.raises(RuntimeError), run.scope():
            run.call("rent_car", driver="ann", city="Paris")
            raise RuntimeError("changed plan")
        assert [b["kind"] for b in world.live()] == ["flight"]
    assert run.status is rac.RunStatus.COMPLETED
    assert [b["kind"] for b in world.live()] == ["flight"]


def test_replan_after_rollback_completes_the_run(engine: rac.RAC, world: TravelWorld,
                                                 trip: list[Any]) -> None:
    world.fail("book_car", "permanent")
    with engine.run() as run:
        with pytest.raises(rac.ToolCallFailed):
            for tool, args in trip:
                run.call(tool, **args)
        assert run.status is rac.RunStatus.COMPENSATED
        run.call("book_flight", **trip[0][1])
        run.call("book_hotel", **trip[1][1])
        run.call("rent_car", driver="ann", city="Paris")
    assert run.status is rac.RunStatus.COMPLETED
    assert sorted(b["kind"] for b in world.live()) == ["car", "flight", "hotel"]


def test_an_error_after_a_rollback_does_not_roll_back_twice(engine: rac.RAC,
                                                            world: TravelWorld) -> None:
    world.fail("book_car", "permanent")
    with pytest.raises(RuntimeError, match="framework gave up"), engine.run() as run:
        run.call("book_flight", passenger="a", origin="X", dest="Y")
        with pytest.raises(rac.ToolCallFailed):
            run.call("book_car", driver="a", city="Rome")
        first = run.last_report
        raise RuntimeError("framework gave up after the failure")
    assert run.last_report is first and first is not None and first.failed_tool == "book_car"
    assert run.status is rac.RunStatus.COMPENSATED
    assert_no_live_effects(world)


def test_resume_leaves_a_run_its_live_owner_is_still_running(engine: rac.RAC,
                                                             world: TravelWorld) -> None:
    with engine.run() as run:
        run.call("book_flight", passenger="a", origin="X", dest="Y")
        result = engine.resume(run.run_id)
        assert result.outcome == "skipped" and "still running" in (result.reason or "")
        assert len(world.live()) == 1
    assert run.status is rac.RunStatus.COMPLETED


def test_a_run_rebuilt_from_its_log_keeps_its_dependencies(engine: rac.RAC,
                                                           world: TravelWorld) -> None:
    with engine.run() as run:
        flight = run.call("book_flight", passenger="a", origin="X", dest="Y")
    rebuilt = rac.Run.from_log(engine, engine.store.get_run(run.run_id),  # type: ignore[arg-type]
                               engine.store.get_records(run.run_id))
    assert rebuilt.state.dependencies({"booking_id": flight["booking_id"]}) == [1]
