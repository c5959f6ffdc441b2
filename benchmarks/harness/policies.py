"""Scripted stand-ins for the model: a planner, a ReAct-style policy and its forgetful variant.

A policy sees observations and returns decisions; each decision is one policy step (one model
call in a real agent). The same policy object runs bare and under RAC.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from benchmarks.harness.errors import looks_transient
from benchmarks.harness.scenario import Option, Scenario
from benchmarks.worlds.base import World


@dataclass
class Call:
    """Call ``tool`` to fill ``slot`` (``undo`` marks a compensation the policy issues itself)."""

    tool: str
    args: dict[str, Any]
    slot: str
    label: str
    undo: bool = False


@dataclass
class Finish:
    """The goal is reached."""


@dataclass
class Abort:
    """Give up; ``reason`` is told to the user."""

    reason: str


@dataclass
class Parallel:
    """Several calls from one model turn (a model message asking for parallel tool calls); the
    next observation is the list of their observations, in this order."""

    calls: list[Call]


Decision = Call | Parallel | Finish | Abort


@dataclass
class Observation:
    """What the agent sees after a call: a value, or an error text; under a mechanism, whether
    it already undid the failed step (``undone``), whether it says it undid everything before it
    too (``reset``: start over), and its report."""

    ok: bool
    value: Any = None
    error: str = ""
    undone: bool = False
    report: str = ""
    reset: bool = False


@dataclass
class Memory:
    """An effect the policy remembers making, with what it needs to undo it."""

    slot: str
    tool: str
    args: dict[str, Any]
    result: Any


@dataclass
class ReActPolicy:
    """Fills the scenario's slots in order, cheapest option first; skips an option that failed;
    replans from a failure report.

    ``retries`` is how often it retries an error that reads as transient itself (0 under RAC,
    which retries for it). ``self_undo`` makes it undo what it remembers before aborting
    (prompted recovery). ``p_forget``, ``p_misread`` and ``p_duplicate`` model a model losing
    track: it forgets an effect it made, misreads an id when undoing, or rebooks after a timeout.
    """

    scenario: Scenario
    world: World
    seed: int
    retries: int = 0
    self_undo: bool = False
    p_forget: float = 0.0
    p_misread: float = 0.0
    p_duplicate: float = 0.0
    steps: int = 0
    done: dict[str, Any] = field(default_factory=dict)
    memory: list[Memory] = field(default_factory=list)
    excluded: set[tuple[str, str]] = field(default_factory=set)
    _pending: Call | None = None
    _tries: int = 0
    _undo_queue: list[Memory] | None = None
    _abort_reason: str = ""
    #: what it tried to undo and could not (it saw the error), or knows it cannot undo
    left: list[str] = field(default_factory=list)
    _batch: list[Call] | None = None

    def __post_init__(self) -> None:
        self.rng = random.Random(f"policy:{self.seed}:{self.scenario.key}")

    # -- the decision loop ---------------------------------------------------------------------
    def decide(self, last: Observation | list[Observation] | None) -> Decision:
        """The next decision given the observation of the previous call (a list after a
        :class:`Parallel` turn)."""
        self.steps += 1
        if isinstance(last, list):
            self._observe_batch(last)
            last = None
        if self._undo_queue is not None:
            return self._next_undo(last)
        if last is not None and self._pending is not None:
            retry = self._observe(self._pending, last)
            if retry is not None:
                return retry
        if self._undo_queue is not None:
            return self._next_undo(None)
        return self._forward()

    def _observe_batch(self, observations: list[Observation]) -> None:
        """Take in every result of a parallel turn (no call of it is retried on its own)."""
        for call, obs in zip(self._batch or [], observations, strict=True):
            self._pending, self._tries = call, self.retries
            self._observe(call, obs)
        self._batch = None
        self._pending = None

    def _forward(self) -> Decision:
        todo = [s for s in self.scenario.slots if s.name not in self.done]
        if self.scenario.params.get("parallel") and len(todo) > 1:
            calls = []
            for slot in todo:
                options = [o for o in slot.options(self.done)
                           if (slot.name, o.label) not in self.excluded]
                if not options:
                    return self._give_up(f"no way left to do {slot.name}")
                calls.append(Call(options[0].tool, options[0].args(self.done), slot.name,
                                  options[0].label))
            self._batch = calls
            self._pending = None
            return Parallel(calls)
        for slot in self.scenario.slots:
            if slot.name in self.done:
                continue
            try:
                options = [o for o in slot.options(self.done)
                           if (slot.name, o.label) not in self.excluded]
                if not options:
                    return self._give_up(f"no way left to do {slot.name}")
                return self._call(slot.name, options[0])
            except (KeyError, TypeError, ValueError, StopIteration, IndexError):
                # An earlier result cannot be read (e.g. an object's repr instead of data).
                return self._give_up(f"cannot read the earlier results needed for {slot.name}")
        self._pending = None
        return Finish()

    def _call(self, slot: str, option: Option) -> Call:
        self._pending = Call(option.tool, option.args(self.done), slot, option.label)
        self._tries = 0
        return self._pending

    def _observe(self, call: Call, obs: Observation) -> Decision | None:
        """Update memory; return a retry decision if the policy retries the same call."""
        if obs.ok:
            self.done[call.slot] = obs.value
            if self.rng.random() >= self.p_forget:
                self.memory.append(Memory(call.slot, call.tool, call.args, obs.value))
            return None
        if obs.undone:
            # The mechanism undid the failed step and says so; replan from what it reports.
            self.excluded.add((call.slot, call.label))
            if obs.reset:
                self.done.clear()
                self.memory.clear()
            return None
        transient = looks_transient(obs.error)
        timed_out = "timeout" in obs.error.lower()
        if transient and self._tries < self.retries:
            if timed_out and self.rng.random() >= self.p_duplicate:
                # Suspects the call went through; does not rebook, moves on without it.
                self.excluded.add((call.slot, call.label))
                return None
            self._tries += 1
            return call
        self.excluded.add((call.slot, call.label))
        return None

    # -- giving up -----------------------------------------------------------------------------
    def _give_up(self, reason: str) -> Decision:
        self._pending = None
        if not self.self_undo or not self.memory:
            return Abort(reason)
        self._abort_reason = reason
        self._undo_queue = list(reversed(self.memory))
        self.memory = []
        return self._next_undo(None)

    def _next_undo(self, last: Observation | None) -> Decision:
        assert self._undo_queue is not None
        if last is not None and self._pending is not None and not last.ok \
                and looks_transient(last.error) and self._tries < self.retries:
            self._tries += 1
            return self._pending
        if last is not None and self._pending is not None and not last.ok:
            self.left.append(f"{self._pending.tool} {self._pending.args} failed: {last.error}")
        if not self._undo_queue:
            self._pending = None
            return Abort(self._abort_reason)
        mem = self._undo_queue.pop(0)
        spec = self.world.compensations.get(mem.tool)
        if spec is None:  # irreversible: nothing to do, but it says so
            self.left.append(f"{mem.tool} cannot be undone")
            return self._next_undo(None)
        try:
            args = spec.build(mem.args, mem.result)
        except (KeyError, TypeError):  # the result it remembers lacks the id: cannot undo it
            self.left.append(f"{mem.tool} has no id to undo it by")
            return self._next_undo(None)
        if self.rng.random() < self.p_misread:
            args = {k: self._misread(v) for k, v in args.items()}
        self._pending = Call(spec.tool, args, mem.slot, "undo", undo=True)
        self._tries = 0
        return self._pending

    def _misread(self, value: Any) -> Any:
        """A plausible wrong id: another effect of the world, or a digit off."""
        if not isinstance(value, str):
            return value
        others = [e for e in self.world.ledger.effects if e != value and e[:2] == value[:2]]
        if others:
            return self.rng.choice(sorted(others))
        return value[:-1] + str((int(value[-1]) + 1) % 10) if value[-1:].isdigit() else value


@dataclass
class PlannerPolicy(ReActPolicy):
    """A fixed plan (cheapest option per slot) that stops at the first error, undoing nothing."""

    def decide(self, last: Observation | None) -> Decision:
        """Next planned call, or stop at the first failure."""
        if isinstance(last, list):
            failed = [c.tool for c, o in zip(self._batch or [], last, strict=True)
                      if not o.ok and not o.undone]
            if failed:
                self.steps += 1
                return Abort(f"{failed[0]} failed")
        elif last is not None and not last.ok and not last.undone:
            self.steps += 1
            return Abort(f"{self._pending.tool if self._pending else 'a call'} failed")
        return super().decide(last)
