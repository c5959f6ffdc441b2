"""What only the PostgreSQL store does: migrating a log written by RAC 0.1 in place."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from rac.models import RecordStatus, RunInfo
from rac.stores.postgres import PostgresStore, split_url
from rac.stores.sql import MIGRATIONS
from rac.testing.conformance import make_record, postgres_test_url

LATEST = max(v for v, _ in MIGRATIONS)


@pytest.fixture
def url() -> Iterator[str]:
    url = postgres_test_url()
    yield url
    dsn, schema = split_url(url)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'.encode())


def test_a_v1_log_migrates_in_place(url: str) -> None:
    store = PostgresStore(url)
    store.create_run(RunInfo("old-run"))
    store.append(make_record("old-run", 1, status=RecordStatus.COMPLETED, effect="", undo=None))
    store.close()
    # Take the schema back to what RAC 0.1 wrote: migration 1 only.
    dsn, schema = split_url(url)
    with psycopg.connect(dsn, autocommit=True) as conn:
        for stmt in (f'ALTER TABLE "{schema}".rac_records DROP COLUMN effect',
                     f'ALTER TABLE "{schema}".rac_records DROP COLUMN undo',
                     f'ALTER TABLE "{schema}".rac_records DROP COLUMN call_id',
                     f'ALTER TABLE "{schema}".rac_runs DROP COLUMN report',
                     f'ALTER TABLE "{schema}".rac_records DROP COLUMN happened',
                     f'DROP TABLE "{schema}".rac_meta', f'DROP TABLE "{schema}".rac_pairs',
                     f'DELETE FROM "{schema}".rac_schema_migrations WHERE version > 1'):
            conn.execute(stmt.encode())

    again = PostgresStore(url)
    assert again.schema_version() == LATEST
    (old,) = again.get_records("old-run")
    assert (old.status, old.effect, old.undo) == (RecordStatus.COMPLETED, "", None)
    again.update_record("old-run", 1, effect="unsafe", undo={"booking_id": "FL-1"})
    assert again.get_records("old-run")[0].undo == {"booking_id": "FL-1"}
    again.close()
    third = PostgresStore(url)  # a second process starting up applies nothing twice
    assert third.schema_version() == LATEST
    third.close()


def _open_at_once(url: str, barrier: Any, errors: Any) -> None:
    """A process starting up: wait for the others, then open the log (and its new schema)."""
    barrier.wait()
    try:
        store = PostgresStore(url)
        store.close()
    except BaseException as e:  # noqa: BLE001 - reported to the parent
        errors.put(f"{type(e).__name__}: {e}")


def test_processes_opening_a_new_schema_at_once_all_succeed() -> None:
    """Issue 28: two (here four) processes opening a log whose schema does not exist yet, at
    the same instant: the schema and the migrations are made once, under one advisory lock, and
    nobody dies of a UniqueViolation (5 of 30 trials did)."""
    ctx = multiprocessing.get_context("fork")
    for trial in range(20):
        url = postgres_test_url()
        barrier, errors = ctx.Barrier(4), ctx.Queue()
        procs = [ctx.Process(target=_open_at_once, args=(url, barrier, errors))
                 for _ in range(4)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(120)
        failures = []
        while not errors.empty():
            failures.append(errors.get())
        try:
            assert [p.exitcode for p in procs] == [0, 0, 0, 0], f"trial {trial}: {failures}"
            assert failures == [], f"trial {trial}: {failures}"
            store = PostgresStore(url)
            assert store.schema_version() == LATEST
            store.close()
        finally:
            dsn, schema = split_url(url)
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'.encode())


# -- held commits: a call's outcome rides with the next commit (issue 28) ----------------------
def _travel(url: str, **kw: Any) -> Any:
    import rac
    from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld

    return rac.RAC(compensations=TRAVEL_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                   tools=TravelWorld().tools(), store=url, load_entrypoints=False, **kw)


def test_an_outcome_rides_with_the_next_commit(url: str, monkeypatch: pytest.MonkeyPatch
                                               ) -> None:
    """A ``durable=False`` update is held in the writing process: another connection sees it
    only once the next commit (or a read of the writer, or its close) sends it."""
    from rac.stores.changes import Append, UpdateRecord

    monkeypatch.setattr("rac.stores.postgres.HOLD_SECONDS", 3600.0)
    writer, reader = PostgresStore(url), PostgresStore(url)
    try:
        writer.create_run(RunInfo("r1"))
        writer.append(make_record("r1", 1))
        writer.commit([UpdateRecord("r1", 1, {"status": RecordStatus.COMPLETED})],
                      durable=False)
        assert [r.status for r in reader.get_records("r1")] == [RecordStatus.PENDING]
        writer.commit([Append(make_record("r1", 2))])
        assert [r.status for r in reader.get_records("r1")] == [RecordStatus.COMPLETED,
                                                               RecordStatus.PENDING]
        writer.commit([UpdateRecord("r1", 2, {"status": RecordStatus.COMPLETED})],
                      durable=False)
        assert [r.status for r in writer.get_records("r1")] == [RecordStatus.COMPLETED] * 2
        assert [r.status for r in reader.get_records("r1")] == [RecordStatus.COMPLETED] * 2
    finally:
        writer.close()
        reader.close()


def test_a_held_update_refused_later_never_fails_the_next_writer(
        url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """What is held rides with the next commit; if the held part is refused (here: the run
    was claimed by another process meanwhile, so its fence fails), the next commit still goes
    through on its own and the held update is missing from the log, never half-written."""
    from rac.stores.changes import Append, Fence, UpdateRecord

    monkeypatch.setattr("rac.stores.postgres.HOLD_SECONDS", 3600.0)
    writer, other = PostgresStore(url), PostgresStore(url)
    try:
        writer.create_run(RunInfo("lost", owner="worker", lease_until=100.0))
        writer.create_run(RunInfo("kept"))
        writer.append(make_record("lost", 1))
        writer.commit([Fence("lost", "worker", 150.0),
                       UpdateRecord("lost", 1, {"status": RecordStatus.COMPLETED})],
                      durable=False)
        assert other.claim_run("lost", "recoverer", now=200.0, lease_seconds=60.0)
        writer.commit([Append(make_record("kept", 1))])
        assert [r.status for r in other.get_records("lost")] == [RecordStatus.PENDING]
        assert [r.seq for r in other.get_records("kept")] == [1]
    finally:
        writer.close()
        other.close()


def _call_then_die(url: str) -> None:
    import os

    import rac.stores.postgres

    rac.stores.postgres.HOLD_SECONDS = 3600.0
    run = _travel(url).run()
    run.start()
    run.call("book_flight", passenger="ann", origin="SFO", dest="CDG")
    os._exit(0)  # killed between the call's effect and the commit its outcome rides with


def test_a_process_killed_holding_an_outcome_leaves_the_call_in_doubt(url: str) -> None:
    """Between a call's effect and the commit its outcome rides with, a crash loses the
    outcome: the log keeps the intent, read as "may have happened" (never "did not happen"),
    and recovery, which cannot undo a booking without the id its lost outcome held, names it
    as possibly live."""
    from rac.lifecycle import happened_of
    from rac.testing import VirtualClock

    ctx = multiprocessing.get_context("fork")
    proc = ctx.Process(target=_call_then_die, args=(url,))
    proc.start()
    proc.join(120)
    assert proc.exitcode == 0
    store = PostgresStore(url)
    try:
        (info,) = store.list_runs()
        (rec,) = store.get_records(info.run_id)
        assert (rec.status, happened_of(rec)) == (RecordStatus.PENDING, "maybe")
    finally:
        store.close()
    engine = _travel(url, clock=VirtualClock(start=info.lease_until + 1))
    try:
        (out,) = engine.recover()
        assert out.outcome == "needs_attention"
        assert [(a.tool, a.happened) for a in out.report.left_live] == [  # type: ignore[union-attr]
            ("book_flight", "maybe")]
    finally:
        engine.close()


def _hold_then_commit(store: PostgresStore) -> None:
    import os

    from rac.stores.changes import Append, UpdateRecord

    try:
        store.commit([UpdateRecord("forked", 1, {"status": RecordStatus.COMPLETED})],
                     durable=False)
        store.commit([Append(make_record("forked", 2))])
        store.close()
    finally:
        os._exit(0)


def test_a_forked_process_writes_what_it_holds_not_what_its_parent_holds(
        url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from rac.stores.changes import UpdateRecord

    monkeypatch.setattr("rac.stores.postgres.HOLD_SECONDS", 3600.0)
    store = PostgresStore(url)
    try:
        store.create_run(RunInfo("forked"))
        store.append(make_record("forked", 1))
        store.append(make_record("forked", 3))
        store.commit([UpdateRecord("forked", 3, {"status": RecordStatus.FAILED})],
                     durable=False)  # held by the parent
        proc = multiprocessing.get_context("fork").Process(target=_hold_then_commit,
                                                          args=(store,))
        proc.start()
        proc.join(120)
        assert proc.exitcode == 0
        reader = PostgresStore(url)
        try:
            assert [(r.seq, r.status) for r in reader.get_records("forked")] == [
                (1, RecordStatus.COMPLETED), (2, RecordStatus.PENDING),
                (3, RecordStatus.PENDING)]  # the parent's held update is the parent's to send
        finally:
            reader.close()
        store.flush()
        assert store.get_records("forked")[2].status is RecordStatus.FAILED
    finally:
        store.close()
