"""Helpers for testing RAC and RAC adapters: a virtual clock, a travel world with real state and
fault injection, assertions on what the world holds, and the store conformance suite
(:mod:`rac.testing.conformance`, which needs pytest)."""

from rac.testing.assertions import (
    assert_compensated_once,
    assert_no_live_effects,
    assert_rollback_order,
    statuses,
    summary,
)
from rac.testing.clock import VirtualClock
from rac.testing.lifecycle import LifecycleStore
from rac.testing.world import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, Fault, TravelWorld

__all__ = [
    "TRAVEL_COMPENSATIONS", "TRAVEL_READ_ONLY", "Fault", "LifecycleStore", "TravelWorld",
    "VirtualClock",
    "assert_compensated_once", "assert_no_live_effects", "assert_rollback_order", "statuses",
    "summary",
]
