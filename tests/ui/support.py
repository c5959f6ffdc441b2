"""A real log for the UI tests: runs made by a real engine over the travel world, in a SQLite
file (completed, compensated, needs attention with a dead letter, a proposed pair)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

import rac
from rac.models import PairRecord
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld, VirtualClock

SECRET = "4111 1111 1111 1111"  # a card number: redacted wherever a value is shown


@dataclass
class Log:
    engine: rac.RAC
    world: TravelWorld
    completed: str
    compensated: str
    attention: str
    url: str


def make_log(tmp_path: Path) -> Log:
    world = TravelWorld(str(tmp_path / "world.db"))
    url = f"sqlite:///{tmp_path / 'rac.db'}"
    clock = VirtualClock()
    engine = rac.RAC(compensations=TRAVEL_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                     tools=world.tools(), store=url, clock=clock,
                     load_entrypoints=False, agent_id="travel",
                     compensation_retry=rac.RetryPolicy(max_attempts=2, initial_delay=0.1))
    with engine.run() as run:
        run.call(world.book_flight, passenger="ann", origin="SFO", dest="CDG")
    completed = run.run_id
    clock.advance(60)
    world.fail("book_car", "permanent", times=1)
    with pytest.raises(rac.ToolCallFailed), engine.run() as run:
        run.call(world.book_hotel, guest="bob", city="Rome", nights=1)
        run.call(world.book_car, driver="bob", city="Rome")
    compensated = run.run_id
    clock.advance(60)
    world.fail("book_car", "permanent", times=1)
    world.fail("cancel_hotel", "permanent", times=1, message="hotel system down")
    with pytest.raises(rac.ToolCallFailed), engine.run() as run:
        run.call(world.charge_card, customer=f"eve {SECRET}", amount=10.0)
        run.call(world.book_hotel, guest="eve", city="Oslo", nights=2)
        run.call(world.book_car, driver="eve", city="Oslo")
    attention = run.run_id
    assert run.status == "needs_attention"
    store = engine.store
    store.put_pair(PairRecord("pair-book_car-cancel_car-ab", "book_car", "cancel_car",  # type: ignore[attr-defined]
                              {"booking_id": "result.booking_id"}, source="llm",
                              status="proposed", schema_hash="ab", note="proposed by a model",
                              created_at=1.0, updated_at=1.0))
    return Log(engine, world, completed, compensated, attention, url)
