"""The issue's targets, evaluated on the figures (a failed target is reported, never hidden)."""

from __future__ import annotations

from typing import Any

RAC_NAMES = ("rac-memory", "rac-sqlite", "rac-memory+lookup")


def rollback_slope(by_n: dict[str, float]) -> tuple[float, float]:
    """Least-squares fit of rollback seconds against records: (microseconds per record,
    fixed milliseconds per rollback)."""
    xs = [float(n) for n in by_n]
    ys = list(by_n.values())
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else 0.0
    return slope * 1e6, (my - slope * mx) * 1e3


def evaluate(figures: dict[str, Any], overhead: dict[str, Any],
             crash: dict[str, Any] | None = None,
             rollback: dict[str, Any] | None = None) -> dict[str, Any]:
    """``{target: {"pass": bool, "detail": str}}``."""
    out: dict[str, Any] = {}
    mem_over = overhead.get("rac-memory")
    if mem_over:
        # the absolute 15 us target is replaced by ratios (issue 12): flat in log size here,
        # and <= 0.8x the reference's core path in benchmarks/suites/core_path.py
        base = max(mem_over["0"]["median"], 0.1)
        drift = mem_over["1000"]["median"] / base
        out["rac-core: memory store per-call overhead flat in log size (1000 records "
            "<= 1.25x 0 records)"] = {
            "pass": drift <= 1.25,
            "detail": ", ".join(f"{k}: {v['median']} us" for k, v in mem_over.items())
            + f"; ratio {drift:.2f}"}
    mem_roll = (rollback or {}).get("rac-memory")
    if mem_roll and "10000" in mem_roll:
        per_record, fixed = rollback_slope(mem_roll)
        out["rac-core: memory store rollback linear, <= 20 us per record (10,000 in < 0.2 s)"] = {
            "pass": mem_roll["10000"] < 0.2 and per_record <= 20.0,
            "detail": f"10,000 records in {mem_roll['10000']:.3f} s; fit: {per_record:.1f} us "
                      f"per record + {fixed:.2f} ms per rollback"}
    if crash is not None:
        out["rac-sqlite: I8, after a crash at every point and recovery, I1-I7 hold"] = {
            "pass": crash["crash_points"] > 0 and crash["violating"] == 0,
            "detail": f"{crash['crash_points']} crashes over {len(crash['cases'])} cases; "
                      f"violating: {crash['violating']}"}
    if crash is not None:
        out["rac-sqlite: no false all-clear after a crash at any point and recovery"] = {
            "pass": crash["crash_points"] > 0 and crash["false_clean"] == 0,
            "detail": f"{crash['crash_points']} crashes; reported compensated while an effect "
                      f"was live: {crash['false_clean']}; residual: {crash['residual']}"}
    for name in RAC_NAMES:
        s = figures["approaches"].get(name)
        if not s:
            continue
        worst = sorted(((c["false_clean_runs"], cls) for cls, c in
                        figures["by_class"][name].items() if c["false_clean_runs"]),
                       reverse=True)[:3]
        out[f"{name}: no false all-clear (false_clean_runs == 0)"] = {
            "pass": s["false_clean_runs"] == 0,
            "detail": f"{s['false_clean_runs']} of {s['runs']} runs; worst classes: "
                      + (", ".join(f"{cls} {n}" for n, cls in worst) or "none")}
        out[f"{name}: no silent residual (silent_residual_runs == 0)"] = {
            "pass": s["silent_residual_runs"] == 0,
            "detail": f"{s['silent_residual_runs']} of {s['runs']} runs "
                      f"(residual, named or not: {s['residual_runs']})"}
    apps = figures["approaches"]
    if "saga" in apps and "rac-memory" in apps:
        saga = apps["saga"]["policy_steps_fault_heavy"]
        racs = apps["rac-memory"]["policy_steps_fault_heavy"]
        ratio = saga / racs if racs else float("inf")
        out["RAC needs >= 1.5x fewer policy steps than saga planning (fault-heavy classes)"] = {
            "pass": ratio >= 1.5,
            "detail": f"saga {saga:.2f} vs RAC {racs:.2f} steps per run: {ratio:.2f}x"}
    mem, ref = overhead.get("rac-memory"), overhead.get("reference")
    if mem and ref:
        empty_ok = mem["0"]["median"] <= ref["0"]["median"]
        half_ok = all(mem[k]["median"] <= ref[k]["median"] / 2 for k in ("10", "100", "1000"))
        out["RAC memory overhead <= reference on an empty run"] = {
            "pass": empty_ok,
            "detail": f"{mem['0']['median']} us vs {ref['0']['median']} us (median)"}
        out["RAC memory overhead <= half the reference's with >= 10 records"] = {
            "pass": half_ok,
            "detail": ", ".join(f"{k}: {mem[k]['median']} vs {ref[k]['median']} us"
                                for k in ("10", "100", "1000"))}
    return out
