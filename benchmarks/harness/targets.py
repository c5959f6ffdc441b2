"""The issue's targets, evaluated on the figures (a failed target is reported, never hidden)."""

from __future__ import annotations

from typing import Any

RAC_NAMES = ("rac-memory", "rac-sqlite")


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
        worst = max(v["median"] for v in mem_over.values())
        out["rac-core: memory store per-call overhead <= 15 us (median) at 0/10/100/1000 "
            "records"] = {
            "pass": worst <= 15.0,
            "detail": ", ".join(f"{k}: {v['median']} us" for k, v in mem_over.items())}
    mem_roll = (rollback or {}).get("rac-memory")
    if mem_roll and "10000" in mem_roll:
        per_record, fixed = rollback_slope(mem_roll)
        out["rac-core: memory store rollback linear, <= 20 us per record (10,000 in < 0.2 s)"] = {
            "pass": mem_roll["10000"] < 0.2 and per_record <= 20.0,
            "detail": f"10,000 records in {mem_roll['10000']:.3f} s; fit: {per_record:.1f} us "
                      f"per record + {fixed:.2f} ms per rollback"}
    if crash is not None:
        out["rac-sqlite: I8, after a crash at every enumerated point and recovery, I1-I7 hold"] = {
            "pass": crash["crash_points"] > 0 and crash["violating"] == 0,
            "detail": f"{crash['crash_points']} crashes over {len(crash['cases'])} cases; "
                      f"violating: {crash['violating']}"}
    for name in RAC_NAMES:
        by_class = figures["by_class"].get(name)
        if not by_class:
            continue
        bad = {c: s["runs_violating_any"] for c, s in by_class.items()
               if c != "comp_permanent" and s["runs_violating_any"]}
        runs = sum(s["runs"] for c, s in by_class.items() if c != "comp_permanent")
        out[f"{name}: zero I1-I7 violations where compensators eventually succeed"] = {
            "pass": not bad,
            "detail": f"{runs} runs; violating runs per class: {bad or 'none'}"}
        perm = by_class.get("comp_permanent")
        if perm:
            rate = perm["needs_attention_named_rate"]
            out[f"{name}: a compensator that fails for good is named, run needs_attention"] = {
                "pass": rate == 1.0 and perm["runs_violating_any"] == perm["violations"]["I1"]
                and perm["violations"]["I1"] == 0,
                "detail": f"{perm['runs']} runs; named and needs_attention in {rate:.0%}"}
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
