"""The overhead benchmark's agents do what it claims to time: one function call per
invocation, one completed run each with RAC (timings are the benchmark's business, not this)."""

from __future__ import annotations

from benchmarks.suites import semantic_kernel_overhead as bench


async def test_each_invocation_is_one_call_and_one_completed_run() -> None:
    result = await bench.measure("memory://", calls=3, warmup=1)  # asserts the runs itself
    assert result["store"] == "memory"
    assert set(result) >= {"bare_us", "rac", "pass_through_filters"}
