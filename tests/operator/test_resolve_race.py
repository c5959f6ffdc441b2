"""Two operators resolving one record at once: the second is refused, never writes over the
first's who/why (issue #27: the second `rac resolve` used to overwrite the first's note).

The race is made deterministic: the first resolution reads the record, then the second runs
from start to end on its own engine over the same real log, then the first writes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rac
from rac.errors import ConflictError
from rac.models import RecordStatus, RunStatus
from rac.stores import open_store
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld, VirtualClock
from tests.reliability.support import drop, store_url


class ReadThenWait:
    """A real store whose first ``get_records`` runs ``between`` after reading: another
    operator acts between this one's check and its write."""

    def __init__(self, inner: Any, between: Any) -> None:
        self.inner, self.between = inner, between

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def get_records(self, run_id: str) -> list[Any]:
        found = self.inner.get_records(run_id)
        between, self.between = self.between, None
        if between is not None:
            between()
        return list(found)


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    found = store_url(request.param, tmp_path)
    yield found
    drop(found)


def engine_on(url: str, world: TravelWorld, store: Any = None) -> rac.RAC:
    return rac.RAC(compensations=TRAVEL_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                   tools=world.tools(), store=store if store is not None else url,
                   clock=VirtualClock(), load_entrypoints=False,
                   compensation_retry=rac.RetryPolicy(max_attempts=1))


def test_two_resolutions_of_one_record_end_with_one(url: str) -> None:
    world = TravelWorld()
    world.fail("cancel_flight", "permanent")
    owner = engine_on(url, world)
    with owner.run() as run:
        run.call("book_flight", passenger="ann", origin="SFO", dest="CDG")
        run.rollback()
    assert run.status is RunStatus.NEEDS_ATTENTION
    owner.close()

    rival = engine_on(url, world)

    def second_operator() -> None:
        rival.resolve(run.run_id, 1, note="refunded by the airline desk", by="bo")

    first = engine_on(url, world, ReadThenWait(open_store(url), second_operator))
    with pytest.raises(ConflictError, match="no longer compensation_failed"):
        first.resolve(run.run_id, 1, note="cancelled by phone", by="ann")
    rival.close()
    first.close()
    log = open_store(url, read_only=True)
    try:
        rec = next(r for r in log.get_records(run.run_id) if r.seq == 1)
        info = log.get_run(run.run_id)
    finally:
        log.close()
    assert rec.status is RecordStatus.RESOLVED
    assert rec.note is not None and rec.note.startswith("resolved by bo at ")
    assert rec.note.endswith(": refunded by the airline desk")
    assert info is not None and info.status is RunStatus.RESOLVED


def test_a_stale_compare_and_set_is_refused_by_every_store(url: str) -> None:
    """The store-level primitive the resolution relies on, on SQLite, PostgreSQL and memory
    (the conditional update is in the same statement: no read-then-write window)."""
    from rac.models import Record, RecordKind, RunInfo
    from rac.stores.changes import UpdateRecord

    for target in (url, "memory://"):
        store: Any = open_store(target)
        try:
            store.create_run(RunInfo("r", "a", RunStatus.RUNNING, 1.0, 1.0))
            store.append(Record("r", 1, "book_flight", RecordKind.ACTION,
                                RecordStatus.PENDING))
            store.commit([UpdateRecord("r", 1, {"status": RecordStatus.COMPLETED},
                                       expect=RecordStatus.PENDING)])
            with pytest.raises(ConflictError, match="is completed now, no longer pending"):
                store.commit([UpdateRecord("r", 1, {"status": RecordStatus.COMPLETED,
                                                    "note": "late"},
                                           expect=RecordStatus.PENDING)])
            (rec,) = store.get_records("r")
            assert rec.status is RecordStatus.COMPLETED and rec.note is None
        finally:
            store.close()
