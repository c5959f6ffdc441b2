"""The write-ahead log: intent before the call, outcome after, one event per state change,
secrets redacted in events and stored records, SQLite durability settings."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
import structlog

import rac
from rac.stores.sql import MIGRATIONS
from rac.testing import TravelWorld


def test_intent_is_written_before_the_tool_runs(make_engine: Any, world: TravelWorld,
                                                 tmp_path: Path) -> None:
    engine = make_engine(store=f"sqlite:///{tmp_path}/log.db")
    seen: list[list[tuple[str, str]]] = []

    def spy(args: dict[str, Any]) -> None:
        # Read the log from a separate connection, as a recoverer after a crash would.
        other = rac.SQLiteStore(tmp_path / "log.db")
        seen.append([(r.tool, str(r.status)) for r in other.get_records(run.run_id)])
        other.close()

    world.on_call("book_hotel", spy)
    with engine.run() as run:
        run.call("book_flight", passenger="a", origin="X", dest="Y")
        run.call("book_hotel", guest="a", city="Rome", nights=1)
    assert seen == [[("book_flight", "completed"), ("book_hotel", "pending")]]
    final = engine.store.get_records(run.run_id)
    assert [(r.tool, str(r.status), r.attempts) for r in final] == [
        ("book_flight", "completed", 1), ("book_hotel", "completed", 1)]
    rec = final[1]
    assert rec.run_id == run.run_id and rec.seq == 2 and rec.agent_id == "agent"
    assert rec.args == {"guest": "a", "city": "Rome", "nights": 1}
    assert rec.result["booking_id"] == "HT-102" and rec.created_at <= rec.updated_at
    assert len(rec.idempotency_key) == 24


def test_every_state_change_emits_one_event(engine: rac.RAC, world: TravelWorld) -> None:
    world.fail("book_car", "permanent")
    with structlog.testing.capture_logs() as logs:
        with engine.run() as run, pytest.raises(rac.ToolCallFailed):
            run.call("book_flight", passenger="a", origin="X", dest="Y")
            run.call("book_car", driver="a", city="Rome")
    record_events = [(e["seq"], e["tool"], e["status"]) for e in logs if e["event"] == "rac.record"]
    assert record_events == [
        (1, "book_flight", "pending"), (1, "book_flight", "completed"),
        (2, "book_car", "pending"), (2, "book_car", "failed"),
        (1, "book_flight", "compensating"), (3, "cancel_flight", "pending"),
        (3, "cancel_flight", "completed"), (1, "book_flight", "compensated")]
    run_events = [e["status"] for e in logs if e["event"] == "rac.run"]
    assert run_events == ["running", "compensating", "compensated"]
    assert all(e["run_id"] == run.run_id for e in logs)


def test_secrets_are_redacted_in_events_and_in_the_database(make_engine: Any,
                                                             tmp_path: Path) -> None:
    secret = "sk-live-TOPSECRET-123456"
    card = "4111 1111 1111 1111"

    def pay(api_key: str, card_number: str, note: str) -> dict[str, Any]:
        raise rac.PermanentError(f"card {card} declined")

    engine = make_engine(store=f"sqlite:///{tmp_path}/log.db", tools=[pay], compensations={},
                         read_only=["pay"])
    with structlog.testing.capture_logs() as logs:
        with engine.run() as run, pytest.raises(rac.ToolCallFailed):
            run.call(pay, api_key=secret, card_number=card, note=f"use card {card}")
    engine.store.close()
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("log.db"))
    assert secret.encode() not in raw and card.encode() not in raw
    assert b"[REDACTED]" in raw
    assert secret not in repr(logs) and card not in repr(logs)
    rec = run.records()[0]
    assert rec.args == {"api_key": "[REDACTED]", "card_number": "[REDACTED]",
                        "note": "use card [REDACTED]"}


def test_sqlite_durability_settings_and_migrations(tmp_path: Path) -> None:
    store = rac.SQLiteStore(tmp_path / "log.db")
    conn = store._conn()
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 30_000
    latest = max(version for version, _ in MIGRATIONS)
    assert store.schema_version() == latest
    store.close()
    again = rac.SQLiteStore(tmp_path / "log.db")  # reopening does not re-apply migrations
    assert again.schema_version() == latest
    rows = sqlite3.connect(tmp_path / "log.db").execute(
        "SELECT COUNT(*) FROM schema_migrations").fetchone()
    assert rows == (len(MIGRATIONS),)


def test_a_failed_write_rolls_back_and_loses_nothing(tmp_path: Path) -> None:
    store = rac.SQLiteStore(tmp_path / "log.db")
    store.create_run(rac.RunInfo("r1"))
    store.append(rac.Record("r1", 1, "book"))
    with pytest.raises(rac.ConflictError):
        store.append(rac.Record("r1", 1, "other"))
    with pytest.raises(rac.StoreError, match="unknown record field"):
        store.update_record("r1", 1, nonsense=1)
    assert [(r.seq, r.tool) for r in store.get_records("r1")] == [(1, "book")]


def test_large_and_odd_results_are_stored_safely(make_engine: Any) -> None:
    class Opaque:
        def __repr__(self) -> str:
            return "<Opaque thing>"

    big = "x" * 200_000

    def fetch(kind: str) -> Any:
        return {"big": big} if kind == "big" else Opaque()

    engine = make_engine(tools=[fetch], compensations={}, read_only=["fetch"],
                         max_value_chars=10_000)
    with engine.run() as run:
        assert run.call(fetch, kind="big") == {"big": big}  # the agent still gets it whole
        assert isinstance(run.call(fetch, kind="odd"), Opaque)
    stored = engine.store.get_records(run.run_id)
    assert stored[0].result["__truncated__"] is True and stored[0].result["size"] > 200_000
    assert len(stored[0].result["sha256"]) == 64
    assert stored[1].result["repr"] == "<Opaque thing>"
