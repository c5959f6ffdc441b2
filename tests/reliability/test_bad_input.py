"""Bad input: malformed declarations, unknown tools, huge and non-JSON results, unserialisable
results; and a planted secret that must reach neither the logs nor the database bytes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

import rac
from rac.testing import TRAVEL_COMPENSATIONS, TravelWorld


def test_malformed_declarations_fail_at_registration() -> None:
    world = TravelWorld()
    with pytest.raises(rac.ConfigurationError, match="book_flight"):
        rac.RAC(compensations={"book_flight": "book_flight"}, store="memory://")
    with pytest.raises(rac.ConfigurationError, match="no_such_tool"):
        rac.RAC(compensations={"book_flight": "no_such_tool"}, tools=world.tools(),
                store="memory://")
    with pytest.raises(rac.ConfigurationError, match="booking_id"):
        rac.RAC(compensations={"book_flight": rac.Compensation(
            tool="cancel_flight", args={"booking_id": "nowhere.booking_id"})}, store="memory://")
    with pytest.raises(rac.ConfigurationError):
        rac.RAC(compensations=["book_flight"], store="memory://")  # type: ignore[arg-type]


def test_unknown_tool_is_an_explicit_error() -> None:
    engine = rac.RAC(store="memory://")
    with engine.run() as run, pytest.raises(KeyError, match="unknown tool 'nope'"):
        run.call("nope")


class Opaque:
    def __repr__(self) -> str:
        return "<Opaque thing>"


@pytest.mark.parametrize("value", [Opaque(), b"\x00\xffbytes", {1, 2}, float("nan")])
def test_non_json_results_are_stored_with_their_type(tmp_path: Path, value: Any) -> None:
    engine = rac.RAC(store=f"sqlite:///{tmp_path / 'log.db'}", read_only=["odd"])

    def odd() -> Any:
        return value

    with engine.run() as run:
        assert run.call(odd) is value  # the agent gets the real value back
    (rec,) = engine.store.get_records(run.run_id)
    assert rec.status is rac.RecordStatus.COMPLETED and rec.result is not None


def test_very_large_results_are_capped_with_hash_and_marker(tmp_path: Path) -> None:
    engine = rac.RAC(store=f"sqlite:///{tmp_path / 'log.db'}", read_only=["big"],
                     max_value_chars=10_000)
    huge = {"rows": ["x" * 100] * 5_000}

    def big() -> dict[str, Any]:
        return huge

    with engine.run() as run:
        assert run.call(big) is huge
    (rec,) = engine.store.get_records(run.run_id)
    assert rec.result["__truncated__"] is True
    assert len(rec.result["sha256"]) == 64 and rec.result["size"] > 500_000
    assert (tmp_path / "log.db").stat().st_size < 200_000


def test_the_planted_secret_reaches_neither_logs_nor_database(tmp_path: Path) -> None:
    secret = "sk-live-PLANTED-7f3a9c"
    card = "4111 1111 1111 1111"
    db = tmp_path / "log.db"
    world = TravelWorld()

    def pay(customer: str, api_key: str, card_number: str) -> dict[str, Any]:
        """Pay with a secret key (its value must never be persisted)."""
        return {"charge_id": "CH-1", "token": secret, "echo": f"card {card}"}

    def unpay(charge_id: str) -> dict[str, Any]:
        return {"refunded": charge_id}

    engine = rac.RAC(compensations={**TRAVEL_COMPENSATIONS, "pay": "unpay"},
                     tools=[*world.tools(), pay, unpay], store=f"sqlite:///{db}")
    world.fail("book_car", "permanent", message=f"card {card} declined")
    with capture_logs() as events, pytest.raises(rac.ToolCallFailed):
        with engine.run() as run:
            run.call(pay, customer="ada", api_key=secret, card_number=card)
            run.call("book_car", driver="ada", city="Paris")
    engine.store.close()
    assert events, "no structlog events were captured"
    assert secret not in repr(events) and "4111" not in repr(events)
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("log.db"))
    assert secret.encode() not in raw
    assert b"4111 1111" not in raw and b"4111111111111111" not in raw
    assert b"[REDACTED]" in raw
