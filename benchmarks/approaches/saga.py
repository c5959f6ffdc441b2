"""Saga planning (SagaLLM style): plan every step, execute, on failure compensate in reverse and
replan, up to R times.

Cost model (stated, not measured from a model): one planning call per plan, one validation call
per executed step, one call per compensation decided. Transient-looking errors are retried up to
three attempts without model calls; there are no idempotency keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from benchmarks.approaches.base import (
    ABORT,
    ATTENTION,
    GOAL,
    LogView,
    RunResult,
    Setup,
    error_text,
)
from benchmarks.harness.clock import POLICY_STEP_S
from benchmarks.harness.errors import looks_transient
from benchmarks.harness.scenario import Option

MAX_ATTEMPTS = 3


@dataclass
class _Step:
    slot: str
    tool: str
    args: dict[str, Any]
    result: Any


@dataclass
class SagaPlanning:
    """Plan, execute, compensate in reverse, replan."""

    replans: int = 3
    name: str = "saga"

    def _call(self, setup: Setup, tool: str, args: dict[str, Any]) -> tuple[bool, Any, str]:
        err = ""
        for _ in range(MAX_ATTEMPTS):
            try:
                return True, setup.tools[tool](**args), ""
            except Exception as e:  # noqa: BLE001 - the saga sees errors as text
                err = error_text(e)
                if not looks_transient(err):
                    break
        return False, None, err

    def run(self, setup: Setup) -> RunResult:
        """Run the saga to the goal or a compensated abort."""
        excluded: set[tuple[str, str]] = set()
        steps = plans = 0
        log = LogView()
        told: set[int] = set()
        left: list[str] = []
        reason = ""
        while plans <= self.replans:
            plans += 1
            steps += 1
            setup.clock.advance(POLICY_STEP_S)
            done: dict[str, Any] = {}
            executed: list[_Step] = []
            failed = False
            for slot in setup.scenario.slots:
                try:
                    options = [o for o in slot.options(done)
                               if (slot.name, o.label) not in excluded]
                    option: Option | None = options[0] if options else None
                    args = option.args(done) if option is not None else {}
                except (KeyError, TypeError, ValueError, StopIteration, IndexError):
                    # an earlier result cannot be read (a field missing or blank)
                    reason = f"cannot read the earlier results needed for {slot.name}"
                    failed = True
                    break
                if option is None:
                    reason = f"no way left to do {slot.name}"
                    failed = True
                    break
                ok, value, err = self._call(setup, option.tool, args)
                steps += 1
                setup.clock.advance(POLICY_STEP_S)
                if ok:
                    done[slot.name] = value
                    executed.append(_Step(slot.name, option.tool, args, value))
                    eid = setup.world.effect_id(option.tool, value)
                    if eid:
                        log.live.add(eid)
                    continue
                excluded.add((slot.name, option.label))
                reason = f"{option.tool} failed: {err}"
                failed = True
                break
            if not failed:
                return RunResult(GOAL, steps, log=log, planning_calls=plans,
                                 claimed_undone=told)
            left = []
            for step in reversed(executed):
                spec = setup.world.compensations.get(step.tool)
                if spec is None:
                    left.append(step.tool)
                    continue
                steps += 1
                setup.clock.advance(POLICY_STEP_S)
                try:
                    undo_args = spec.build(step.args, step.result)
                except (KeyError, TypeError):
                    left.append(f"{step.tool} (cannot build {spec.tool}: id missing)")
                    continue
                ok, _, err = self._call(setup, spec.tool, undo_args)
                eid = setup.world.effect_id(step.tool, step.result)
                if ok and eid:
                    log.live.discard(eid)
                    log.undone.add(eid)
                elif not ok:
                    left.append(f"{step.tool} (undo via {spec.tool} failed: {err})")
            if left:
                break
            told.update(range(1, setup.layer.stats.tool_calls + 1))  # it believes all undone
            if reason.startswith("no way left"):
                break
        report = reason + ("; still live: " + ", ".join(left) if left else "")
        return RunResult(ATTENTION if left else ABORT, steps, report=report, log=log,
                         planning_calls=plans, claims_clean=not left, claimed_undone=told)
