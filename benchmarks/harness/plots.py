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


def residual_plot(figures: dict[str, Any], path: Path) -> None:
    """Runs leaving side effects behind (I1), with 95% intervals, per approach."""
    apps = figures["approaches"]
    names = list(apps)
    rates = [apps[n]["residual_rate"] * 100 for n in names]
    lo = [max(0.0, r - apps[n]["residual_ci95"][0] * 100) for n, r in zip(names, rates,
                                                                        strict=True)]
    hi = [max(0.0, apps[n]["residual_ci95"][1] * 100 - r) for n, r in zip(names, rates,
                                                                        strict=True)]
    fig, ax = plt.subplots(figsize=(8, 3.6))
    colors = ["#2a9d8f" if n.startswith("rac") else "#999999" for n in names]
    ax.bar(names, rates, yerr=[lo, hi], color=colors, capsize=3)
    ax.set_ylabel("% of runs violating I1")
    ax.set_title("Side effects left behind (all scenarios and fault classes)")
    ax.tick_params(axis="x", rotation=35)
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
