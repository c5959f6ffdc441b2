"""Runs the benchmark's quick mode and asserts the invariants RAC must hold (not timings)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("react_agent_compensation")
pytest.importorskip("tau2")
pytest.importorskip("matplotlib")

from benchmarks.approaches.base import make_setup  # noqa: E402
from benchmarks.harness import runner  # noqa: E402
from benchmarks.harness.catalog import fault_classes, scenarios  # noqa: E402
from benchmarks.harness.faults import FaultLayer, FaultRule  # noqa: E402
from benchmarks.suites import scenarios as scenario_suite  # noqa: E402

RAC = ("rac-memory", "rac-sqlite")


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    import structlog

    out = tmp_path_factory.mktemp("bench") / "latest.json"
    saved, configured = structlog.get_config(), structlog.is_configured()
    try:  # the runner configures structlog for the whole process: later tests must not see it
        data = scenario_suite.run(quick=True, seeds=3, workers=2, out=out, docs=False, show_progress=False)
    finally:
        if configured:
            structlog.configure(**saved)
        else:
            structlog.reset_defaults()
    data["_path"] = out
    return data


def test_latest_json_has_the_required_keys(quick: dict[str, Any]) -> None:
    on_disk = json.loads(Path(quick["_path"]).read_text())
    for name, s in on_disk["approaches"].items():
        for key in ("runs", "residual_runs", "goal_completion", "policy_steps",
                    "extra_tool_calls"):
            assert key in s, (name, key)
    for name in ("rac-memory", "rac-sqlite", "reference"):
        assert set(on_disk["overhead_us"][name]) == {"0", "10", "100", "1000"}
        for cell in on_disk["overhead_us"][name].values():
            assert {"median", "p99"} <= set(cell)
    assert on_disk["meta"]["seeds"] == 3
    assert on_disk["meta"]["versions"]["react-agent-compensation"] == "0.2.0"


def test_rac_violates_no_invariant_where_compensators_succeed(quick: dict[str, Any]) -> None:
    for name in RAC:
        for cls, s in quick["by_class"][name].items():
            if cls != "comp_permanent":
                assert s["runs_violating_any"] == 0, (name, cls, quick["examples"][name])
        assert quick["approaches"][name]["crashed"] == 0


def test_rac_names_a_failed_compensator_and_needs_attention(quick: dict[str, Any]) -> None:
    for name in RAC:
        perm = quick["by_class"][name]["comp_permanent"]
        assert perm["needs_attention_named_rate"] == 1.0
        assert perm["violations"]["I1"] == 0


def test_rac_completes_goals_and_aborts_cleanly(quick: dict[str, Any]) -> None:
    for name in RAC:
        s = quick["approaches"][name]
        assert s["goal_completion"] == 1.0
        assert s["correct_abort_rate"] == 1.0


def test_every_world_is_measured(quick: dict[str, Any]) -> None:
    assert set(quick["meta"]["worlds"]) == {"travel", "shop", "logistics", "jobshop", "airline"}
    for name in RAC:
        logistics = quick["by_world"][name]["logistics"]
        assert logistics["runs"] > 0
        assert logistics["runs_violating_any"] == 0, quick["examples"][name]


def test_i8_crash_at_every_point_then_recovery_keeps_i1_to_i7(quick: dict[str, Any]) -> None:
    crash = quick["crash_recovery"]
    assert crash["crash_points"] >= 50
    assert crash["violating"] == 0, crash["examples"]
    assert all(v == 0 for v in crash["violations"].values())
    # the points cover the forward path and the rollback, effects included
    for kind in ("after_intent", "after_effect", "after_outcome", "after_status",
                 "before_intent", "after_compensated", "after_end"):
        assert crash["point_kinds"].get(kind, 0) > 0, kind


def test_baselines_do_leave_side_effects(quick: dict[str, Any]) -> None:
    # The benchmark must be able to see failure: the bare baselines leave effects behind.
    assert quick["approaches"]["no-recovery"]["residual_runs"] > 0
    assert quick["approaches"]["prompted-p0.5"]["residual_runs"] > 0


def test_fault_schedule_is_keyed_by_logical_call_and_seeded() -> None:
    from benchmarks.harness.clock import VirtualClock

    rule = FaultRule("t", "5xx", attempts=1, probability=0.5)
    draws = []
    for _ in range(2):
        layer = FaultLayer([rule], seed=7, scenario="s", clock=VirtualClock())
        def tool(i: int) -> int:
            return i

        fn = layer.wrap("t", tool)
        seen = []
        for i in range(20):
            try:
                fn(i=i)
                seen.append(True)
            except Exception:  # noqa: BLE001
                seen.append(False)
        draws.append(seen)
    assert draws[0] == draws[1]
    assert not all(draws[0]) and any(draws[0])


def test_same_schedule_for_every_approach() -> None:
    sc = scenarios()["travel/trip_budget"]
    fc = fault_classes()["transient"]
    a, b = make_setup(sc, fc, 11), make_setup(sc, fc, 11)
    assert a.layer.rules == b.layer.rules
    row1 = runner.run_episode("rac-memory", sc.key, "transient", 11)
    row2 = runner.run_episode("rac-memory", sc.key, "transient", 11)
    assert row1 == row2
