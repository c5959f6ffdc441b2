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

and flags on residual runs:

- ``false_clean``: the run says it is compensated, or the agent was told a step was undone,
  while an effect of it is live, or an undo was made twice (a refund paid out again): the worst
  outcome a safety net can have;
- ``silent_residual``: a live effect that a report could name (it has a tool and an id) and
  that the run's reports and status do not name (the status is not ``needs_attention``, or no
  report names the effect's tool or id);
- ``totals_off``: money or stock that does not add up (a conservation check). No report can
  name a total, so this is counted in a column of its own, never as silent.

When the goal is met with more effects than it keeps, which of them are the extra ones is a
choice: the effects the run's reports name are taken as the extra ones first (an in-doubt
booking RAC named, after which the goal was reached another way), then the newest. The goal's
own effects are never counted as silent because a named extra came before them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from benchmarks.approaches.base import ATTENTION

if TYPE_CHECKING:
    from benchmarks.approaches.base import Episode
    from benchmarks.harness.invariants import Verdict
    from benchmarks.worlds.base import World

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
    #: groups of live effects of which ``n`` are extra, but not which ones (duplicates of one
    #: request; the effects of a met goal beyond what it keeps): see :func:`pick_extras`
    surplus: list[tuple[list[Live], int]] = field(default_factory=list)


def goal_split(live: list[tuple[str, Live]], goal: bool,
               expected: int) -> tuple[list[Live], list[tuple[list[Live], int]]]:
    """Live effects (each with the key of the request that made it, in call order) as
    (effects live for sure, surplus groups): with the goal met, every request's repeats are
    one group (all but one of them extra) and, past ``expected``, the first effects of the
    requests are another; without it, everything live is left behind."""
    if not goal:
        return [item for _, item in live], []
    by_key: dict[str, list[Live]] = {}
    for key, item in live:
        by_key.setdefault(key, []).append(item)
    groups = [(items, len(items) - 1) for items in by_key.values() if len(items) > 1]
    kept = [items[0] for items in by_key.values()]
    if len(kept) > expected:
        groups.append((kept, len(kept) - expected))
    return [], groups


def pick_extras(group: list[Live], n: int, report: str) -> list[Live]:
    """The ``n`` effects of ``group`` taken as the extra ones: those ``report`` names first,
    then the newest."""
    named = [x for x in group if _named(report, x)]
    rest = [x for x in reversed(group) if x not in named]
    return (named + rest)[:n]


def double_undos(world: World) -> list[Live]:
    """Effects undone more than once (a second cancel that went through, a refund paid out
    again), each as a live item of the compensator that did it."""
    out = []
    for e in world.ledger.effects.values():
        if e.undo_count > 1:
            spec = world.compensations.get(e.tool)
            tool = spec.tool if spec is not None else e.tool
            out.append(Live(f"{e.eid} undone {e.undo_count} times", tool, e.call_no))
    return out


@dataclass
class RunClass:
    """The classification of one run."""

    outcome: str
    silent_residual: bool
    false_clean: bool
    totals_off: bool
    double_undo: bool
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
    """The judgement of a ledger world: what is live of the run (with the goal met, only what
    goes beyond it), undos made twice, and money or stock that does not add up."""
    world, scenario = ep.setup.world, ep.setup.scenario
    ledger = world.ledger
    sure, surplus = goal_split([(e.key, Live(e.eid, e.tool, e.call_no))
                                for e in ledger.live_effects()], goal, scenario.expected_live())
    sure += [Live(f"I5: {msg}", CONSERVATION) for msg in world.conservation_errors()]
    created = ledger.created_in_run()
    undone = sum(e.undo_count for e in created)
    kept_n = scenario.expected_live() if goal else 0
    needed = len(created) > kept_n or bool(sure) or bool(surplus)
    return Judgement(sure, undone, needed, surplus=surplus)


#: the tool of a live item that is a total (money, stock), not an effect a report could name
CONSERVATION = "conservation"


def _named(report: str, item: Live) -> bool:
    return item.eid in report or (item.tool != CONSERVATION and item.tool in report)


def classify(ep: Episode, verdict: Verdict) -> RunClass:
    """Classify one finished run (``verdict`` gives the goal predicate's answer)."""
    world, result = ep.setup.world, ep.result
    judgement = world.judge(ep) if hasattr(world, "judge") else None
    if judgement is None:
        judgement = ledger_judgement(ep, verdict.goal_met)
    twice = double_undos(world)
    live = list(judgement.live) + twice
    for group, n in judgement.surplus:
        live += pick_extras(group, n, result.report)
    if live:
        outcome = "residual"
    elif judgement.compensations or judgement.needed_compensation:
        outcome = "equivalent_clean"
    else:
        outcome = "clean"
    named_status = result.status == ATTENTION and not result.claims_clean
    effects = [x for x in live if x.tool != CONSERVATION]
    silent = bool(effects) and not (named_status and all(_named(result.report, x)
                                                         for x in effects))
    told = result.claimed_undone
    false_clean = bool(live) and (result.claims_clean
                                  or any(x.call_no and x.call_no in told for x in live))
    return RunClass(outcome, silent, false_clean, len(effects) < len(live), bool(twice),
                    judgement.compensations, judgement.needed_compensation,
                    [f"{x.eid} ({x.tool})" for x in live], list(judgement.unundoable),
                    list(judgement.disagreements))
