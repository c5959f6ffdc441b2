"""The LlamaIndex overhead benchmark still runs (a few calls; its figures are not checked:
speed is measured by the benchmark itself, never asserted in tests)."""

import argparse

from benchmarks.suites import llamaindex_overhead


async def test_the_overhead_benchmark_measures_both_stores() -> None:
    opts = argparse.Namespace(calls=2, two_call_turns=2, tool_calls=3, warmup=1)
    rows = await llamaindex_overhead.measure(opts)
    assert [r["store"] for r in rows] == ["memory", "sqlite"]
    for row in rows:
        for kind in ("agent", "agent_two_calls"):
            assert set(row[kind]) >= {"bare_us", "rac_us", "overhead_us", "overhead_pct_median"}
        assert row["agent_two_calls"]["flushed_commits_per_run"] >= 0
        assert set(row["tool"]) == {"bare_us", "rac_us", "overhead_us"}
    # With the SQLite log, the floor of the flushed commits a run makes is timed beside it.
    assert set(rows[1]["agent_two_calls"]) >= {"fsync_floor_us", "beyond_floor_us"}
