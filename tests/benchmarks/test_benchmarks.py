"""Runs the benchmark's quick mode and checks what must hold whatever RAC does: every run is
classified, the world's ledger and its database diff agree, the baselines show residuals, the
results file has the keys the docs and the issue name. RAC's own figures are measured, not
asserted (they are what the benchmark reports)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("react_agent_compensation")
pytest.importorskip("tau2")
pytest.importorskip("matplotlib")

import httpx  # noqa: E402

from benchmarks.approaches.base import bare_execute, make_setup  # noqa: E402
from benchmarks.harness import errors, runner  # noqa: E402
from benchmarks.harness.catalog import cells, fault_classes, runs_in, scenarios  # noqa: E402
from benchmarks.harness.clock import VirtualClock  # noqa: E402
from benchmarks.harness.faults import FaultLayer, FaultRule  # noqa: E402
from benchmarks.harness.policies import Call  # noqa: E402
from benchmarks.suites import scenarios as scenario_suite  # noqa: E402

COUNTS = ("runs", "residual_runs", "silent_residual_runs", "false_clean_runs",
          "equivalent_clean_runs", "compensated_runs", "totals_off_runs", "double_undo_runs",
          "named_nothing_live_runs")
SEEDS = 2


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    import structlog

    out = tmp_path_factory.mktemp("bench") / "latest.json"
    saved, configured = structlog.get_config(), structlog.is_configured()
    try:  # the runner configures structlog for the whole process: later tests must not see it
        data = scenario_suite.run(quick=True, seeds=SEEDS, workers=2, out=out, docs=False,
                                  show_progress=False, keep_rows=True)
    finally:
        if configured:
            structlog.configure(**saved)
        else:
            structlog.reset_defaults()
    data["_path"] = out
    return data


def test_latest_json_has_the_required_keys(quick: dict[str, Any]) -> None:
    on_disk = json.loads(Path(quick["_path"]).read_text())
    assert "rows" not in on_disk
    for name, s in on_disk["approaches"].items():
        for key in (*COUNTS, "goal_completion", "policy_steps", "needed_compensation_runs",
                    "extra_tool_calls"):
            assert key in s, (name, key)
        for cell, c in on_disk["by_world_class_variant"][name].items():
            world, cls, variant = cell.split("/")
            assert variant in ("plain", "keyed") and cls in fault_classes(), cell
            assert set(COUNTS) <= set(c), cell
    for name in ("rac-memory", "rac-sqlite", "reference"):
        assert set(on_disk["overhead_us"][name]) == {"0", "10", "100", "1000"}
    assert on_disk["meta"]["seeds"] == SEEDS
    assert on_disk["meta"]["versions"]["react-agent-compensation"] == "0.2.0"
    assert on_disk["meta"]["versions"]["agent-saga"].startswith("2.3.")
    # the headline is the plain variant; the keyed one is reported beside it
    assert set(on_disk["approaches_keyed"]) <= set(on_disk["approaches"])
    assert "agent-saga" in on_disk["approaches_keyed"]


def test_every_run_is_classified_once(quick: dict[str, Any]) -> None:
    rows = quick["rows"]
    expected = sum(1 for a in quick["approaches"] for sk, _, _ in cells() if runs_in(a, sk))
    assert len(rows) == quick["meta"]["runs"] == expected * SEEDS
    # the lookup variant runs where a world declares a lookup (tau2 airline) and nowhere else
    assert {r["world"] for r in rows if r["approach"] == "rac-memory+lookup"} == {
        "tau2_airline"}
    for r in rows:
        assert r["outcome"] in ("clean", "equivalent_clean", "residual"), r
        # the flags only ever mark residual runs, and a false all-clear is a claim of one
        if r["silent_residual"] or r["false_clean"]:
            assert r["outcome"] == "residual", r
        if r["totals_off"] or r["double_undo"]:
            assert r["outcome"] == "residual", r
    for table in ("approaches", "approaches_keyed"):
        for name, s in quick[table].items():
            assert s["clean_runs"] + s["equivalent_clean_runs"] + s["residual_runs"] \
                == s["runs"]
            assert s["false_clean_runs"] <= s["residual_runs"], name
            assert s["compensated_runs"] <= s["runs"], name
    for name in quick["approaches"]:
        plain = [r for r in rows if r["approach"] == name and r["variant"] == "plain"]
        assert quick["approaches"][name]["runs"] == len(plain)


def test_the_ledger_and_the_database_diff_agree(quick: dict[str, Any]) -> None:
    tau2 = [r for r in quick["rows"] if r["world"].startswith("tau2_")]
    assert {r["world"] for r in tau2} == {"tau2_airline", "tau2_telecom"}
    assert len(tau2) > 100
    assert [r for r in tau2 if r["disagreements"]] == []


def test_a_full_database_diff_finds_nothing_the_named_records_missed() -> None:
    runner.quiet()
    for approach in ("rac-memory", "prompted-p0.5", "reference"):
        for cls in ("ambiguous_first", "unsolvable", "comp_ambiguous"):
            for scenario in ("three_passengers", "upgrade_with_companion"):
                row = runner.run_episode(approach, f"tau2_airline/{scenario}", cls,
                                         runner.FULL_DIFF_EVERY - 1)
                assert row["disagreements"] == [], row


def test_the_baselines_show_residuals(quick: dict[str, Any]) -> None:
    # The benchmark must be able to see failure: the bare baselines leave effects behind, and
    # a prompted model that undoes from memory says all is clean while some are live.
    apps = quick["approaches"]
    assert apps["no-recovery"]["residual_runs"] > 0
    assert apps["no-recovery"]["false_clean_runs"] == 0  # it never claims to have cleaned up
    assert apps["prompted-p0.5"]["residual_runs"] > apps["prompted-p0"]["residual_runs"] > 0
    assert apps["prompted-p0.5"]["false_clean_runs"] > 0
    for name, s in apps.items():
        assert s["crashed"] == 0, name
    assert quick["by_world"]["no-recovery"]["tau2_airline"]["residual_runs"] > 0


def test_crash_points_are_recovered_and_classified(quick: dict[str, Any]) -> None:
    crash = quick["crash_recovery"]
    assert crash["crash_points"] >= 50
    assert set(crash["by_variant"]) == {"plain", "keyed", "lookup"}
    # the real tau2 airline domain, recovered with the booking's lookup
    case = crash["cases"]["tau2_airline/three_passengers [unsolvable/lookup]"]
    assert case["crash_points"] >= 15
    for kind in ("after_intent", "after_effect", "after_outcome", "after_status",
                 "before_intent", "after_compensated", "after_end"):
        assert crash["point_kinds"].get(kind, 0) > 0, kind


def test_injected_faults_are_what_real_tools_raise() -> None:
    import rac.errors

    raised: list[BaseException] = []
    for kind in ("timeout", "reset", "5xx", "504", "429", "4xx", "http4xx"):
        layer = FaultLayer([FaultRule("t", kind, message=None)], seed=1, scenario="s",
                           clock=VirtualClock())

        def tool(i: int) -> int:
            return i

        with pytest.raises(Exception) as info:
            layer.wrap("t", tool)(i=1)
        raised.append(info.value)
    assert [type(e) for e in raised[:2]] == [TimeoutError, ConnectionResetError]
    http = [e for e in raised if isinstance(e, httpx.HTTPStatusError)]
    assert [e.response.status_code for e in http] == [503, 504, 429, 400]
    assert http[2].response.headers["Retry-After"] == "2"
    assert type(raised[5]) is ValueError
    for e in raised:
        assert not isinstance(e, rac.errors.RACError | rac.errors.TransientError
                              | rac.errors.PermanentError | rac.errors.ResultError), e
    assert isinstance(errors.http_error("t", 503), httpx.HTTPStatusError)


def test_worlds_replay_a_key_only_in_the_keyed_variant() -> None:
    sc = scenarios()["travel/group_of_3"]
    clean = fault_classes()["clean"]
    for variant, expected in (("plain", 2), ("keyed", 1)):
        setup = make_setup(sc, clean, 0, variant)
        args = {"passenger": "ann", "flight": "AF12"}
        if variant == "keyed":
            args["idempotency_key"] = "k1"
        for _ in range(2):
            assert bare_execute(setup, Call("book_flight", dict(args), "s", "l")).ok
        assert len(setup.world.ledger.live_effects()) == expected


def test_an_in_doubt_fault_commits_then_raises_on_every_attempt() -> None:
    rule = FaultRule("book_flight", "timeout", "after_effect", attempts=None, sticky=True)
    sc = scenarios()["travel/group_of_3"]
    setup = make_setup(sc, fault_classes()["clean"], 0)
    layer = FaultLayer([rule], seed=0, scenario=sc.key, clock=setup.clock)
    book = layer.wrap("book_flight", setup.world.book_flight)
    for _ in range(3):
        with pytest.raises(TimeoutError):
            book(passenger="ann", flight="AF12")
    assert len(setup.world.ledger.live_effects()) == 3
    assert layer.stats.in_doubt == 3


def test_fault_schedule_is_keyed_by_logical_call_and_seeded() -> None:
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
            except httpx.HTTPStatusError:
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


def test_parallel_siblings_are_held_in_flight_until_the_failure_came_back() -> None:
    sc = scenarios()["travel/group_parallel"]
    for cls in ("parallel_inflight", "parallel_late"):
        setup = make_setup(sc, fault_classes()[cls], 0)
        from benchmarks.approaches.baselines import NoRecovery

        NoRecovery().run(setup)
        made = sorted(e.call_no for e in setup.world.ledger.created_in_run())
        # the refused call (cid's) is the first to reach the world; both siblings come after
        assert made == [2, 3], (cls, made)
        assert setup.layer.stats.tool_calls == 3
