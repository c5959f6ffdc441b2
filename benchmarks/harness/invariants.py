"""Invariants I1-I7, checked after every run against the world's ledger (never the log).

I1 no orphan effects: if the goal is met, every live effect belongs to it; otherwise none is
   left, except irreversible or uncompensatable effects that the final report names and a run
   that ends needs_attention (never silently).
I2 no double compensation. I3 no phantom compensation (of an unknown effect, or of one that
   existed before the run and that the goal does not remove). I4 dependents are undone before
   what they depend on. I5 conservation (world-specific: inventory and money add up).
I6 no duplicate live effects for one logical request. I7 the approach's own log agrees with the
   world (n/a for approaches that keep no log).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from benchmarks.approaches.base import ATTENTION, GOAL, Episode

INVARIANTS = ("I1", "I2", "I3", "I4", "I5", "I6", "I7")


@dataclass
class Verdict:
    """The invariant violations of one episode, and the facts the figures need."""

    violations: dict[str, list[str]] = field(default_factory=dict)
    goal_met: bool = False
    residual: int = 0
    claimed: str = ""

    @property
    def ok(self) -> bool:
        """No invariant violated."""
        return not any(self.violations.values())


def _named(report: str, tool: str, eid: str) -> bool:
    return tool in report or eid in report


def check(ep: Episode) -> Verdict:
    """Check I1-I7 for one finished episode."""
    world, scenario, result = ep.setup.world, ep.setup.scenario, ep.result
    ledger = world.ledger
    v: dict[str, list[str]] = {name: [] for name in INVARIANTS}
    live = ledger.live_effects()
    goal = scenario.goal(world)
    residual = 0
    if goal:
        extra = len(live) - scenario.expected_live()
        if extra > 0:
            residual = extra
            v["I1"].append(f"goal met with {extra} extra live effect(s)")
    else:
        residual = len(live)
        for eff in live:
            if result.status == ATTENTION and _named(result.report, eff.tool, eff.eid):
                continue
            v["I1"].append(f"{eff.eid} ({eff.tool}) left live"
                           + ("" if result.status == ATTENTION else " silently"))
    if result.status == GOAL and not goal:
        v["I1"].append("claimed the goal, but the world does not satisfy it")
    for viol in ledger.violations:
        v[viol.invariant].append(viol.detail)
    for eff in ledger.effects.values():
        if eff.pre_existing and not eff.live and eff.eid not in scenario.allowed_undo:
            v["I3"].append(f"{eff.eid} existed before the run and was cancelled")
    v["I5"].extend(world.conservation_errors())
    dupes = Counter(e.key for e in live)
    v["I6"].extend(f"{k} is live {n} times" for k, n in dupes.items() if n > 1)
    if result.log is not None:
        # Compare what both can know: effects of tools that have a compensator.
        world_live = {e.eid for e in live if e.tool in world.compensations}
        log_live = {eid for eid in result.log.live if eid in ledger.effects
                    and ledger.effects[eid].tool in world.compensations}
        log_live |= {eid for eid in result.log.live if eid not in ledger.effects}
        for eid in sorted(log_live - world_live):
            v["I7"].append(f"log says {eid} is live, the world does not")
        for eid in sorted(world_live - log_live):
            v["I7"].append(f"world has {eid} live, the log does not")
    return Verdict({k: x for k, x in v.items()}, goal, residual, result.status)
