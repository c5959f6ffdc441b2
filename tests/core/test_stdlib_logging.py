"""Without a structlog configuration, RAC's events reach the standard library's logging on a
logger per area, each record keeping the event's fields as structured attributes."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator

import pytest

import rac
from rac.events import area_of
from rac.testing import TravelWorld


class Keep(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def kept() -> Iterator[Keep]:
    handler = Keep()
    root = logging.getLogger("rac")
    old = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield handler
    root.removeHandler(handler)
    root.setLevel(old)


def test_events_carry_their_fields_as_attributes_on_area_loggers(
        make_engine: Callable[..., rac.RAC], world: TravelWorld, kept: Keep) -> None:
    world.fail("book_car", "permanent")
    engine = make_engine()
    with pytest.raises(rac.ToolCallFailed), engine.run() as run:
        run.call(world.book_flight, passenger="ann", origin="SFO", dest="CDG")
        run.call(world.book_car, driver="ann", city="Paris")
    mine = [r for r in kept.records if getattr(r, "rac", {}).get("run_id") == run.run_id]
    assert {r.name for r in mine} == {"rac.run"}
    failed = next(r for r in mine if r.rac_event == "rac.record"  # type: ignore[attr-defined]
                  and r.rac["status"] == "failed")  # type: ignore[attr-defined]
    assert failed.rac["tool"] == "book_car" and failed.rac["seq"] == 2  # type: ignore[attr-defined]
    assert failed.levelno == logging.WARNING
    assert "event='rac.record'" in failed.getMessage() and "book_car" in failed.getMessage()
    json.dumps(failed.rac)  # type: ignore[attr-defined]  # plain data, ready for a JSON formatter


def test_one_area_can_be_turned_up_alone(make_engine: Callable[..., rac.RAC],
                                         world: TravelWorld) -> None:
    handler = Keep()
    recovery = logging.getLogger("rac.recovery")
    recovery.addHandler(handler)
    recovery.setLevel(logging.INFO)
    try:
        world.fail("book_car", "permanent")
        world.fail("cancel_flight", "permanent", times=1)
        engine = make_engine()
        with pytest.raises(rac.ToolCallFailed), engine.run() as run:
            run.call(world.book_flight, passenger="ann", origin="SFO", dest="CDG")
            run.call(world.book_car, driver="ann", city="Paris")
        engine.resolve(run.run_id, 1, note="cancelled by phone", by="ops")
    finally:
        recovery.removeHandler(handler)
        recovery.setLevel(logging.NOTSET)
    names = {(r.name, r.rac_event) for r in handler.records}  # type: ignore[attr-defined]
    assert ("rac.recovery", "rac.resolve") in names
    assert all(name == "rac.recovery" for name, _ in names)


@pytest.mark.parametrize(("event", "area"), [
    ("rac.record", "rac.run"), ("rac.rollback", "rac.run"), ("rac.retry", "rac.run"),
    ("rac.recovery", "rac.recovery"), ("rac.resolve", "rac.recovery"),
    ("rac.pair_proposed", "rac.resolver"), ("rac.mcp.registered", "rac.mcp"),
    ("rac.plugin_failed", "rac.plugins"), ("rac.ui", "rac.ui"),
    ("rac_langgraph.turn", "rac.langgraph"), ("rac.something_new", "rac")])
def test_areas(event: str, area: str) -> None:
    assert area_of(event) == area
