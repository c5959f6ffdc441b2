"""Per-run classification, judged on the world's own state (never on an approach's log).

Every run gets exactly one ``outcome``:

- ``clean``: nothing of the run is left but what the goal keeps, and nothing needed undoing;
- ``equivalent_clean``: something was undone and the world is, by the domain's own notion, as if
  it never happened (a ledger world: every extra effect cancelled, stock and money add up;
  tau2: new bookings cancelled with net-zero payments, existing ones with the same itinerary,
  cabin, passengers and bags); what the domain's tools cannot undo is listed apart
  (``unundoable``) and does not make a run residual;
- ``residual``: some effect of the run is still live (an extra or duplicate booking, a booking of
  an aborted run, money paid out twice).

and two flags on residual runs: ``silent_residual`` (a live effect that the run's reports to the
agent and its status do not name: the status is not ``needs_attention``, or no report names the
effect's tool or id) and ``false_clean`` (the run says it is compensated, or the agent was
told a step was undone, while an effect of it is live: the worst outcome a safety net can have).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from benchmarks.approaches.base import ATTENTION

if TYPE_CHECKING:
    from benchmarks.approaches.base import Episode
    from benchmarks.harness.invariants import Verdict

OUTCOMES = ("clean", "equivalent_clean", "residual")


@dataclass(frozen=True)
class Live:
    """One effect of the run that is still in the world and should not be."""

    eid: str
    tool: str
    #: the fault layer's number of the call that made it (0: unknown)
    call_no: int = 0


@dataclass
class Judgement:
    """What the world says about a finished run (a world may supply its own, e.g. a DB diff)."""

    live: list[Live] = field(default_factory=list)
    #: effects undone in the world (compensations that took effect)
    compensations: int = 0
    #: whether anything of the run needed undoing at all
    needed_compensation: bool = False
    #: what the domain's own tools cannot undo, by kind (tau2: seats not released, ...)
    unundoable: list[str] = field(default_factory=list)
    #: disagreements between the world's ledger and its state (a DB diff), if it keeps both
    disagreements: list[str] = field(default_factory=list)


@dataclass
class RunClass:
    """The classification of one run."""

    outcome: str
    silent_residual: bool
    false_clean: bool
    compensations: int
    needed_compensation: bool
    live: list[str]
    unundoable: list[str]
    disagreements: list[str]

    @property
    def residual(self) -> bool:
        """Some effect of the run is still live."""
        return self.outcome == "residual"


def ledger_judgement(ep: Episode, goal: bool) -> Judgement:
    """The judgement of a ledger world: extra live effects (duplicates first) when the goal is
    met, every live effect otherwise, plus money or stock that does not add up."""
    world, scenario = ep.setup.world, ep.setup.scenario
    ledger = world.ledger
    live = ledger.live_effects()
    left: list[Live] = []
    if goal:
        seen: set[str] = set()
        kept = []
        for eff in live:
            if eff.key in seen:
                left.append(Live(eff.eid, eff.tool, eff.call_no))
            else:
                seen.add(eff.key)
                kept.append(eff)
        extra = len(kept) - scenario.expected_live()
        if extra > 0:
            left += [Live(e.eid, e.tool, e.call_no) for e in kept[-extra:]]
    else:
        left = [Live(e.eid, e.tool, e.call_no) for e in live]
    left += [Live(f"I5: {msg}", "conservation") for msg in world.conservation_errors()]
    created = ledger.created_in_run()
    undone = sum(e.undo_count for e in created)
    kept_n = scenario.expected_live() if goal else 0
    needed = len(created) > kept_n or bool(left)
    return Judgement(left, undone, needed)


def _named(report: str, item: Live) -> bool:
    return item.eid in report or (item.tool != "conservation" and item.tool in report)


def classify(ep: Episode, verdict: Verdict) -> RunClass:
    """Classify one finished run (``verdict`` gives the goal predicate's answer)."""
    world, result = ep.setup.world, ep.result
    judgement = world.judge(ep) if hasattr(world, "judge") else None
    if judgement is None:
        judgement = ledger_judgement(ep, verdict.goal_met)
    live = judgement.live
    if live:
        outcome = "residual"
    elif judgement.compensations or judgement.needed_compensation:
        outcome = "equivalent_clean"
    else:
        outcome = "clean"
    named_status = result.status == ATTENTION and not result.claims_clean
    silent = bool(live) and not (named_status and all(_named(result.report, x) for x in live))
    told = result.claimed_undone
    false_clean = bool(live) and (result.claims_clean
                                  or any(x.call_no and x.call_no in told for x in live))
    return RunClass(outcome, silent, false_clean, judgement.compensations,
                    judgement.needed_compensation, [f"{x.eid} ({x.tool})" for x in live],
                    list(judgement.unundoable), list(judgement.disagreements))
