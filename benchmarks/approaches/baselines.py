"""Baselines without a safety net: no recovery at all, and recovery the prompt asks for."""

from __future__ import annotations

from dataclasses import dataclass

from benchmarks.approaches.base import RunResult, Setup, run_bare_policy
from benchmarks.harness.policies import PlannerPolicy, ReActPolicy

#: what the forgetful model gets wrong besides forgetting (the sweep varies p_forget)
P_MISREAD = 0.05
P_DUPLICATE = 0.5


@dataclass
class NoRecovery:
    """A fixed plan that stops at the first error and leaves whatever it did in place."""

    name: str = "no-recovery"

    def run(self, setup: Setup) -> RunResult:
        """Run the planner bare."""
        return run_bare_policy(PlannerPolicy(setup.scenario, setup.world, setup.seed), setup)


@dataclass
class PromptedRecovery:
    """The prompt tells the model to retry transient errors twice and, when it gives up, to undo
    what it did; the forgetful policy does so from memory."""

    p_forget: float
    name: str = ""

    def __post_init__(self) -> None:
        if not self.name:
            self.name = f"prompted-p{self.p_forget:g}"

    def run(self, setup: Setup) -> RunResult:
        """Run the forgetful ReAct policy bare."""
        policy = ReActPolicy(setup.scenario, setup.world, setup.seed, retries=2, self_undo=True,
                             p_forget=self.p_forget, p_misread=P_MISREAD,
                             p_duplicate=P_DUPLICATE)
        return run_bare_policy(policy, setup)
