"""How ``rac prove`` judges a point when the scenario is more than one rolled-back run: runs
that finish, nested scopes, checks without ids, points never reached, compensations behind an
alternative. prove must never pass what it could not judge."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

import rac
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld, VirtualClock
from rac.testing.proof import CLEAN, ERROR, FALSE_CLEAN, NAMED, NOT_REACHED, prove


@pytest.fixture
def world() -> Iterator[TravelWorld]:
    w = TravelWorld()
    yield w
    w.close()


def engine_for(world: TravelWorld, *, broken_hotel_undo: bool = False, **kw: Any) -> rac.RAC:
    engine = rac.RAC(compensations=TRAVEL_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                     tools=world.tools(), store="memory://", clock=VirtualClock(),
                     load_entrypoints=False, **kw)
    if broken_hotel_undo:
        def cancel_hotel(booking_id: str) -> dict[str, Any]:
            """Cancel a hotel (planted defect: cancels nothing)."""
            return {"booking_id": booking_id, "cancelled": True}
        engine.register_tools([cancel_hotel])
    return engine


def nested(world: TravelWorld, engine: rac.RAC) -> Callable[[], None]:
    def trip() -> None:
        with engine.run() as run:
            run.call(world.book_flight, passenger="ann", origin="SFO", dest="CDG")
            try:
                with run.scope():
                    run.call(world.book_hotel, guest="ann", city="Paris", nights=2)
                    run.call(world.book_car, driver="ann", city="Paris")
            except rac.ToolCallFailed:
                pass  # the agent is told, and the run goes on to finish
    return trip


def two_runs(world: TravelWorld, engine: rac.RAC) -> Callable[[], None]:
    def trip() -> None:
        with engine.run() as first:
            first.call(world.book_flight, passenger="ann", origin="SFO", dest="CDG")
        try:
            with engine.run() as second:
                second.call(world.book_hotel, guest="ann", city="Paris", nights=2)
                second.call(world.book_car, driver="ann", city="Paris")
        except rac.ToolCallFailed:
            pass
    return trip


def verdict(proof: Any, name: str) -> str:
    return next(r.verdict for r in proof.results if r.point.name == name)


@pytest.mark.parametrize("shape", [nested, two_runs])
def test_a_broken_undo_behind_a_finished_run_is_found_by_id(world: TravelWorld,
                                                             shape: Any) -> None:
    engine = engine_for(world, broken_hotel_undo=True)
    proof = prove(shape(world, engine), engine=engine, check=world.live, setup=world.reset,
                  points=["fail book_car"])
    assert verdict(proof, "fail book_car#1") == FALSE_CLEAN
    assert "book_hotel HT-" in proof.did_nothing[0] and proof.exit_code == 1


@pytest.mark.parametrize("shape", [nested, two_runs])
def test_a_check_without_ids_behind_a_finished_run_cannot_pass(world: TravelWorld,
                                                               shape: Any) -> None:
    engine = engine_for(world, broken_hotel_undo=True)
    proof = prove(shape(world, engine), engine=engine, check=lambda: not world.live(),
                  setup=world.reset, points=["fail book_car"])
    assert verdict(proof, "fail book_car#1") == ERROR  # cannot tell the flight from the hotel
    assert proof.exit_code == 4 and not proof.ok and "NOT PROVED" in proof.table()


def test_the_agents_own_effects_of_a_finished_run_are_not_leftovers(world: TravelWorld) -> None:
    engine = engine_for(world)
    proof = prove(nested(world, engine), engine=engine, check=world.live, setup=world.reset,
                  points=["fail book_car"])
    assert verdict(proof, "fail book_car#1") != FALSE_CLEAN  # the flight is the run's own
    assert proof.ok


def test_a_point_never_reached_fails_the_proof(world: TravelWorld) -> None:
    engine = engine_for(world)
    runs = [0]

    def once() -> None:  # a script consumed by its first run: later runs call nothing
        runs[0] += 1
        if runs[0] > 2:
            return
        with engine.run() as run:
            run.call(world.book_flight, passenger="ann", origin="SFO", dest="CDG")
            run.call(world.book_hotel, guest="ann", city="Paris", nights=2)

    proof = prove(once, engine=engine, check=world.live, setup=world.reset)
    assert {r.verdict for r in proof.results} == {NOT_REACHED}
    assert proof.exit_code == 4 and not proof.ok


def test_crash_points_asked_for_and_impossible_fail_the_proof(world: TravelWorld) -> None:
    engine = engine_for(world)

    def trip() -> None:
        with engine.run() as run:
            run.call(world.book_flight, passenger="ann", origin="SFO", dest="CDG")

    proof = prove(trip, engine=engine, check=world.live, setup=world.reset, crash=True)
    assert proof.skipped and proof.exit_code == 4 and "SKIPPED crash points" in proof.table()


def test_an_invoice_naming_an_order_does_not_blame_the_orders_undo(world: TravelWorld) -> None:
    # the check names each live item by its own id: an item's other ids are not its identity
    engine = engine_for(world)

    def live() -> list[dict[str, Any]]:
        return [{"invoice_id": f"INV-{b['booking_id']}", "for": b["booking_id"]}
                for b in world.live() if b["kind"] == "hotel"]

    def trip() -> None:
        with engine.run() as run:
            run.call(world.book_hotel, guest="ann", city="Paris", nights=2)
            run.call(world.book_car, driver="ann", city="Paris")

    proof = prove(trip, engine=engine, check=live, setup=world.reset, points=["fail book_car"])
    assert not proof.did_nothing
    assert verdict(proof, "fail book_car#1") == CLEAN


def test_a_dict_check_whose_values_are_all_empty_is_clean(world: TravelWorld) -> None:
    engine = engine_for(world)

    def by_kind() -> dict[str, list[str]]:
        return {k: [b["booking_id"] for b in world.live(k)] for k in ("flight", "hotel")}

    def trip() -> None:
        with engine.run() as run:
            run.call(world.book_flight, passenger="ann", origin="SFO", dest="CDG")
            run.call(world.book_hotel, guest="ann", city="Paris", nights=2)

    proof = prove(trip, engine=engine, check=by_kind, setup=world.reset, points=["fail "])
    assert [r.verdict for r in proof.results] == [CLEAN, CLEAN] and proof.ok


def test_compensation_points_exist_behind_an_alternative(world: TravelWorld) -> None:
    engine = engine_for(world, broken_hotel_undo=True, alternatives={"book_car": ["rent_car"]})

    def trip() -> None:
        with engine.run() as run:
            run.call(world.book_hotel, guest="ann", city="Paris", nights=2)
            run.call(world.book_car, driver="ann", city="Paris")

    proof = prove(trip, engine=engine, check=world.live, setup=world.reset)
    assert any(r.point.kind == "undo_fails" for r in proof.results)
    assert verdict(proof, "undo_fails cancel_hotel of book_hotel#1") == NAMED
