"""Issue 25, whether a call happened is data: ``Record.happened`` (``yes`` / ``no`` /
``maybe``), written with every status change and kept through compensation, dead letters,
crashes, ``rac resume`` and every store, with a migration that reads what older logs wrote
(the words at the end of a dead letter's error). A crash during an in-doubt call's undo
turned it into "happened: yes"."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rac
from rac.lifecycle import UNCERTAIN_NOTE, happened_of
from rac.models import Record, RecordKind, RecordStatus, RunInfo
from rac.stores.sqlite import SQLiteStore
from rac.testing import TravelWorld, VirtualClock
from rac.testing.conformance import make_record, postgres_test_url

FLIGHT = {"passenger": "ann", "origin": "SFO", "dest": "CDG"}


def store_urls() -> list[str]:
    return ["memory://", "sqlite", "postgres"]


@pytest.fixture
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    kind = request.param
    if kind == "sqlite":
        yield f"sqlite:///{tmp_path / 'log.db'}"
    elif kind == "postgres":
        from tests.stores.support import drop_schema

        found = postgres_test_url()
        yield found
        drop_schema(found)
    else:
        yield kind


class Cancels:
    """Cancel a passenger's flights by name (mapped from the booking's arguments, so an
    in-doubt booking can be undone); ``stop`` interrupts the next call, ``refuse`` fails
    every call for good."""

    def __init__(self, world: TravelWorld) -> None:
        self.world = world
        self.stop = 0
        self.refuse = False
        self.calls = 0

    def cancel_passenger_flights(self, passenger: str) -> dict[str, Any]:
        """Cancel every live flight of a passenger."""
        self.calls += 1
        if self.stop:
            self.stop -= 1
            raise KeyboardInterrupt  # the process stops before this undo does anything
        if self.refuse:
            raise rac.PermanentError("airline refuses cancellations today")
        for b in self.world.find_bookings(passenger, "flight")["bookings"]:
            self.world.cancel_flight(b["booking_id"])
        return {"cancelled_for": passenger}


def engine_for(world: TravelWorld, cancels: Cancels, url: str) -> rac.RAC:
    return rac.RAC(tools=[world.book_flight, cancels.cancel_passenger_flights],
                   compensations={"book_flight": rac.Compensation(
                       "cancel_passenger_flights", args={"passenger": "args.passenger"})},
                   effects={"cancel_passenger_flights": "idempotent"}, store=url,
                   clock=VirtualClock(),
                   compensation_retry=rac.RetryPolicy(max_attempts=2, initial_delay=1.0,
                                                      jitter=0))


@pytest.mark.parametrize("url", store_urls(), indirect=True)
def test_an_in_doubt_call_whose_undo_was_interrupted_stays_maybe(url: str) -> None:
    """The booking commits and times out (in doubt); its undo, mapped from its arguments, is
    interrupted; the resume's undo fails for good. The dead letter must still say the
    booking may not have happened: it said "yes" once the undo had begun."""
    world = TravelWorld()
    world.fail("book_flight", "timeout", times=1, phase="after")
    cancels = Cancels(world)
    cancels.stop = 1
    engine = engine_for(world, cancels, url)
    with pytest.raises(KeyboardInterrupt), engine.run() as run:
        with pytest.raises(rac.ToolCallFailed):
            run.call("book_flight", **FLIGHT)
    (rec,) = [r for r in engine.store.get_records(run.run_id) if r.kind is RecordKind.ACTION]
    assert (rec.status, rec.happened) == (RecordStatus.COMPENSATING, "maybe")
    cancels.refuse = True
    done = engine.resume(run.run_id)
    assert len(world.live("flight")) == 1  # nothing cancelled it
    assert done.report is not None and not done.report.clean
    assert [(u.tool, u.happened) for u in done.report.in_doubt] == [("book_flight", "maybe")]
    assert done.report.compensation_failed == []
    text = engine.render(done.report)
    assert "book_flight FL-101 (MAY HAVE HAPPENED" not in text  # no result: no ref
    assert "book_flight (MAY HAVE HAPPENED, not undone" in text
    (rec,) = [r for r in engine.store.get_records(run.run_id) if r.kind is RecordKind.ACTION]
    assert (rec.status, rec.happened) == (RecordStatus.COMPENSATION_FAILED, "maybe")
    assert (rec.error or "").endswith(UNCERTAIN_NOTE)
    comps = [r for r in engine.store.get_records(run.run_id)
             if r.kind is RecordKind.COMPENSATION]
    assert [(c.status, c.happened) for c in comps] == [
        (RecordStatus.FAILED, "maybe"),  # interrupted: recovery closed it as in doubt
        (RecordStatus.FAILED, "no")]  # refused for good: it did not take effect
    engine.close()


@pytest.mark.parametrize("url", store_urls(), indirect=True)
def test_every_status_change_writes_whether_it_happened(url: str) -> None:
    world = TravelWorld()
    world.fail("book_hotel", "permanent", times=1)  # did not happen: evidence
    engine = rac.RAC(tools=world.tools(), store=url, clock=VirtualClock(),
                     compensations={"book_flight": "cancel_flight", "book_hotel": "cancel_hotel"})
    with engine.run() as run:
        run.call("book_flight", **FLIGHT)
        with pytest.raises(rac.ToolCallFailed):
            run.call("book_hotel", guest="ann", city="Paris", nights=1)
    got = [(r.tool, str(r.kind), str(r.status), r.happened)
           for r in engine.store.get_records(run.run_id)]
    assert got == [("book_flight", "action", "compensated", "yes"),
                   ("book_hotel", "action", "failed", "no"),
                   ("cancel_flight", "compensation", "completed", "yes")]
    engine.close()


def _old_log(path: Path, records: list[Record]) -> None:
    """A log as RAC wrote it before ``happened`` existed (schema 5)."""
    store = SQLiteStore(path)
    store.create_run(RunInfo("old-run"))
    for r in records:
        store.append(r)
    store.close()
    with sqlite3.connect(path) as conn:
        conn.execute("ALTER TABLE records DROP COLUMN happened")
        conn.execute("DELETE FROM schema_migrations WHERE version >= 7")


OLD = [
    # (record, what the migration must read from it)
    (dict(status=RecordStatus.COMPENSATION_FAILED,
          error=f"cancel_flight failed after 3 attempt(s): down {UNCERTAIN_NOTE}"), "maybe"),
    (dict(status=RecordStatus.COMPENSATION_FAILED,
          error="cancel_flight failed: down (the call is in doubt: it may or may not have "
                "taken effect)"), "maybe"),
    (dict(status=RecordStatus.COMPENSATION_FAILED, error="cancel_flight failed: down"), "yes"),
    (dict(status=RecordStatus.COMPENSATING, note="may have happened: timeout failure and no "
                                                 "lookup is declared to tell"), "maybe"),
    (dict(status=RecordStatus.COMPENSATING), "yes"),
    (dict(status=RecordStatus.IN_DOUBT), "maybe"),
    (dict(status=RecordStatus.PENDING), "maybe"),
    (dict(status=RecordStatus.FAILED, error="refused"), "no"),
    (dict(status=RecordStatus.COMPLETED), "yes"),
    (dict(status=RecordStatus.COMPENSATED), "yes"),
    (dict(kind=RecordKind.COMPENSATION, status=RecordStatus.FAILED, note="in_doubt",
          compensates=1), "maybe"),
    (dict(kind=RecordKind.COMPENSATION, status=RecordStatus.FAILED, compensates=1), "no"),
    (dict(kind=RecordKind.COMPENSATION, status=RecordStatus.COMPLETED, compensates=1), "yes"),
]


def test_the_migration_reads_what_older_logs_wrote(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _old_log(path, [make_record("old-run", i + 1, **fields)
                    for i, (fields, _) in enumerate(OLD)])
    store = SQLiteStore(path)  # opening it applies migration 7
    got = [r.happened for r in store.get_records("old-run")]
    assert got == [want for _, want in OLD]
    store.close()


def test_without_the_field_it_is_derived_the_same_way() -> None:
    """A record with no ``happened`` (the fast path's plain success, a store that lost it)
    is read the same way the migration reads it."""
    for i, (fields, want) in enumerate(OLD):
        assert happened_of(make_record("r", i + 1, **fields)) == want, fields


def test_the_postgres_migration_reads_the_same_wording() -> None:
    import psycopg

    from rac.stores.postgres import PostgresStore, split_url
    from tests.stores.support import drop_schema

    url = postgres_test_url()
    try:
        store = PostgresStore(url)
        store.create_run(RunInfo("old-run"))
        for i, (fields, _) in enumerate(OLD):
            store.append(make_record("old-run", i + 1, **fields))
        store.close()
        dsn, schema = split_url(url)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'ALTER TABLE "{schema}".rac_records DROP COLUMN happened'.encode())
            conn.execute(f'DELETE FROM "{schema}".rac_schema_migrations WHERE version >= 7'
                         .encode())
        again = PostgresStore(url)
        assert [r.happened for r in again.get_records("old-run")] == [w for _, w in OLD]
        again.close()
    finally:
        drop_schema(url)
