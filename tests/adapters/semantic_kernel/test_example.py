"""The trip example runs offline and ends with the replanned trip booked."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "semantic_kernel_trip.py"


async def test_the_example_replans_after_the_rollback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAC_MODEL", raising=False)
    spec = importlib.util.spec_from_file_location("semantic_kernel_trip", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    summary = await module.main()

    assert summary["live"] == [("car", "NCE"), ("flight", "NCE"), ("hotel", "NCE")]
    assert [s for _, s in summary["log"]][:3] == ["compensated", "compensated", "failed"]
    assert "Nice" in summary["answer"]
