"""Helpers for testing RAC and RAC adapters: a virtual clock, a travel world with real state and
fault injection, assertions on what the world holds, :func:`prove` (inject a failure at every
step of your own scenario and check your own world, see :mod:`rac.testing.proof`), the store
conformance suite (:mod:`rac.testing.conformance`) and the adapter conformance suite
(:class:`AdapterConformance`, from :mod:`rac.testing.adapters`); both suites need pytest.

Names are loaded on first use, so importing a submodule (the pytest plugin,
``rac.testing.pytest_plugin``, which pytest loads in every session) costs nothing more."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "assert_compensated_once": "rac.testing.assertions",
    "assert_no_live_effects": "rac.testing.assertions",
    "assert_rollback_order": "rac.testing.assertions",
    "statuses": "rac.testing.assertions", "summary": "rac.testing.assertions",
    "VirtualClock": "rac.testing.clock", "LifecycleStore": "rac.testing.lifecycle",
    "abandon_runs": "rac.testing.processes",
    "Proof": "rac.testing.proof", "ProveError": "rac.testing.proof",
    "Prover": "rac.testing.proof", "prove": "rac.testing.proof",
    "TRAVEL_COMPENSATIONS": "rac.testing.world", "TRAVEL_READ_ONLY": "rac.testing.world",
    "Fault": "rac.testing.world", "TravelWorld": "rac.testing.world",
    "AdapterConformance": "rac.testing.adapters",
}

__all__ = [
    "AdapterConformance", "Fault", "LifecycleStore", "Proof", "ProveError", "Prover",
    "TRAVEL_COMPENSATIONS", "TRAVEL_READ_ONLY", "TravelWorld", "VirtualClock", "abandon_runs",
    "assert_compensated_once", "assert_no_live_effects", "assert_rollback_order", "prove",
    "statuses", "summary",
]

if TYPE_CHECKING:
    from rac.testing.adapters import AdapterConformance
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


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'rac.testing' has no attribute {name!r}")
    try:
        value = getattr(importlib.import_module(module), name)
    except ImportError as e:
        if name != "AdapterConformance":
            raise
        raise ImportError(f"rac.testing.AdapterConformance needs pytest: install the core's "
                          f"'testing' extra (from a checkout: pip install "
                          f"'./packages/rac-core[testing]') ({e})") from e
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
