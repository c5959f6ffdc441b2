"""The scenarios and approaches of the benchmark, by name (workers rebuild them from names)."""

from __future__ import annotations

import functools

from benchmarks.approaches.base import Approach
from benchmarks.approaches.baselines import NoRecovery, PromptedRecovery
from benchmarks.approaches.rac_engine import RACApproach
from benchmarks.approaches.reference import Reference
from benchmarks.approaches.saga import SagaPlanning
from benchmarks.harness.fault_classes import CLASSES, FaultClass, applicable
from benchmarks.harness.scenario import Scenario
from benchmarks.worlds import airline, jobshop, logistics, shop, travel

P_FORGET_SWEEP = (0.0, 0.1, 0.3, 0.5)


@functools.cache
def scenarios() -> dict[str, Scenario]:
    """Every scenario by ``world/name``."""
    out: dict[str, Scenario] = {}
    for module in (travel, shop, logistics, jobshop, airline):
        for sc in module.scenarios():
            out[sc.key] = sc
    return out


def fault_classes() -> dict[str, FaultClass]:
    """Every fault class by name."""
    return {fc.name: fc for fc in CLASSES}


@functools.cache
def approaches() -> dict[str, Approach]:
    """Every approach by name, in the order the report lists them."""
    items: list[Approach] = [NoRecovery()]
    items += [PromptedRecovery(p) for p in P_FORGET_SWEEP]
    items += [SagaPlanning(), RACApproach("memory"), RACApproach("sqlite"),
              RACApproach("memory", p_forget=0.5), Reference()]
    return {a.name: a for a in items}


def cells() -> list[tuple[str, str]]:
    """Every (scenario, fault class) pair that applies."""
    return [(sk, fc.name) for sk, sc in scenarios().items() for fc in CLASSES
            if applicable(sc, fc)]
