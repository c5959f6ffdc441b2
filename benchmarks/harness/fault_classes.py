"""Fault classes: for each scenario, the rules of each class and the end a correct run reaches.

Classes: clean; transient (timeouts, 5xx and 429 before and after the effect, gone by the third
attempt; responses whose id field is missing or blank; slow responses on the virtual clock);
ambiguous (the effect happened, then a timeout); misleading (transient failures worded as
permanent); permanent_alt (a permanent failure with another way to the goal, e.g. an
alternative tool or machine); unsolvable (a required step fails for good: abort with nothing
left behind); comp_transient (unsolvable, and compensators time out once); comp_permanent
(unsolvable, and a compensator fails for good: the run must end needs_attention naming it);
pivot (the shop's shipping step commits, then times out).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from benchmarks.harness.faults import FaultRule
from benchmarks.harness.scenario import Scenario
from benchmarks.worlds.base import World

GOAL, ABORT, ATTENTION = "goal", "abort", "needs_attention"


@dataclass(frozen=True)
class FaultClass:
    """A named family of fault schedules and the end a correct run reaches under it."""

    name: str
    expected: str
    rules: Callable[[Scenario, World], list[FaultRule]]


def _transient(scenario: Scenario, world: World) -> list[FaultRule]:
    rules: list[FaultRule] = []
    for tool in sorted(world.effectful()):
        rules += [FaultRule(tool, "timeout", "after_effect", attempts=1, probability=0.2),
                  FaultRule(tool, "timeout", attempts=2, probability=0.15),
                  FaultRule(tool, "5xx", attempts=2, probability=0.15),
                  FaultRule(tool, "429", attempts=1, probability=0.1)]
        idfield = world.effect_field.get(tool)
        if idfield:
            # a 200 whose body lost the id, or carries a blank one (truncated, garbled)
            rules += [FaultRule(tool, "missing_field", "after_effect", attempts=1,
                                probability=0.08, field=idfield),
                      FaultRule(tool, "wrong_field", "after_effect", attempts=1,
                                probability=0.08, field=idfield)]
        # slow responses on the virtual clock (the call still succeeds)
        rules.append(FaultRule(tool, "latency", attempts=None, probability=0.25, delay=15.0))
    return rules


def _ambiguous(scenario: Scenario, world: World) -> list[FaultRule]:
    return [FaultRule(t, "timeout", "after_effect", attempts=1, probability=0.5)
            for t in sorted(world.effectful())]


def _misleading(scenario: Scenario, world: World) -> list[FaultRule]:
    return [FaultRule(t, "5xx", attempts=1, probability=0.4,
                      message=f"{t}: request permanently rejected by provider")
            for t in sorted(world.effectful())]


#: scenario -> (permanent failure with a way around it, unsolvable failure, compensator that
#: fails for good). None where the class does not apply to the scenario.
TARGETS: dict[str, tuple[list[FaultRule] | None, list[FaultRule], list[FaultRule]]] = {
    "travel/trip_budget": (
        [FaultRule("book_hotel", "4xx", attempts=None,
                   message="book_hotel: hotel API rejected the request (403)")],
        [FaultRule("rent_car", "4xx", attempts=None, message="rent_car: no cars left in Paris")],
        [FaultRule("cancel_flight", "4xx", attempts=None,
                   message="cancel_flight: fare is non-refundable")]),
    "travel/group_of_3": (
        None,
        [FaultRule("book_flight", "4xx", attempts=None, match={"passenger": "cid"},
                   message="book_flight: passport of cid rejected")],
        [FaultRule("cancel_flight", "4xx", attempts=None,
                   message="cancel_flight: fare is non-refundable")]),
    "travel/rebooking": (
        [FaultRule("book_flight", "4xx", attempts=None, match={"flight": "AF12"},
                   message="book_flight: AF12 closed for sale")],
        [FaultRule("cancel_flight", "4xx", attempts=None, match={"booking_id": "FL-OLD"},
                   message="cancel_flight: FL-OLD is checked in and cannot be cancelled")],
        [FaultRule("cancel_flight", "4xx", attempts=None,
                   message="cancel_flight: fare is non-refundable")]),
    "shop/order_and_ship": (
        [FaultRule("reserve_stock", "4xx", attempts=None,
                   message="reserve_stock: main warehouse is offline")],
        [FaultRule("ship_order", "4xx", attempts=None,
                   message="ship_order: address undeliverable")],
        [FaultRule("refund_order", "4xx", attempts=None,
                   message="refund_order: card account closed")]),
    "jobshop/two_jobs": (
        [FaultRule("schedule_op", "4xx", attempts=None, match={"machine": "M1"},
                   message="schedule_op: controller error E17 on M1")],
        [FaultRule("schedule_op", "4xx", attempts=None, match={"job": "J1", "op": "drill"},
                   message="schedule_op: machine breakdown")],
        [FaultRule("cancel_op", "4xx", attempts=None,
                   message="cancel_op: schedule is frozen")]),
    "logistics/wedding": (
        [FaultRule("reserve_vehicle", "4xx", attempts=None, match={"route": "A1"},
                   message="reserve_vehicle: road A1 closed after an accident")],
        [FaultRule("hire_band", "4xx", attempts=None,
                   message="hire_band: no band is free on that date")],
        [FaultRule("cancel_venue", "4xx", attempts=None,
                   message="cancel_venue: past the free cancellation date")]),
    "logistics/thanksgiving": (
        [FaultRule("reserve_vehicle", "4xx", attempts=None, match={"who": "mom", "start": 15},
                   message="reserve_vehicle: flight UA88 delayed, lands 17:00; no pickup at 15")],
        [FaultRule("reserve_vehicle", "4xx", attempts=None,
                   message="reserve_vehicle: every road to the airport closed by the storm")],
        [FaultRule("cancel_shift", "4xx", attempts=None,
                   message="cancel_shift: the cook has already clocked in")]),
    "airline/three_passengers": (
        [FaultRule("book_reservation", "4xx", attempts=None,
                   message="book_reservation: flight HAT013 oversold",
                   match={"flights": [{"flight_number": "HAT013", "date": "2024-05-20"}]})],
        [FaultRule("book_reservation", "4xx", attempts=None,
                   match={"passengers": [{"first_name": "Cy", "last_name": "Ruiz",
                                          "dob": "2012-05-06"}]},
                   message="book_reservation: payment declined for Cy")],
        [FaultRule("cancel_reservation", "4xx", attempts=None,
                   message="cancel_reservation: outside the 24h cancellation window")]),
    "airline/gift_card_booking": (
        [FaultRule("book_reservation", "4xx", attempts=None,
                   message="book_reservation: flight HAT013 oversold",
                   match={"flights": [{"flight_number": "HAT013", "date": "2024-05-20"}]})],
        [FaultRule("book_reservation", "4xx", attempts=None,
                   message="book_reservation: gift card payment declined")],
        []),
}


def _comp_transient_rules(scenario: Scenario, world: World) -> list[FaultRule]:
    comps = sorted(world.compensator_names())
    return (TARGETS[scenario.key][1]
            + [FaultRule(c, "timeout", "after_effect", attempts=1, probability=0.5)
               for c in comps]
            + [FaultRule(c, "5xx", attempts=1, probability=0.5) for c in comps])


CLASSES: list[FaultClass] = [
    FaultClass("clean", GOAL, lambda s, w: []),
    FaultClass("transient", GOAL, _transient),
    FaultClass("ambiguous", GOAL, _ambiguous),
    FaultClass("misleading", GOAL, _misleading),
    FaultClass("permanent_alt", GOAL, lambda s, w: list(TARGETS[s.key][0] or [])),
    FaultClass("unsolvable", ABORT, lambda s, w: list(TARGETS[s.key][1])),
    FaultClass("comp_transient", ABORT, _comp_transient_rules),
    FaultClass("comp_permanent", ATTENTION,
               lambda s, w: TARGETS[s.key][1] + TARGETS[s.key][2]),
    FaultClass("pivot", GOAL, lambda s, w: [FaultRule("ship_order", "timeout", "after_effect",
                                                      attempts=1)]),
]


def applicable(scenario: Scenario, fault_class: FaultClass) -> bool:
    """Whether a class makes sense for a scenario."""
    targets = TARGETS[scenario.key]
    if fault_class.name == "permanent_alt":
        return targets[0] is not None
    if fault_class.name == "comp_permanent":
        return bool(targets[2])
    if fault_class.name == "pivot":
        return scenario.world == "shop"
    return True
