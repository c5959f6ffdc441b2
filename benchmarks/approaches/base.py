"""What every approach shares: setting up a seeded world, the agent loop, and the result."""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Protocol

from benchmarks.harness.clock import POLICY_STEP_S, VirtualClock
from benchmarks.harness.fault_classes import FaultClass
from benchmarks.harness.faults import GATE_TIMEOUT_S, FaultLayer, call_key
from benchmarks.harness.policies import (
    Abort,
    Call,
    Decision,
    Finish,
    Observation,
    Parallel,
    ReActPolicy,
)
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
    if fault_class.prepare is not None:
        fault_class.prepare(scenario, world)
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


def run_batch(setup: Setup, calls: list[Call],
              execute: Callable[[Call], Observation]) -> list[Observation]:
    """The calls of one model turn, as a framework runs them (threads), with the timing the
    fault class asks for. ``parallel_inflight``: the siblings are started first and held inside
    their tools until the failing call has returned to the agent, then released one by one.
    ``parallel_late``: the failing call runs first, the siblings are started a moment after it
    returned. Otherwise the calls run one after the other in order."""
    timing = setup.fault_class.name
    lead = next((i for i, c in enumerate(calls)
                 if setup.layer.fails_for_good(c.tool, c.args)), None)
    if lead is None or timing not in ("parallel_inflight", "parallel_late"):
        return [execute(c) for c in calls]
    out: dict[int, Observation] = {}
    siblings = [i for i in range(len(calls)) if i != lead]
    if timing == "parallel_late":
        out[lead] = execute(calls[lead])
        for i in siblings:
            out[i] = execute(calls[i])
        return [out[i] for i in range(len(calls))]
    held = []
    for i in siblings:
        entered, release = threading.Event(), threading.Event()
        setup.layer.gates[(calls[i].tool, call_key(calls[i].args))] = (entered, release)
        ctx = contextvars.copy_context()  # the agent's scope, as a framework's executor keeps

        def work(i: int = i, ctx: contextvars.Context = ctx) -> None:
            out[i] = ctx.run(execute, calls[i])

        t = threading.Thread(target=work, daemon=True)
        t.start()
        entered.wait(GATE_TIMEOUT_S)
        held.append((t, release))
    out[lead] = execute(calls[lead])
    for t, release in held:
        release.set()
        t.join()
    setup.layer.gates.clear()
    return [out[i] for i in range(len(calls))]


def drive(policy: ReActPolicy, setup: Setup,
          execute: Callable[[Call], Observation], *, max_steps: int = 200,
          turn: Callable[[], AbstractContextManager[Any]] = nullcontext) -> Decision:
    """The agent loop: ask the policy, execute its call (or the calls of a parallel turn,
    inside ``turn()``), feed back the observation."""
    obs: Observation | list[Observation] | None = None
    for _ in range(max_steps):
        decision = policy.decide(obs)
        setup.clock.advance(POLICY_STEP_S)
        if isinstance(decision, Finish | Abort):
            return decision
        if isinstance(decision, Parallel):
            with turn():
                obs = run_batch(setup, decision.calls, execute)
        else:
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
