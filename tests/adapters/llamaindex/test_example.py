"""examples/llamaindex_trip.py runs offline and ends with the replanned trip booked."""

import importlib.util
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "llamaindex_trip.py"


async def test_the_example_runs_offline_and_replans(capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAC_MODEL", raising=False)
    spec = importlib.util.spec_from_file_location("llamaindex_trip", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    await module.main()
    out = capsys.readouterr().out
    assert "Undone, newest first: book_hotel HT-102 (via cancel_hotel), book_flight FL-101" in out
    assert "Live bookings: [('car', 'PAR', 'partner'), ('flight', 'PAR', 'OSL->PAR'), " \
           "('hotel', 'PAR', '2 nights')]" in out
    assert ": completed" in out
