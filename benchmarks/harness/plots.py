"""PNG plots for docs/benchmarks.md (matplotlib, Agg backend)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def _save(fig: Any, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)


def outcomes_plot(figures: dict[str, Any], path: Path) -> None:
    """Share of runs per outcome and approach: clean, equivalent clean, residual named,
    residual silent, and (hatched, a subset of the residual ones) false all-clear."""
    apps = figures["approaches"]
    names = list(apps)
    fig, ax = plt.subplots(figsize=(8.5, 4.0))
    bottom = [0.0] * len(names)
    parts = (("clean", "#8ecae6", lambda s: s["clean_runs"]),
             ("equivalent clean", "#2a9d8f", lambda s: s["equivalent_clean_runs"]),
             ("residual, named", "#f4a261",
              lambda s: s["residual_runs"] - s["silent_residual_runs"]),
             ("residual, silent", "#e76f51", lambda s: s["silent_residual_runs"]))
    for label, color, get in parts:
        vals = [100 * get(apps[n]) / apps[n]["runs"] for n in names]
        ax.bar(names, vals, bottom=bottom, color=color, label=label)
        bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
    fc = [100 * apps[n]["false_clean_runs"] / apps[n]["runs"] for n in names]
    ax.bar(names, fc, bottom=[b - f for b, f in zip(bottom, fc, strict=True)], fill=False,
           hatch="///", edgecolor="black", label="of which: false all-clear")
    ax.set_ylabel("% of runs")
    ax.set_title("How runs end, judged on the world (variant plain: all scenarios and classes)")
    ax.tick_params(axis="x", rotation=35)
    ax.legend(fontsize=7, loc="lower right")
    _save(fig, path)


def false_clean_plot(figures: dict[str, Any], path: Path) -> None:
    """False all-clear rate per fault class, for RAC and the reference."""
    by_class = figures["by_class"]
    names = [n for n in by_class
             if n.startswith(("rac", "agent-saga")) or n in ("reference", "saga")]
    classes = sorted({c for n in names for c in by_class[n]})
    fig, ax = plt.subplots(figsize=(9, 3.8))
    width = 0.8 / max(len(names), 1)
    for i, n in enumerate(names):
        vals = [100 * by_class[n][c]["false_clean_runs"] / by_class[n][c]["runs"]
                if c in by_class[n] else 0.0 for c in classes]
        ax.bar([x + i * width for x in range(len(classes))], vals, width, label=n)
    ax.set_xticks([x + width * (len(names) - 1) / 2 for x in range(len(classes))])
    ax.set_xticklabels(classes, rotation=35, ha="right")
    ax.set_ylabel("% of runs: false all-clear")
    ax.set_title("Told the world is back while an effect is live, per fault class")
    ax.legend(fontsize=7)
    _save(fig, path)


def steps_plot(figures: dict[str, Any], path: Path) -> None:
    """Mean policy steps on fault-heavy classes per approach."""
    apps = figures["approaches"]
    names = list(apps)
    fig, ax = plt.subplots(figsize=(8, 3.6))
    colors = ["#2a9d8f" if n.startswith("rac") else "#999999" for n in names]
    ax.bar(names, [apps[n]["policy_steps_fault_heavy"] for n in names], color=colors)
    ax.set_ylabel("policy steps per run")
    ax.set_title("Model calls (policy steps) under faults")
    ax.tick_params(axis="x", rotation=35)
    _save(fig, path)


def overhead_plot(overhead: dict[str, Any], path: Path) -> None:
    """Median per-call overhead against records already in the run."""
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for name, by_n in overhead.items():
        xs = [int(k) for k in by_n]
        ax.plot([max(x, 1) for x in xs], [by_n[k]["median"] for k in by_n], marker="o",
                label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("records already in the run (0 plotted at 1)")
    ax.set_ylabel("median overhead per call (us)")
    ax.legend()
    _save(fig, path)


def rollback_plot(rollback: dict[str, Any], path: Path) -> None:
    """Rollback time against log size."""
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for name, by_n in rollback.items():
        ax.plot([int(k) for k in by_n], list(by_n.values()), marker="o", label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("completed records rolled back")
    ax.set_ylabel("seconds")
    ax.legend()
    _save(fig, path)
