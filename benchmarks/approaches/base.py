"""What every approach shares: setting up a seeded world, the agent loop, and the result."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from benchmarks.harness.clock import POLICY_STEP_S, VirtualClock
from benchmarks.harness.fault_classes import FaultClass
from benchmarks.harness.faults import FaultLayer
from benchmarks.harness.policies import Abort, Call, Decision, Finish, Observation, ReActPolicy
from benchmarks.harness.scenario import Scenario
from benchmarks.worlds.base import World

GOAL, ABORT, ATTENTION = "goal", "abort", "needs_attention"


@dataclass
class LogView:
    """What an approach's own log believes: effect ids live, and effect ids it undid."""

    live: set[str] = field(default_factory=set)
    undone: set[str] = field(default_factory=set)


@dataclass
class Setup:
    """One seeded episode: the world, its fault layer, and the wrapped tools."""

    scenario: Scenario
    fault_class: FaultClass
    seed: int
    clock: VirtualClock
    world: World
    layer: FaultLayer
    tools: dict[str, Callable[..., Any]]


def make_setup(scenario: Scenario, fault_class: FaultClass, seed: int) -> Setup:
    """Build the world and the fault layer for ``seed``; same schedule for every approach."""
    clock = VirtualClock()
    world = scenario.make_world(clock)
    layer = FaultLayer(fault_class.rules(scenario, world), seed=seed, scenario=scenario.key,
                       clock=clock)
    world.idempotency_key = lambda: layer.current_key
    return Setup(scenario, fault_class, seed, clock, world, layer,
                 layer.wrap_all(world.tools()))


@dataclass
class RunResult:
    """The end of one run as the approach claims it, plus its costs."""

    status: str
    policy_steps: int
    report: str = ""
    log: LogView | None = None
    planning_calls: int = 0
    crashed: str | None = None


@dataclass
class Episode:
    """A finished run with its setup, for the invariant checks and the figures."""

    approach: str
    setup: Setup
    result: RunResult
    recovery_time: float | None = None

    @property
    def tool_calls(self) -> int:
        """Every call that reached a tool (retries and compensations included)."""
        return self.setup.layer.stats.tool_calls


class Approach(Protocol):
    """Runs one scenario under one fault schedule."""

    name: str

    def run(self, setup: Setup) -> RunResult:
        """Drive the scenario to its end and say how it ended."""
        ...


def bare_execute(setup: Setup, call: Call) -> Observation:
    """Call a tool directly, as an agent with no safety net does; errors come back as text."""
    try:
        value = setup.tools[call.tool](**call.args)
    except Exception as e:  # noqa: BLE001 - every tool error is an observation
        return Observation(False, error=str(e) or type(e).__name__)
    return Observation(True, value=value)


def drive(policy: ReActPolicy, setup: Setup,
          execute: Callable[[Call], Observation], *, max_steps: int = 200) -> Decision:
    """The agent loop: ask the policy, execute its call, feed back the observation."""
    obs: Observation | None = None
    for _ in range(max_steps):
        decision = policy.decide(obs)
        setup.clock.advance(POLICY_STEP_S)
        if isinstance(decision, Finish | Abort):
            return decision
        obs = execute(decision)
    return Abort("step budget exhausted")


def run_bare_policy(policy: ReActPolicy, setup: Setup) -> RunResult:
    """Run a policy with no mechanism under it."""
    end = drive(policy, setup, lambda c: bare_execute(setup, c))
    if isinstance(end, Finish):
        return RunResult(GOAL, policy.steps)
    return RunResult(ABORT, policy.steps, report=getattr(end, "reason", ""))
