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
    variant: str
    clock: VirtualClock
    world: World
    layer: FaultLayer
    tools: dict[str, Callable[..., Any]]


def make_setup(scenario: Scenario, fault_class: FaultClass, seed: int,
               variant: str = "plain") -> Setup:
    """Build the world and the fault layer for ``seed``; same schedule for every approach.

    ``variant`` ``keyed`` lets the world's ``keyed_tools`` accept an idempotency key; ``plain``
    (the default) offers no tool a key."""
    if variant not in ("plain", "keyed"):
        raise ValueError(f"unknown world variant {variant!r}: use 'plain' or 'keyed'")
    clock = VirtualClock()
    world = scenario.make_world(clock)
    keyed = world.keyed_tools if variant == "keyed" else frozenset()
    layer = FaultLayer(fault_class.rules(scenario, world), seed=seed, scenario=scenario.key,
                       clock=clock, keyed=frozenset(keyed))
    world.idempotency_key = lambda: layer.current_key
    world.ledger.counter = layer.stats
    return Setup(scenario, fault_class, seed, variant, clock, world, layer,
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
    #: the run ended saying the world is as it was (RAC's ``compensated``, a reference rollback
    #: that returned, a saga or a prompted model that says it undid everything)
    claims_clean: bool = False
    #: tool calls (the fault layer's numbers) whose effects the agent was told are undone
    claimed_undone: set[int] = field(default_factory=set)


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


def error_text(e: BaseException) -> str:
    """A tool error as a model sees it: its type and its text (what LangChain's tool node and
    most agent loops put into the tool message)."""
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__


def bare_execute(setup: Setup, call: Call) -> Observation:
    """Call a tool directly, as an agent with no safety net does; errors come back as text."""
    try:
        value = setup.tools[call.tool](**call.args)
    except Exception as e:  # noqa: BLE001 - every tool error is an observation
        return Observation(False, error=error_text(e))
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
    reason = getattr(end, "reason", "")
    if policy.self_undo and policy.left:
        # it tells the user what it could not undo (its report names the tools and ids)
        return RunResult(ATTENTION, policy.steps,
                         report=reason + "; still live: " + "; ".join(policy.left))
    # A prompted model told to undo what it did ends saying it has cleaned up (from memory).
    return RunResult(ABORT, policy.steps, report=reason, claims_clean=policy.self_undo)
