"""Turn per-run rows into the figures: per approach, and per approach and fault class."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from benchmarks.harness.fault_classes import ABORT, ATTENTION
from benchmarks.harness.invariants import INVARIANTS
from benchmarks.harness.stats import mean, wilson

Row = dict[str, Any]
#: classes where the mechanism has to do real recovery work (for the policy-step comparison)
FAULT_HEAVY = ("transient", "ambiguous", "misleading", "permanent_alt", "comp_transient")
UNSOLVABLE = ("unsolvable", "comp_transient")


def _clean_baseline(rows: list[Row]) -> dict[tuple[str, str, int], Row]:
    return {(r["approach"], r["scenario"], r["seed"]): r for r in rows if r["cls"] == "clean"}


def summarise(rows: list[Row], baseline: dict[tuple[str, str, int], Row]) -> dict[str, Any]:
    """Figures for one group of runs."""
    n = len(rows)
    residual = sum(1 for r in rows if r["violations"]["I1"])
    lo, hi = wilson(residual, n)
    goal_rows = [r for r in rows if r["expected"] == "goal"]
    unsolv = [r for r in rows if r["cls"] in UNSOLVABLE]
    attention = [r for r in rows if r["expected"] == ATTENTION]
    extra_calls, extra_steps = [], []
    for r in rows:
        base = baseline.get((r["approach"], r["scenario"], r["seed"]))
        if base is not None and r["cls"] != "clean":
            extra_calls.append(r["tool_calls"] - base["tool_calls"])
            extra_steps.append(r["policy_steps"] - base["policy_steps"])
    rec = [r["recovery_time"] for r in rows if r["recovery_time"] is not None]
    return {
        "runs": n,
        "residual_runs": residual,
        "residual_rate": round(residual / n, 4) if n else 0.0,
        "residual_ci95": [round(lo, 4), round(hi, 4)],
        "violations": {k: sum(1 for r in rows if r["violations"][k]) for k in INVARIANTS},
        "runs_violating_any": sum(1 for r in rows if any(r["violations"].values())),
        "goal_completion": round(mean([1.0 if r["goal_met"] else 0.0 for r in goal_rows]), 4)
        if goal_rows else None,
        "correct_abort_rate": round(mean([1.0 if (r["residual"] == 0 and r["status"] == ABORT)
                                          else 0.0 for r in unsolv]), 4) if unsolv else None,
        "needs_attention_named_rate": round(mean([
            1.0 if (r["status"] == ATTENTION and not r["violations"]["I1"]) else 0.0
            for r in attention]), 4) if attention else None,
        "policy_steps": round(mean([r["policy_steps"] for r in rows]), 3),
        "tool_calls": round(mean([r["tool_calls"] for r in rows]), 3),
        "extra_tool_calls": round(mean(extra_calls), 3),
        "extra_policy_steps": round(mean(extra_steps), 3),
        "recovery_time_s": round(mean(rec), 2) if rec else None,
        "crashed": sum(1 for r in rows if r["crashed"]),
    }


def aggregate(rows: list[Row], approach_order: list[str]) -> dict[str, Any]:
    """``approaches``, ``by_class``, ``by_world`` and the examples of violations."""
    baseline = _clean_baseline(rows)
    by_app: dict[str, list[Row]] = defaultdict(list)
    by_cls: dict[tuple[str, str], list[Row]] = defaultdict(list)
    by_world: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for r in rows:
        by_app[r["approach"]].append(r)
        by_cls[(r["approach"], r["cls"])].append(r)
        by_world[(r["approach"], r["world"])].append(r)
    names = [a for a in approach_order if a in by_app]
    out: dict[str, Any] = {"approaches": {}, "by_class": {}, "by_world": {}, "examples": {}}
    for a in names:
        s = summarise(by_app[a], baseline)
        heavy = [r for r in by_app[a] if r["cls"] in FAULT_HEAVY]
        s["policy_steps_fault_heavy"] = round(mean([r["policy_steps"] for r in heavy]), 3)
        out["approaches"][a] = s
        out["by_class"][a] = {c: summarise(v, baseline) for (ap, c), v in by_cls.items()
                              if ap == a}
        out["by_world"][a] = {w: summarise(v, baseline) for (ap, w), v in by_world.items()
                              if ap == a}
        ex: dict[str, str] = {}
        for r in by_app[a]:
            for k, msg in r["violations"].items():
                if msg and k not in ex:
                    ex[k] = f"{r['scenario']} [{r['cls']}] seed {r['seed']}: {msg}"
        out["examples"][a] = ex
    return out
