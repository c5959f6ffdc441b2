"""Helpers for testing RAC and RAC adapters: a virtual clock, a travel world with real state and
fault injection, assertions on what the world holds, :func:`prove` (inject a failure at every
step of your own scenario and check your own world, see :mod:`rac.testing.proof`), the store
conformance suite (:mod:`rac.testing.conformance`) and the adapter conformance suite
(:class:`AdapterConformance`, from :mod:`rac.testing.adapters`); both suites need pytest and
are loaded on first use."""

from typing import TYPE_CHECKING, Any

from rac.testing.assertions import (
    assert_compensated_once,
    assert_no_live_effects,
    assert_rollback_order,
    statuses,
    summary,
)
from rac.testing.clock import VirtualClock
from rac.testing.lifecycle import LifecycleStore
from rac.testing.processes import abandon_runs
from rac.testing.proof import Proof, ProveError, Prover, prove
from rac.testing.world import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, Fault, TravelWorld

__all__ = [
    "AdapterConformance", "TRAVEL_COMPENSATIONS", "TRAVEL_READ_ONLY", "Fault",
    "LifecycleStore", "Proof", "ProveError", "Prover", "TravelWorld", "VirtualClock",
    "abandon_runs",
    "assert_compensated_once", "assert_no_live_effects", "assert_rollback_order", "statuses",
    "prove", "summary",
]

if TYPE_CHECKING:
    from rac.testing.adapters import AdapterConformance


def __getattr__(name: str) -> Any:
    if name == "AdapterConformance":  # needs pytest: imported only when asked for
        try:
            from rac.testing.adapters import AdapterConformance
        except ImportError as e:
            raise ImportError(f"rac.testing.AdapterConformance needs pytest: install the core's "
                              f"'testing' extra (from a checkout: pip install "
                              f"'./packages/rac-core[testing]') ({e})") from e
        return AdapterConformance
    raise AttributeError(f"module 'rac.testing' has no attribute {name!r}")
