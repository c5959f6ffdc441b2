"""Small statistics helpers."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval for k successes in n trials."""
    if n == 0:
        return (0.0, 0.0)
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return (max(0.0, centre - half), min(1.0, centre + half))


def mean(xs: Sequence[float]) -> float:
    """Arithmetic mean (0 for no values)."""
    return sum(xs) / len(xs) if xs else 0.0


def percentile(xs: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) by nearest rank."""
    if not xs:
        return 0.0
    s = sorted(xs)
    idx = min(len(s) - 1, max(0, math.ceil(q / 100 * len(s)) - 1))
    return s[idx]


def interpolated_percentile(xs: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) by linear interpolation between the nearest ranks."""
    s = sorted(xs)
    k = (len(s) - 1) * q / 100
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def median_p99(xs: Sequence[float]) -> dict[str, float]:
    """Median and p99 (nearest rank, rounded down the middle) of ``xs``, in 0.1 steps."""
    ordered = sorted(xs)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return {"median": round(statistics.median(ordered), 1), "p99": round(p99, 1)}


def overhead_stats(times: Sequence[float], base: Sequence[float]) -> dict[str, Any]:
    """Times against a baseline measured in the same rounds: median and p99 (interpolated),
    the overhead over the baseline's (absolute and in percent) and the median of the
    per-round differences."""
    med, b_med = statistics.median(times), statistics.median(base)
    p99, b_p99 = interpolated_percentile(times, 99), interpolated_percentile(base, 99)
    paired = statistics.median(t - b for t, b in zip(times, base, strict=True))
    return {"us": {"median": round(med, 1), "p99": round(p99, 1)},
            "overhead_us": {"median": round(med - b_med, 1), "p99": round(p99 - b_p99, 1),
                            "paired_median": round(paired, 1)},
            "overhead_pct": {"median": round(100 * (med - b_med) / b_med, 2),
                             "p99": round(100 * (p99 - b_p99) / b_p99, 2)}}
