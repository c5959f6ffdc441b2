"""The blocking shortcut (rac.run.fast) and the general flow write the same log: the same
records, field by field, for the same calls, and the same dependency edges; the suite's command
runs the whole suite a second time with the shortcut off (``scripts/test.sh``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rac
from rac.dependencies import DependencyIndex
from rac.testing import TravelWorld

ROOT = Path(__file__).resolve().parents[2]
_VOLATILE = ("run_id", "idempotency_key", "created_at", "updated_at")


def _log_of(fast: bool, make_engine: Any, world: TravelWorld) -> list[dict[str, Any]]:
    world.fail("book_car", "timeout", times=1, phase="after")
    engine = make_engine(tools=world.tools())
    engine.fast_path = fast
    with engine.run() as run:
        run.call("book_flight", passenger="ann", origin="SFO", dest="CDG")
        run.call("book_hotel", guest="ann", city="Paris", nights=2)
        with pytest.raises(rac.ToolCallFailed):
            run.call("book_car", driver="ann", city="Paris")
    return [{k: v for k, v in r.to_dict().items() if k not in _VOLATILE}
            for r in engine.store.get_records(run.run_id)]


def test_both_paths_write_the_same_records(make_engine: Any) -> None:
    fast = _log_of(True, make_engine, TravelWorld())
    general = _log_of(False, make_engine, TravelWorld())
    assert fast == general
    assert [r["status"] for r in fast][:2] == ["compensated", "compensated"]


def test_the_whole_suite_runs_again_with_the_shortcut_off() -> None:
    """The differential run is part of the suite's command (CI runs it always)."""
    script = (ROOT / "scripts" / "test.sh").read_text()
    assert "RAC_FAST_PATH=0 pytest_pass" in script
    engine = rac.RAC(store="memory://", load_entrypoints=False)
    assert engine.fast_path is (os.environ.get("RAC_FAST_PATH", "1") != "0")


#: a small pool, so that values recur: passed in, then returned (nobody's product), or returned,
#: then passed on (an edge); ids and words, numbers big and small
_value = st.one_of(st.sampled_from(["Paris", "FL-101", "bk_9f2c", "2026-12-01", "x"]),
                   st.sampled_from([7, 1500, 2024]), st.booleans(), st.none())
_call = st.tuples(st.dictionaries(st.sampled_from(["a", "b", "ref_id"]), _value, max_size=3),
                  st.dictionaries(st.sampled_from(["booking_id", "status", "n"]), _value,
                                  max_size=3),
                  st.lists(st.integers(0, 12), max_size=3))


@settings(max_examples=300, deadline=None)
@given(st.lists(_call, max_size=12))
def test_the_shortcuts_lazy_dependency_index_infers_what_the_eager_one_does(
        calls: list[tuple[dict[str, Any], dict[str, Any], list[int]]]) -> None:
    """The shortcut notes inputs and results for the next lookup (``owned=True``,
    ``add_result_later``); the general flow indexes them at once. Same edges either way, also
    across a rollback that forgets what it undid."""
    lazy, eager = DependencyIndex(), DependencyIndex()
    produced: list[Any] = []
    for seq, (args, result, refs) in enumerate(calls, start=1):
        args = {**args, **{f"r{i}": produced[i % len(produced)] for i in refs if produced}}
        assert lazy.dependencies(dict(args), owned=True) == eager.dependencies(args)
        lazy.add_result_later(seq, dict(result), dict(args))
        eager.add_result(seq, result, args)
        produced.extend(v for v in result.values() if isinstance(v, str | int))
        if seq % 5 == 0:
            lazy.forget([seq - 1])
            eager.forget([seq - 1])
