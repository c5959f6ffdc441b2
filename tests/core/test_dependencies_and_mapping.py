"""Dependents are undone before what they depend on; ids make edges, cities and dates do not;
compensation arguments are mapped exactly or not at all."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pydantic
import pytest

import rac
from rac.dependencies import is_id_like
from rac.testing import TravelWorld


class Baggage:
    """A second world object that depends on a flight booking."""

    def __init__(self, fail_cancel: bool = False) -> None:
        self.live: dict[str, str] = {}
        self.fail_cancel = fail_cancel
        self.n = 0

    def add_baggage(self, booking_id: str, bags: int) -> dict[str, Any]:
        self.n += 1
        bag_id = f"BG-{self.n}"
        self.live[bag_id] = booking_id
        return {"bag_id": bag_id}

    def remove_baggage(self, bag_id: str) -> dict[str, Any]:
        if self.fail_cancel:
            raise rac.PermanentError("baggage desk closed")
        self.live.pop(bag_id)
        return {"removed": bag_id}


def engine_with_baggage(make_engine: Any, world: TravelWorld, bags: Baggage) -> rac.RAC:
    comps = {"book_flight": "cancel_flight", "book_hotel": "cancel_hotel",
             "add_baggage": "remove_baggage"}
    return make_engine(compensations=comps,
                       tools=[*world.tools(), bags.add_baggage, bags.remove_baggage])


def test_ids_make_edges_and_ordinary_strings_do_not(make_engine: Any, world: TravelWorld) -> None:
    bags = Baggage()
    engine = engine_with_baggage(make_engine, world, bags)
    with engine.run() as run:
        flight = run.call("book_flight", passenger="Ann Lee", origin="SFO", dest="Paris")
        run.call("book_hotel", guest="Ann Lee", city="Paris", nights=2)
        run.call("add_baggage", booking_id=flight["booking_id"], bags=2)
    recs = run.records()
    assert recs[1].depends_on == []  # shares "Paris" and "Ann Lee" with the flight: no edge
    assert recs[2].depends_on == [1]
    assert [is_id_like(v) for v in ("FL-101", "Paris", "2026-12-01", "12:30", "42", "bk_9f2c")] \
        == [True, False, False, False, False, True]


def test_dependents_are_compensated_before_what_they_depend_on(make_engine: Any,
                                                                world: TravelWorld) -> None:
    bags = Baggage()
    engine = engine_with_baggage(make_engine, world, bags)
    with engine.run() as run:
        # The flight is booked last but the baggage (booked earlier against an old flight id)
        # depends on it by declaration: it must still go first.
        hotel = run.call("book_hotel", guest="a", city="Rome", nights=1)
        outcome = run.execute("add_baggage", {"booking_id": "FL-200", "bags": 1},
                              lambda n, a: run.tool(n).invoke(a))  # type: ignore[union-attr]
        assert outcome.ok and hotel
        flight = run.call("book_flight", passenger="a", origin="X", dest="Y")
        run.log.records[2].depends_on = [3]  # declared after the fact: baggage needs the flight
        report = run.rollback("test")
    order = [u.tool for u in report.compensated]
    assert order.index("add_baggage") < order.index("book_flight")
    assert order == ["add_baggage", "book_flight", "book_hotel"] and flight


def test_failed_dependent_blocks_what_it_depends_on(make_engine: Any, world: TravelWorld) -> None:
    bags = Baggage(fail_cancel=True)
    engine = engine_with_baggage(make_engine, world, bags)
    world.fail("book_car", "permanent")
    with engine.run() as run, pytest.raises(rac.ToolCallFailed) as failed:
        flight = run.call("book_flight", passenger="a", origin="X", dest="Y")
        run.call("add_baggage", booking_id=flight["booking_id"], bags=1)
        run.call("book_hotel", guest="a", city="Rome", nights=1)
        run.call("book_car", driver="a", city="Rome")
    report = failed.value.report
    assert [u.tool for u in report.compensated] == ["book_hotel"]
    assert [u.tool for u in report.compensation_failed] == ["add_baggage"]
    assert [u.tool for u in report.blocked] == ["book_flight"]
    assert "add_baggage (#2) depends on it" in (report.blocked[0].error or "")
    assert [b["kind"] for b in world.live()] == ["flight"] and bags.live
    assert run.status is rac.RunStatus.NEEDS_ATTENTION


@dataclasses.dataclass
class Ticket:
    ticket_ref: str
    seat: str


class Order(pydantic.BaseModel):
    order_no: str
    total: float


@pytest.mark.parametrize(("result", "cancel_params", "expected"), [
    ({"booking_id": "B-1", "flight": "AF-11"}, ["booking_id"], {"booking_id": "B-1"}),
    (json.dumps({"booking_id": "B-2"}), ["booking_id"], {"booking_id": "B-2"}),
    (Ticket("T-9", "12A"), ["ticket_ref"], {"ticket_ref": "T-9"}),
    (Order(order_no="O-7", total=3.0), ["order_no"], {"order_no": "O-7"}),
    ("CONF-77", ["confirmation"], {"confirmation": "CONF-77"}),
    ({"booking_id": "B-3"}, ["booking_id", "passenger"], {"booking_id": "B-3",
                                                          "passenger": "ann"}),
])
def test_default_mapping_matches_the_compensators_parameters(
        make_engine: Any, result: Any, cancel_params: list[str], expected: dict[str, Any]) -> None:
    got: dict[str, Any] = {}

    def book(passenger: str) -> Any:
        return result

    def cancel(**kw: Any) -> dict[str, Any]:
        got.update(kw)
        return {"ok": True}

    cancel_tool = rac.Tool("cancel", call=lambda a: cancel(**a), params=cancel_params,
                           required=cancel_params)
    engine = make_engine(tools=[book, cancel_tool], compensations={"book": "cancel"})
    with engine.run() as run:
        run.call("book", passenger="ann")
        assert run.rollback().clean
    assert got == expected


def test_declared_paths_and_callables(make_engine: Any, world: TravelWorld) -> None:
    calls: list[dict[str, Any]] = []

    def book(passenger: str) -> dict[str, Any]:
        return {"data": {"ref": "R-1"}, "legs": [{"id": "L-1"}]}

    def undo(ref: str, leg: str, who: str) -> dict[str, Any]:
        calls.append({"ref": ref, "leg": leg, "who": who})
        return {"ok": True}

    def undo2(code: str) -> dict[str, Any]:
        calls.append({"code": code})
        return {"ok": True}

    comps = {
        "book": rac.Compensation(tool="undo", args={"ref": "result.data.ref",
                                                    "leg": "result.legs.0.id",
                                                    "who": "args.passenger"}),
        "book2": rac.Compensation(tool="undo2",
                                  args=lambda args, result: {"code": result["data"]["ref"] + "!"}),
    }
    engine = make_engine(tools=[book, rac.Tool.from_function(book, name="book2"), undo, undo2],
                         compensations=comps)
    with engine.run() as run:
        run.call("book", passenger="ann")
        run.call("book2", passenger="bob")
        assert run.rollback().clean
    assert calls == [{"code": "R-1!"}, {"ref": "R-1", "leg": "L-1", "who": "ann"}]


def test_unmappable_argument_is_never_guessed(make_engine: Any, world: TravelWorld) -> None:
    def book_room(guest: str) -> dict[str, Any]:
        return {"id": "H-1", "room": "12"}

    called: list[Any] = []

    def cancel_hotel(booking_ref: str) -> dict[str, Any]:
        called.append(booking_ref)
        return {"ok": True}

    engine = make_engine(tools=[book_room, cancel_hotel],
                         compensations={"book_room": "cancel_hotel"})
    with engine.run() as run:
        run.call("book_room", guest="ann")
        report = run.rollback()
    assert called == []
    assert report.compensation_failed[0].error is not None
    assert "cannot map argument 'booking_ref' of cancel_hotel" in report.compensation_failed[0].error
    assert run.status is rac.RunStatus.NEEDS_ATTENTION


def test_missing_path_field_is_a_clear_failure(make_engine: Any) -> None:
    def book(x: int) -> dict[str, Any]:
        return {"other": 1}

    def undo(ref: str) -> None:
        raise AssertionError("must not be called")

    engine = make_engine(tools=[book, undo], compensations={
        "book": rac.Compensation(tool="undo", args={"ref": "result.ref"})})
    with engine.run() as run:
        run.call("book", x=1)
        report = run.rollback()
    assert "'result' has no field 'ref'" in (report.compensation_failed[0].error or "")
