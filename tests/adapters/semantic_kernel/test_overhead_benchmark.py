"""The overhead benchmark's agents do what it claims to time: one or two function calls per
invocation, one completed run each with RAC (timings are the benchmark's business, not this)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.suites import semantic_kernel_overhead as bench


async def test_each_invocation_is_one_call_and_one_completed_run() -> None:
    result = await bench.measure("memory://", calls=3, warmup=1)  # asserts the runs itself
    assert result["store"] == "memory"
    assert set(result) >= {"bare_us", "rac", "pass_through_filters"}


async def test_a_two_call_turn_is_timed_beside_its_fsync_floor(tmp_path: Path) -> None:
    result = await bench.measure(f"sqlite:///{tmp_path / 'rac.db'}", calls=3, warmup=1,
                                 per_turn=2, floor_dir=tmp_path)
    assert result["calls_per_turn"] == 2
    assert result["flushed_commits_per_turn"] >= 1
    assert set(result) >= {"fsync_floor_us", "beyond_floor_us"}
