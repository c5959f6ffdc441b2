"""Fault classes: for each scenario, the rules of each class and the end a correct run reaches.

Every error is what a real tool raises (see :mod:`benchmarks.harness.errors`).

- ``clean``: no fault.
- ``transient``: timeouts, connection resets, 503s and 429s with ``Retry-After`` raised before
  the effect (nothing happened), gone by the third attempt; slow responses on the virtual clock.
- ``garbled``: the effect happened and a 200 came back whose id field is missing or blank.
- ``ambiguous_first``: the effect commits, then the call raises a timeout, a connection reset or
  a 504, on the first attempt of the logical call only.
- ``ambiguous_every``: the same, on every attempt of the logical calls it hits (drawn once per
  call): each retry commits again.
- ``mid_response``: the effect commits, then the response is lost and the client library raises
  its own exception (httpx ``ReadError``, requests ``ChunkedEncodingError``, urllib3
  ``ProtocolError``, ``ssl.SSLEOFError``, aiohttp ``ClientPayloadError``, gRPC
  ``DEADLINE_EXCEEDED``, psycopg "server closed the connection", anyio
  ``BrokenResourceError``), first attempt of the logical call.
- ``error_after_write``: the server writes, then answers an error: a ``ValueError`` in the
  tool's words, an HTTP 500, or a normal return of ``{"error": ...}`` (first attempt).
- ``holds_matching``: the passenger already holds a booking that matches the call's arguments
  (made before the run, the same day); the first attempt of a booking times out, before the
  request got through or after it committed; and a required step fails for good, so the run
  must abort. What finds "a matching booking" must not take the passenger's own for the
  call's effect (and cancel it in the rollback).
- ``comp_ambiguous``: unsolvable, and each compensator commits its undo and then times out (first
  attempt).
- ``misleading``: transient 503s whose text says the request was permanently rejected.
- ``permanent_alt``: a permanent failure with another way to the goal (an alternative tool,
  machine, route or flight).
- ``unsolvable``: a required step fails for good: abort with nothing left behind.
- ``comp_transient``: unsolvable, and compensators fail before acting (timeout, 503) once.
- ``comp_permanent``: unsolvable, and a compensator fails for good: the run must end
  needs_attention naming it.
- ``parallel_inflight``: three calls of one model turn; one fails for good while the two
  others are inside their tools (started, not finished); they finish after the failure.
- ``parallel_late``: the same, with the two others started a moment after the failure came
  back.
- ``pivot``: the shop's shipping step commits, then times out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from benchmarks.harness import errors
from benchmarks.harness.faults import FaultRule
from benchmarks.harness.scenario import Scenario
from benchmarks.worlds.base import World

GOAL, ABORT, ATTENTION = "goal", "abort", "needs_attention"


@dataclass(frozen=True)
class FaultClass:
    """A named family of fault schedules and the end a correct run reaches under it;
    ``prepare`` changes the world's starting state before the run (the same for every
    approach)."""

    name: str
    expected: str
    rules: Callable[[Scenario, World], list[FaultRule]]
    prepare: Callable[[Scenario, World], None] | None = None


def _transient(scenario: Scenario, world: World) -> list[FaultRule]:
    rules: list[FaultRule] = []
    for tool in sorted(world.effectful()):
        rules += [FaultRule(tool, "timeout", attempts=2, probability=0.15),
                  FaultRule(tool, "reset", attempts=1, probability=0.1),
                  FaultRule(tool, "5xx", attempts=2, probability=0.15),
                  FaultRule(tool, "429", attempts=1, probability=0.1),
                  # slow responses on the virtual clock (the call still succeeds)
                  FaultRule(tool, "latency", attempts=None, probability=0.25, delay=15.0)]
    return rules


def _garbled(scenario: Scenario, world: World) -> list[FaultRule]:
    rules: list[FaultRule] = []
    for tool in sorted(world.effectful()):
        idfield = world.effect_field.get(tool)
        if idfield:
            # a 200 whose body lost the id, or carries a blank one (truncated, garbled)
            rules += [FaultRule(tool, "missing_field", "after_effect", attempts=1,
                                probability=0.15, field=idfield),
                      FaultRule(tool, "wrong_field", "after_effect", attempts=1,
                                probability=0.15, field=idfield)]
    return rules


#: how an in-doubt call fails, by tool (cycled so each world meets all three)
IN_DOUBT_KINDS = ("timeout", "reset", "504")


def _ambiguous_first(scenario: Scenario, world: World) -> list[FaultRule]:
    return [FaultRule(t, IN_DOUBT_KINDS[i % 3], "after_effect", attempts=1, probability=0.5)
            for i, t in enumerate(sorted(world.effectful()))]


def _ambiguous_every(scenario: Scenario, world: World) -> list[FaultRule]:
    return [FaultRule(t, IN_DOUBT_KINDS[i % 3], "after_effect", attempts=None,
                      probability=0.3, sticky=True)
            for i, t in enumerate(sorted(world.effectful()))]


#: the mid-response kinds, each drawn on its own for every logical call (about half the calls
#: of each tool meet one; every world meets all eight)
MID_RESPONSE_P = 0.08


def _mid_response(scenario: Scenario, world: World) -> list[FaultRule]:
    return [FaultRule(t, kind, "after_effect", attempts=1, probability=MID_RESPONSE_P)
            for t in sorted(world.effectful()) for kind in errors.MID_RESPONSE]


def _error_after_write(scenario: Scenario, world: World) -> list[FaultRule]:
    rules: list[FaultRule] = []
    for t in sorted(world.effectful()):
        rules += [FaultRule(t, "4xx", "after_effect", attempts=1, probability=0.2,
                            message=f"{t}: the request could not be completed"),
                  FaultRule(t, "500", "after_effect", attempts=1, probability=0.15),
                  FaultRule(t, "error_result", "after_effect", attempts=1, probability=0.15,
                            message=f"{t} failed: internal error")]
    return rules


#: the worlds whose passengers can already hold a booking that matches the call (a world
#: with ``hold_matching``)
HOLDS_MATCHING = ("tau2_airline",)


def _holds_matching(scenario: Scenario, world: World) -> list[FaultRule]:
    rules: list[FaultRule] = []
    for t in sorted(world.lookups):
        # the first attempt times out, before the request got through or after it committed
        rules += [FaultRule(t, "timeout", "before_effect", attempts=1, probability=0.35),
                  FaultRule(t, "timeout", "after_effect", attempts=1, probability=0.35)]
    return rules + list(targets(scenario)[1])


def _hold_matching(scenario: Scenario, world: World) -> None:
    world.hold_matching(scenario)  # type: ignore[attr-defined]


def _misleading(scenario: Scenario, world: World) -> list[FaultRule]:
    return [FaultRule(t, "5xx", attempts=1, probability=0.4,
                      message=f"{t}: request permanently rejected by provider")
            for t in sorted(world.effectful())]


#: the classes whose faults leave a call in doubt (its effect committed, an error came back)
IN_DOUBT = ("garbled", "ambiguous_first", "ambiguous_every", "mid_response",
            "error_after_write", "holds_matching", "comp_ambiguous", "pivot")
#: world variants: ``plain`` (no tool dedupes) and ``keyed`` (tools that take an idempotency
#: key in real life accept one)
VARIANTS = ("plain", "keyed")

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
    "travel/group_parallel": (
        None,
        [FaultRule("book_flight", "4xx", attempts=None, match={"passenger": "cid"},
                   message="book_flight: passport of cid rejected")],
        []),
    "tau2_telecom/roaming_off_three_lines": (
        None,
        [FaultRule("disable_roaming", "4xx", attempts=None, match={"line_id": "{third}"},
                   message="Line {third} not found for customer {roamer}")],
        [FaultRule("enable_roaming", "4xx", attempts=None,
                   message="Customer not found")]),
    "tau2_telecom/trip_abroad": (
        None,
        [FaultRule("refuel_data", "4xx", attempts=None,
                   message="Plan not found for this line")],
        [FaultRule("resume_line", "4xx", attempts=None,
                   message="Line must be suspended to resume")]),
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
    "tau2_airline/three_passengers": (
        [FaultRule("book_reservation", "4xx", attempts=None,
                   message="Not enough seats on flight {first}",
                   match={"flights": "{first_flights}"})],
        [FaultRule("book_reservation", "4xx", attempts=None,
                   match={"passengers": [{"first_name": "Cy", "last_name": "Ruiz",
                                          "dob": "2012-05-06"}]},
                   message="Payment method {card} not found")],
        [FaultRule("cancel_reservation", "4xx", attempts=None,
                   message="Reservation cannot be cancelled: outside the 24h window")]),
    "tau2_airline/gift_card_booking": (
        [FaultRule("book_reservation", "4xx", attempts=None,
                   message="Not enough seats on flight {first}",
                   match={"flights": "{first_flights}"})],
        [FaultRule("book_reservation", "4xx", attempts=None,
                   message="Gift card balance is not enough")],
        []),
    "tau2_airline/upgrade_with_companion": (
        None,
        [FaultRule("book_reservation", "4xx", attempts=None,
                   message="Not enough seats on flight {res_first}")],
        [FaultRule("update_reservation_flights", "4xx", attempts=None,
                   match={"cabin": "economy"},
                   message="Flight {res_first} not available on date {res_date}")]),
    "tau2_airline/certificate_and_rebook": (
        [FaultRule("book_reservation", "4xx", attempts=None,
                   message="Not enough seats on flight {first}",
                   match={"flights": "{first_flights}"})],
        [FaultRule("book_reservation", "4xx", attempts=None,
                   message="Payment method {card} not found")],
        []),
}


def _filled(rule: FaultRule, params: dict[str, Any]) -> FaultRule:
    match = {k: params[v[1:-1]] if isinstance(v, str) and v.startswith("{") else v
             for k, v in rule.match.items()}
    message = rule.message.format(**params) if rule.message else rule.message
    return replace(rule, match=match, message=message)


def targets(scenario: Scenario) -> tuple[list[FaultRule] | None, list[FaultRule],
                                         list[FaultRule]]:
    """The scenario's (way around, unsolvable, compensator fails) rules; for tau2 scenarios
    the flights, payment ids and wording come from the shipped database."""
    alt, unsolvable, comp = TARGETS[scenario.key]
    if scenario.world == "tau2_airline":
        from benchmarks.worlds.tau2_airline import fault_params
    elif scenario.world == "tau2_telecom":
        from benchmarks.worlds.tau2_telecom import fault_params
    else:
        return alt, unsolvable, comp
    params = fault_params()
    return (None if alt is None else [_filled(r, params) for r in alt],
            [_filled(r, params) for r in unsolvable], [_filled(r, params) for r in comp])


def _comp_transient_rules(scenario: Scenario, world: World) -> list[FaultRule]:
    comps = sorted(world.compensator_names())
    return (targets(scenario)[1]
            + [FaultRule(c, "timeout", attempts=1, probability=0.5) for c in comps]
            + [FaultRule(c, "5xx", attempts=1, probability=0.5) for c in comps])


def _comp_ambiguous_rules(scenario: Scenario, world: World) -> list[FaultRule]:
    return (targets(scenario)[1]
            + [FaultRule(c, "timeout", "after_effect", attempts=1, probability=0.5)
               for c in sorted(world.compensator_names())])


CLASSES: list[FaultClass] = [
    FaultClass("clean", GOAL, lambda s, w: []),
    FaultClass("transient", GOAL, _transient),
    FaultClass("garbled", GOAL, _garbled),
    FaultClass("ambiguous_first", GOAL, _ambiguous_first),
    FaultClass("ambiguous_every", GOAL, _ambiguous_every),
    FaultClass("mid_response", GOAL, _mid_response),
    FaultClass("error_after_write", GOAL, _error_after_write),
    FaultClass("holds_matching", ABORT, _holds_matching, prepare=_hold_matching),
    FaultClass("misleading", GOAL, _misleading),
    FaultClass("permanent_alt", GOAL, lambda s, w: list(targets(s)[0] or [])),
    FaultClass("unsolvable", ABORT, lambda s, w: list(targets(s)[1])),
    FaultClass("comp_transient", ABORT, _comp_transient_rules),
    FaultClass("comp_ambiguous", ABORT, _comp_ambiguous_rules),
    FaultClass("comp_permanent", ATTENTION,
               lambda s, w: targets(s)[1] + targets(s)[2]),
    FaultClass("parallel_inflight", ABORT, lambda s, w: list(targets(s)[1])),
    FaultClass("parallel_late", ABORT, lambda s, w: list(targets(s)[1])),
    FaultClass("pivot", GOAL, lambda s, w: [FaultRule("ship_order", "timeout", "after_effect",
                                                      attempts=1)]),
]


def applicable(scenario: Scenario, fault_class: FaultClass) -> bool:
    """Whether a class makes sense for a scenario."""
    rules = targets(scenario)
    parallel = bool(scenario.params.get("parallel"))
    if fault_class.name.startswith("parallel_") or parallel:
        return parallel and fault_class.name in ("clean", "parallel_inflight", "parallel_late")
    if fault_class.name == "permanent_alt":
        return rules[0] is not None
    if fault_class.name == "comp_permanent":
        return bool(rules[2])
    if fault_class.name == "pivot":
        return scenario.world == "shop"
    if fault_class.name == "holds_matching":
        return scenario.world in HOLDS_MATCHING
    return True
