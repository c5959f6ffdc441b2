"""Issue 28: recovery writes its steps in batches. A long commit is written with one
``executemany`` per statement shape (rac.stores.sql.SQLStore._apply_grouped) and an append
followed by updates of the same record is merged (rac.stores.changes.coalesce); both must
write exactly what the changes one by one would, and refuse exactly what they would refuse,
naming it. SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rac.errors import ConflictError
from rac.lifecycle import LifecycleError
from rac.models import RecordKind, RecordStatus, RunInfo, RunStatus
from rac.stores import SQLiteStore, open_store
from rac.stores.changes import Append, Change, CreateRun, UpdateRecord, UpdateRun, coalesce
from rac.stores.sql import GROUPED_FROM, SQLStore
from rac.testing.conformance import make_record
from tests.stores.support import fresh_postgres_url

R = RecordStatus


@pytest.fixture(params=["sqlite", "postgres"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[SQLStore, SQLStore]]:
    """Two empty logs of one kind: one written in batches, one change at a time."""
    if request.param == "sqlite":
        yield SQLiteStore(tmp_path / "a.db"), SQLiteStore(tmp_path / "b.db")
        return
    with fresh_postgres_url() as a, fresh_postgres_url() as b:
        first, second = open_store(a), open_store(b)
        yield first, second  # type: ignore[misc]
        first.close()
        second.close()


def _compensations(run_id: str, n: int) -> list[Change]:
    """What recovery holds for ``n`` compensated actions (seqs 1..n, compensations after)."""
    out: list[Change] = []
    for seq in range(1, n + 1):
        comp = make_record(run_id, n + seq, "cancel_flight", kind=RecordKind.COMPENSATION,
                           compensates=seq, undo=None)
        out += [UpdateRecord(run_id, seq, {"status": R.COMPENSATING, "updated_at": 5.0}),
                Append(comp),
                UpdateRecord(run_id, n + seq, {"status": R.COMPLETED, "result": {"ok": seq},
                                               "updated_at": 6.0}),
                UpdateRecord(run_id, seq, {"status": R.COMPENSATED, "updated_at": 6.0})]
    return [*out, UpdateRun(run_id, {"status": RunStatus.COMPENSATED, "updated_at": 7.0})]


def _setup(store: SQLStore, run_id: str, n: int) -> None:
    store.commit([CreateRun(RunInfo(run_id, "agent", RunStatus.COMPENSATING, 1.0, 1.0, None,
                                    0.0)),
                  *[Append(make_record(run_id, s, status=R.COMPLETED)) for s in range(1, n + 1)]])


def test_a_batch_writes_what_the_changes_one_by_one_write(
        stores: tuple[SQLStore, SQLStore]) -> None:
    batched, single = stores
    n = 3 * GROUPED_FROM
    for store in stores:
        _setup(store, "r", n)
    changes = _compensations("r", n)
    batched.commit(coalesce(changes))
    for change in changes:
        single.commit([change])
    assert batched.get_records("r") == single.get_records("r")
    assert batched.get_run("r") == single.get_run("r")  # type: ignore[comparison-overlap]
    assert {r.status for r in batched.get_records("r")} == {R.COMPENSATED, R.COMPLETED}


def test_an_illegal_change_in_a_batch_is_named_and_nothing_is_written(
        stores: tuple[SQLStore, SQLStore]) -> None:
    store, _ = stores
    n = 2 * GROUPED_FROM
    _setup(store, "r", n)
    before = store.get_records("r")
    changes = _compensations("r", n)
    changes.insert(40, UpdateRecord("r", 7, {"status": R.PENDING}))  # completed -> pending
    with pytest.raises(LifecycleError, match=r"r#7 .*compensat\w* -> pending"):
        store.commit(coalesce(changes))
    assert store.get_records("r") == before
    assert store.get_run("r").status is RunStatus.COMPENSATING  # type: ignore[union-attr]


def test_a_duplicate_record_in_a_batch_is_a_conflict(stores: tuple[SQLStore, SQLStore]) -> None:
    store, _ = stores
    n = GROUPED_FROM
    _setup(store, "r", n)
    changes = [*_compensations("r", n), Append(make_record("r", 3))]
    with pytest.raises(ConflictError, match="r#3 already exists"):
        store.commit(coalesce(changes))
    assert all(r.status is R.COMPLETED for r in store.get_records("r"))


def test_coalesce_merges_an_append_with_its_own_later_updates_only() -> None:
    first, other = make_record("r", 1), make_record("r", 2)
    merged = coalesce([Append(first), UpdateRecord("r", 2, {"note": "x"}),
                       UpdateRecord("r", 1, {"status": R.COMPLETED, "result": {"id": 1}}),
                       UpdateRecord("r", 1, {"note": "done"}, expect=R.COMPLETED)])
    assert [type(c).__name__ for c in merged] == ["Append", "UpdateRecord", "UpdateRecord"]
    head = merged[0]
    assert isinstance(head, Append)
    assert (head.record.status, head.record.result) == (R.COMPLETED, {"id": 1})
    assert first.status is R.PENDING and other.note is None  # the originals are left alone
