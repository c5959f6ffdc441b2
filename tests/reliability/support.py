"""Shared helpers of the reliability tests: stores to test against and the world invariants."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rac
from rac.demo.crash import KEYED_COMPENSATIONS, KeyedTravelWorld
from rac.models import RecordKind, RecordStatus
from rac.stores import Store, open_store
from rac.testing import TRAVEL_READ_ONLY, VirtualClock
from rac.testing.conformance import postgres_test_url

STORE_KINDS = ["sqlite", "postgres"]


def store_url(kind: str, tmp_path: Path) -> str:
    """A fresh log of ``kind``: a SQLite file in tmp_path, or a schema of its own in PostgreSQL
    (skipped locally when no server is configured)."""
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'log.db'}"
    return postgres_test_url()


def drop(url: str) -> None:
    """Remove a PostgreSQL test schema (SQLite files go with tmp_path)."""
    if url.startswith("postgresql"):
        from rac.stores.postgres import PostgresStore

        s = PostgresStore(url)
        s.drop_schema()
        s.close()


@pytest.fixture(params=STORE_KINDS)
def durable_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    url = store_url(request.param, tmp_path)
    yield url
    drop(url)


def keyed_engine(world: KeyedTravelWorld, store: Store | str, clock: VirtualClock | None = None,
                 **kw: Any) -> rac.RAC:
    """An engine over a keyed travel world with a virtual clock."""
    kw.setdefault("compensation_retry", rac.RetryPolicy(max_attempts=3, initial_delay=1.0,
                                                        jitter=0))
    kw.setdefault("retry", rac.RetryPolicy(max_attempts=2, initial_delay=1.0, jitter=0))
    return rac.RAC(compensations=KEYED_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                   tools=world.tools(), store=store, clock=clock or VirtualClock(),
                   load_entrypoints=False, **kw)


def check_world_after_abort(world: KeyedTravelWorld) -> None:
    """The invariants of an aborted run, checked against the world's own ledger: nothing left
    live, each effect compensated exactly once, nothing compensated that never started."""
    assert world.live() == [], f"left live: {world.live()}"
    booked: set[str] = set()
    cancelled: dict[str, int] = {}
    for tool, booking_id, event in world.ledger():
        if event == "book":
            assert booking_id is not None
            booked.add(booking_id)
        elif event == "cancel":
            assert booking_id in booked, f"{tool} cancelled {booking_id}, never booked before"
            cancelled[booking_id] = cancelled.get(booking_id, 0) + 1
    assert set(cancelled) == booked
    assert all(n == 1 for n in cancelled.values()), f"compensated more than once: {cancelled}"
    assert all(b["cancellations"] == 1 for b in world.bookings()), world.bookings()


def check_log_settled(url_or_store: str | Store, run_id: str) -> None:
    """No record of a recovered run is left in doubt, and each compensated action has exactly
    one completed compensation."""
    store = open_store(url_or_store)
    records = store.get_records(run_id)
    assert not [r for r in records if r.status in (RecordStatus.PENDING,
                                                   RecordStatus.COMPENSATING)], records
    for r in records:
        if r.kind is RecordKind.ACTION and r.status is RecordStatus.COMPENSATED:
            done = [c for c in records if c.compensates == r.seq
                    and c.status is RecordStatus.COMPLETED]
            assert len(done) == 1, (r, done)
    if isinstance(url_or_store, str):
        store.close()
