"""The scenarios and approaches of the benchmark, by name (workers rebuild them from names)."""

from __future__ import annotations

import functools

from benchmarks.approaches.agent_saga import AgentSaga
from benchmarks.approaches.base import Approach
from benchmarks.approaches.baselines import NoRecovery, PromptedRecovery
from benchmarks.approaches.rac_engine import RACApproach
from benchmarks.approaches.reference import Reference
from benchmarks.approaches.saga import SagaPlanning
from benchmarks.harness.clock import VirtualClock
from benchmarks.harness.fault_classes import CLASSES, VARIANTS, FaultClass, applicable
from benchmarks.harness.scenario import Scenario
from benchmarks.worlds import jobshop, logistics, shop, tau2_airline, tau2_telecom, travel

P_FORGET_SWEEP = (0.0, 0.1, 0.3, 0.5)


@functools.cache
def scenarios() -> dict[str, Scenario]:
    """Every scenario by ``world/name``."""
    out: dict[str, Scenario] = {}
    for module in (travel, shop, logistics, jobshop, tau2_airline, tau2_telecom):
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
    # (RAC under a forgetful model is not listed: RAC's policy never undoes from memory, so it
    # behaved exactly as rac-memory)
    items += [SagaPlanning(), RACApproach("memory"), RACApproach("sqlite"),
              RACApproach("memory", lookups=True), RACApproach("memory", declared=True),
              Reference(), AgentSaga(retry_all=True),
              AgentSaga(retry_all=False)]
    return {a.name: a for a in items}


@functools.cache
def world_class(scenario_key: str) -> type:
    """The class of the world a scenario runs in."""
    return type(scenarios()[scenario_key].make_world(VirtualClock()))


def runs_in(approach: str, scenario_key: str) -> bool:
    """Whether ``approach`` runs in the scenario's cells (an approach may apply to some worlds
    only: ``rac-memory+lookup`` to those that declare a lookup)."""
    applies = getattr(approaches()[approach], "applies", None)
    return applies is None or bool(applies(world_class(scenario_key)))


def variants(scenario: Scenario) -> tuple[str, ...]:
    """The world variants a scenario runs in: ``plain``, and ``keyed`` where the world has
    tools that take an idempotency key in real life."""
    probe = scenario.make_world(VirtualClock())
    return VARIANTS if probe.keyed_tools else VARIANTS[:1]


@functools.cache
def cells() -> list[tuple[str, str, str]]:
    """Every (scenario, fault class, variant) that applies."""
    return [(sk, fc.name, v) for sk, sc in scenarios().items() for fc in CLASSES
            if applicable(sc, fc) for v in variants(sc)]
