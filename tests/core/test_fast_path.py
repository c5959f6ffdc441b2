"""The blocking shortcut (rac.run.fast) and the general flow write the same log: the same
records, field by field, for the same calls; and the core and reliability suites pass with the
shortcut off (they run with it on by default)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import rac
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


def test_the_core_and_reliability_suites_pass_with_the_shortcut_off() -> None:
    if os.environ.get("RAC_FAST_PATH") == "0":
        pytest.skip("already running with the shortcut off")
    env = {**os.environ, "RAC_FAST_PATH": "0"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
         "tests/core", "tests/reliability", "--deselect",
         "tests/core/test_fast_path.py::test_the_core_and_reliability_suites_pass_with_the_"
         "shortcut_off"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
