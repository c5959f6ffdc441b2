"""A travel world whose hotel bookings have no declared pair, and a compensator RAC cannot map by
name (its parameter is ``reference``, the result's field is ``booking_id``): the two questions
the resolver asks a model."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

import rac
from rac.resolver import LLMResolver
from rac.testing import TRAVEL_READ_ONLY, TravelWorld, VirtualClock

#: The model's right answers, as a scripted model replies them.
RIGHT_PAIR = json.dumps({"compensator": "void_booking"})
RIGHT_MAPPING = json.dumps({"args": {"reference": "result.booking_id"}})


def void_booking(world: TravelWorld) -> rac.Tool:
    """Void a hotel booking by its reference: a compensator whose parameter name matches
    nothing in ``book_hotel``'s result."""
    return rac.Tool(
        "void_booking", call=lambda a: world.cancel_hotel(booking_id=a["reference"]),
        params={"type": "object",
                "properties": {"reference": {"type": "string",
                                             "description": "the booking's reference"}},
                "required": ["reference"]},
        description="Void a hotel booking, given its reference.")


@pytest.fixture
def resolver_engine(world: TravelWorld, clock: VirtualClock) -> Callable[..., rac.RAC]:
    """An engine over the travel world where hotels have no declared pair."""

    def make(resolver: LLMResolver, **kw: Any) -> rac.RAC:
        kw.setdefault("compensations", {"book_flight": "cancel_flight", "book_car": "cancel_car"})
        kw.setdefault("read_only", TRAVEL_READ_ONLY)
        kw.setdefault("tools", [*world.tools(), void_booking(world)])
        kw.setdefault("store", "memory://")
        kw.setdefault("clock", clock)
        kw.setdefault("compensation_retry", rac.RetryPolicy(max_attempts=2, jitter=0))
        return rac.RAC(plugins=[resolver], **kw)

    return make


def trip_that_fails(engine: rac.RAC, world: TravelWorld) -> rac.RecoveryReport:
    """Book a flight and a hotel, then a car that fails for good: RAC rolls back."""
    world.fail("book_car", "permanent", times=1)
    with engine.run() as run, pytest.raises(rac.ToolCallFailed) as failed:
        run.call("book_flight", passenger="ann", origin="SFO", dest="CDG")
        run.call("book_hotel", guest="ann", city="Paris", nights=2)
        run.call("book_car", driver="ann", city="Paris")
    return failed.value.report
