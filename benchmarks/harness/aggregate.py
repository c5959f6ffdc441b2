"""Turn per-run rows into the figures: per approach, and per approach and fault class."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from benchmarks.harness.fault_classes import ABORT, ATTENTION
from benchmarks.harness.invariants import INVARIANTS
from benchmarks.harness.stats import mean, wilson

Row = dict[str, Any]
#: classes where the mechanism has to do real recovery work (for the policy-step comparison)
FAULT_HEAVY = ("transient", "garbled", "ambiguous_first", "misleading", "permanent_alt",
               "comp_transient")
UNSOLVABLE = ("unsolvable", "comp_transient")


def _clean_baseline(rows: list[Row]) -> dict[tuple[str, str, str, int], Row]:
    return {(r["approach"], r["scenario"], r["variant"], r["seed"]): r for r in rows
            if r["cls"] == "clean"}


def summarise(rows: list[Row],
              baseline: dict[tuple[str, str, str, int], Row]) -> dict[str, Any]:
    """Figures for one group of runs."""
    n = len(rows)
    residual = sum(1 for r in rows if r["outcome"] == "residual")
    false_clean = sum(1 for r in rows if r["false_clean"])
    lo, hi = wilson(residual, n)
    flo, fhi = wilson(false_clean, n)
    goal_rows = [r for r in rows if r["expected"] == "goal"]
    unsolv = [r for r in rows if r["cls"] in UNSOLVABLE]
    attention = [r for r in rows if r["expected"] == ATTENTION]
    extra_calls, extra_steps = [], []
    for r in rows:
        base = baseline.get((r["approach"], r["scenario"], r["variant"], r["seed"]))
        if base is not None and r["cls"] != "clean":
            extra_calls.append(r["tool_calls"] - base["tool_calls"])
            extra_steps.append(r["policy_steps"] - base["policy_steps"])
    rec = [r["recovery_time"] for r in rows if r["recovery_time"] is not None]
    return {
        "runs": n,
        "residual_runs": residual,
        "residual_rate": round(residual / n, 4) if n else 0.0,
        "residual_ci95": [round(lo, 4), round(hi, 4)],
        "silent_residual_runs": sum(1 for r in rows if r["silent_residual"]),
        "totals_off_runs": sum(1 for r in rows if r["totals_off"]),
        "double_undo_runs": sum(1 for r in rows if r["double_undo"]),
        # the cost of caution: the run named something as possibly live, and nothing was
        "named_nothing_live_runs": sum(1 for r in rows if r["status"] == ATTENTION
                                       and r["outcome"] != "residual"),
        "false_clean_runs": false_clean,
        "false_clean_rate": round(false_clean / n, 4) if n else 0.0,
        "false_clean_ci95": [round(flo, 4), round(fhi, 4)],
        "equivalent_clean_runs": sum(1 for r in rows if r["outcome"] == "equivalent_clean"),
        "clean_runs": sum(1 for r in rows if r["outcome"] == "clean"),
        "compensated_runs": sum(1 for r in rows if r["compensations"] > 0),
        "needed_compensation_runs": sum(1 for r in rows if r["needed_compensation"]),
        "needed_compensation_share": round(
            sum(1 for r in rows if r["needed_compensation"]) / n, 4) if n else 0.0,
        "compensations": sum(r["compensations"] for r in rows),
        "unundoable_runs": sum(1 for r in rows if r["unundoable"]),
        "ledger_diff_disagreements": sum(1 for r in rows if r["disagreements"]),
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


#: the counts kept per (world, fault class, variant)
CELL_KEYS = ("runs", "residual_runs", "silent_residual_runs", "false_clean_runs",
             "totals_off_runs", "double_undo_runs", "named_nothing_live_runs",
             "equivalent_clean_runs", "clean_runs", "compensated_runs",
             "needed_compensation_runs", "compensations", "unundoable_runs",
             "ledger_diff_disagreements", "policy_steps", "goal_completion")


def _short(s: dict[str, Any]) -> dict[str, Any]:
    return {k: s[k] for k in CELL_KEYS}


def live_by_tool(rows: list[Row]) -> dict[str, dict[str, int]]:
    """World -> tool -> how many residual runs left an effect of that tool live (each run's
    first five live effects, as the rows keep them)."""
    out: dict[str, dict[str, int]] = defaultdict(dict)
    for r in rows:
        if r["outcome"] != "residual":
            continue
        tools = {item.rsplit(" (", 1)[-1].rstrip(")") for item in r["live"]}
        for tool in tools:
            out[r["world"]][tool] = out[r["world"]].get(tool, 0) + 1
    return {w: dict(sorted(t.items())) for w, t in sorted(out.items())}


def _headline(rows: list[Row], baseline: dict[tuple[str, str, str, int], Row]) -> dict[str, Any]:
    s = summarise(rows, baseline)
    heavy = [r for r in rows if r["cls"] in FAULT_HEAVY]
    s["policy_steps_fault_heavy"] = round(mean([r["policy_steps"] for r in heavy]), 3)
    return s


def aggregate(rows: list[Row], approach_order: list[str]) -> dict[str, Any]:
    """``approaches`` (the headline: the ``plain`` variant, where no tool dedupes a repeat),
    ``approaches_keyed`` (the same over the ``keyed`` variant's cells), ``by_class`` and
    ``by_world`` (plain), ``by_variant``, every cell, and examples of violations."""
    baseline = _clean_baseline(rows)
    keyed = [r for r in rows if r["variant"] == "keyed"]
    rows_all, rows = rows, [r for r in rows if r["variant"] == "plain"]
    by_app: dict[str, list[Row]] = defaultdict(list)
    by_cls: dict[tuple[str, str], list[Row]] = defaultdict(list)
    by_world: dict[tuple[str, str], list[Row]] = defaultdict(list)
    by_variant: dict[tuple[str, str], list[Row]] = defaultdict(list)
    by_cell: dict[tuple[str, str], list[Row]] = defaultdict(list)
    by_keyed: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        by_app[r["approach"]].append(r)
        by_cls[(r["approach"], r["cls"])].append(r)
        by_world[(r["approach"], r["world"])].append(r)
    for r in keyed:
        by_keyed[r["approach"]].append(r)
    for r in rows_all:
        by_variant[(r["approach"], r["variant"])].append(r)
        by_cell[(r["approach"], f"{r['world']}/{r['cls']}/{r['variant']}")].append(r)
    names = [a for a in approach_order if a in by_app]
    out: dict[str, Any] = {"approaches": {}, "approaches_keyed": {}, "by_class": {},
                           "by_world": {}, "by_variant": {}, "by_world_class_variant": {},
                           "live_by_tool": {}, "examples": {}, "false_clean_examples": {}}
    for a in names:
        if by_keyed.get(a):
            out["approaches_keyed"][a] = _headline(by_keyed[a], baseline)
        out["approaches"][a] = _headline(by_app[a], baseline)
        out["by_class"][a] = {c: summarise(v, baseline) for (ap, c), v in by_cls.items()
                              if ap == a}
        out["by_world"][a] = {w: summarise(v, baseline) for (ap, w), v in by_world.items()
                              if ap == a}
        out["by_variant"][a] = {w: summarise(v, baseline) for (ap, w), v in by_variant.items()
                                if ap == a}
        out["by_world_class_variant"][a] = {
            c: _short(summarise(v, baseline)) for (ap, c), v in sorted(by_cell.items())
            if ap == a}
        out["live_by_tool"][a] = live_by_tool(by_app[a])
        out["false_clean_examples"][a] = [
            f"{r['scenario']} [{r['cls']}/{r['variant']}] seed {r['seed']}: live "
            + ", ".join(r["live"]) for r in rows_all if r["approach"] == a
            and r["false_clean"]][:3]
        ex: dict[str, str] = {}
        for r in by_app[a]:
            for k, msg in r["violations"].items():
                if msg and k not in ex:
                    ex[k] = f"{r['scenario']} [{r['cls']}] seed {r['seed']}: {msg}"
        out["examples"][a] = ex
    return out
