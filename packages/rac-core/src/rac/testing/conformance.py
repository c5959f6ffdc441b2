"""The store conformance suite: what every transaction log backend must do.

Subclass :class:`StoreConformance` in a test module and give it a ``store`` fixture that yields a
fresh, empty store (and closes it)::

    import pytest
    from rac.testing.conformance import StoreConformance

    class TestMyStore(StoreConformance):
        @pytest.fixture
        def store(self):
            s = MyStore(...)
            yield s
            s.close()

Every test method is inherited; pytest collects them for each subclass. Needs pytest.

The tests of an optional capability (:mod:`rac.stores.capabilities`) run on every store that
declares it and skip, saying so, on one that does not: :class:`PairStoreConformance` for
``pairs`` and :class:`CommitStoreConformance` for ``commit`` (both included in
:class:`StoreConformance`).
"""

from __future__ import annotations

import sqlite3
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest

from rac.errors import ConflictError, LeaseLostError, StoreError
from rac.lifecycle import LifecycleError
from rac.models import PairRecord, Record, RecordKind, RecordStatus, RunInfo, RunStatus
from rac.stores.base import Store
from rac.stores.capabilities import (
    CAPABILITIES,
    COMMIT,
    PAIRS,
    RUN_QUERY,
    PairStore,
    RunFilter,
    declared,
    supports,
)
from rac.stores.changes import Append, CreateRun, Fence, UpdateRecord, UpdateRun

#: Values a log must give back exactly as written (args and results are JSON values).
JSON_SAMPLES: list[Any] = [
    None, True, False, 0, -7, 2**53, 3.25, -0.5, "", "plain", "ünïcödé ✈ 東京", "quote \" \\ /",
    "line\nbreak\ttab", '{"looks": "like json"}', [], {}, [1, "two", None, [3.5]],
    {"nested": {"deep": [1, {"x": None}]}, "b": [True, False], "z": "last", "a": "first"},
]

#: A value planted under a secret-looking key in undo data: it must come back intact.
PLANTED_SECRET = "tok-5f1e9c-never-redact-me"
#: Longer than RAC's default ``max_value_chars`` (64,000): undo data is never truncated.
LONG_VALUE = "x" * 70_000 + "-end"


def undo_sample(seq: int) -> dict[str, Any]:
    """Undo data a compensation could need: a secret-named value, a value over the display
    cap, nested JSON of every kind, key order that is not sorted."""
    return {"zeta": 1, "cancel_token": PLANTED_SECRET, "booking_id": f"FL-{seq}",
            "before": {"seats": [1, 2.5, None, True], "note": "ünïcödé ✈"},
            "blob": LONG_VALUE, "alpha": None}


def _rid() -> str:
    return f"conf-{uuid.uuid4().hex[:10]}"


def make_record(run_id: str, seq: int, tool: str = "book_flight", **kw: Any) -> Record:
    """A record with every field set to something other than its default."""
    base: dict[str, Any] = dict(
        kind=RecordKind.ACTION, status=RecordStatus.PENDING, agent_id="agent-7", scope="0.1",
        args={"passenger": "ada", "n": seq}, result=None, error=None, attempts=1,
        idempotency_key=f"key-{run_id}-{seq}", depends_on=[], compensates=None,
        alternative_of=None, compensable=True, read_only=False, note=None,
        created_at=1000.0 + seq, updated_at=1000.0 + seq, effect="keyed",
        undo={"booking_ref": f"ref-{seq}"}, call_id=f"call-{seq}")
    base.update(kw)
    return Record(run_id, seq, tool, **base)


def make_pair(key: str, **kw: Any) -> PairRecord:
    """A pair with every field set to something other than its default."""
    base: dict[str, Any] = dict(
        tool="book_flight", compensator="cancel_flight",
        args={"booking_id": "result.booking_id", "reason": "args.note"}, source="llm",
        status="proposed", schema_hash="sha256:ab12", note="proposed by a model",
        created_at=50.0, updated_at=51.0)
    base.update(kw)
    return PairRecord(key, **base)


class PairStoreConformance:
    """The ``pairs`` capability: compensation pairs kept by key. Runs on every store that
    declares it (:func:`rac.stores.supports`); skips on one that does not."""

    @pytest.fixture
    def pair_store(self, store: Store) -> PairStore:
        if not supports(store, PAIRS):
            pytest.skip(f"{type(store).__name__} does not declare the {PAIRS!r} capability")
        assert isinstance(store, PairStore)
        return store

    def test_pair_round_trips_every_field(self, pair_store: PairStore) -> None:
        key = f"pair-{uuid.uuid4().hex[:8]}"
        assert pair_store.get_pair(key) is None
        pair = make_pair(key)
        pair_store.put_pair(pair)
        assert pair_store.get_pair(key) == pair

    def test_put_pair_upserts_by_key(self, pair_store: PairStore) -> None:
        key = f"pair-{uuid.uuid4().hex[:8]}"
        pair_store.put_pair(make_pair(key))
        approved = make_pair(key, status="approved", note="approved by ops", updated_at=99.0,
                             args={"booking_id": "result.id"})
        pair_store.put_pair(approved)
        assert pair_store.get_pair(key) == approved
        assert [p.key for p in pair_store.list_pairs()].count(key) == 1

    def test_list_pairs_oldest_first(self, pair_store: PairStore) -> None:
        tag = uuid.uuid4().hex[:8]
        keys = [f"{tag}-c", f"{tag}-a", f"{tag}-b"]
        for key, at in zip(keys, (30.0, 10.0, 10.0), strict=True):
            pair_store.put_pair(make_pair(key, created_at=at, updated_at=at))
        mine = [p.key for p in pair_store.list_pairs() if p.key.startswith(tag)]
        assert mine == [f"{tag}-a", f"{tag}-b", f"{tag}-c"]

    def test_pair_reads_are_copies(self, pair_store: PairStore) -> None:
        key = f"pair-{uuid.uuid4().hex[:8]}"
        pair_store.put_pair(make_pair(key))
        got = pair_store.get_pair(key)
        assert got is not None
        got.args["booking_id"] = "args.mallory"
        got.status = "approved"
        again = pair_store.get_pair(key)
        assert again == make_pair(key)


class RunQueryConformance:
    """The ``run_query`` capability: runs filtered and paged in the store, answering exactly
    what :meth:`rac.stores.capabilities.RunFilter.matches` says. Skips on a store that does not
    declare it."""

    @pytest.fixture
    def query_store(self, store: Store) -> Any:
        if not supports(store, RUN_QUERY):
            pytest.skip(f"{type(store).__name__} does not declare the {RUN_QUERY!r} capability")
        return store

    @staticmethod
    def _fill(store: Store) -> tuple[str, list[RunInfo], dict[str, set[str]]]:
        tag = uuid.uuid4().hex[:8]
        runs: list[RunInfo] = []
        tools: dict[str, set[str]] = {}
        statuses = [RunStatus.COMPLETED, RunStatus.NEEDS_ATTENTION, RunStatus.COMPENSATED]
        for i in range(23):
            info = RunInfo(f"{tag}-{i:02d}", agent_id=f"{tag}-agent-{i % 3}",
                           status=statuses[i % 3], created_at=5000.0 + (i // 2),  # ties
                           updated_at=5000.0 + i)
            store.create_run(info)
            used = {"book_flight"} | ({"book_hotel"} if i % 4 == 0 else set())
            for n, tool in enumerate(sorted(used), 1):
                store.append(make_record(info.run_id, n, tool))
            runs.append(info)
            tools[info.run_id] = used
        return tag, runs, tools

    def test_query_runs_filters_as_the_reference_says(self, query_store: Any) -> None:
        tag, runs, tools = self._fill(query_store)
        cases = [RunFilter.of(status="needs_attention"), RunFilter.of(agent=f"{tag}-agent-1"),
                 RunFilter.of(tool="book_hotel"), RunFilter.of(since=5003.0, until=5008.0),
                 RunFilter.of(status=["completed", "compensated"], tool="book_hotel",
                              since=5002.0)]
        for where in cases:
            want = sorted((r for r in runs if where.matches(r, tools[r.run_id])),
                          key=lambda r: (r.created_at, r.run_id), reverse=True)
            got = [r for r in query_store.query_runs(where, limit=100)
                   if r.run_id.startswith(tag)]
            assert [r.run_id for r in got] == [r.run_id for r in want], where

    def test_query_runs_pages_by_cursor_without_gaps_or_repeats(self, query_store: Any) -> None:
        tag, runs, _ = self._fill(query_store)
        seen: list[str] = []
        where = RunFilter.of(status=[s for s in RunStatus])
        after: tuple[float, str] | None = None
        while True:
            page = query_store.query_runs(RunFilter(where.status, after=after), limit=5)
            mine = [r for r in page if r.run_id.startswith(tag)]
            seen += [r.run_id for r in mine]
            if len(page) < 5:
                break
            after = (page[-1].created_at, page[-1].run_id)
        assert sorted(seen) == sorted(r.run_id for r in runs) and len(set(seen)) == len(seen)
        order = sorted(runs, key=lambda r: (r.created_at, r.run_id), reverse=True)
        assert seen == [r.run_id for r in order]


class CommitStoreConformance:
    """The ``commit`` capability: the changes of a step in one transaction, all or none, with
    every status change checked against the lifecycle tables and fences honoured. Runs on every
    store that declares it; skips on one that does not."""

    @pytest.fixture
    def commit_store(self, store: Store) -> Any:
        if not supports(store, COMMIT):
            pytest.skip(f"{type(store).__name__} does not declare the {COMMIT!r} capability")
        return store

    def test_a_commit_writes_every_change(self, commit_store: Any) -> None:
        rid = _rid()
        commit_store.commit([CreateRun(RunInfo(rid, owner="me", lease_until=10.0)),
                             Append(make_record(rid, 1)),
                             UpdateRecord(rid, 1, {"status": RecordStatus.COMPLETED,
                                                   "result": {"id": "FL-1"}}),
                             Append(make_record(rid, 2)),
                             Fence(rid, "me", 20.0),
                             UpdateRun(rid, {"status": RunStatus.COMPLETED})])
        recs = commit_store.get_records(rid)
        assert [(r.seq, r.status, r.result) for r in recs] == [
            (1, RecordStatus.COMPLETED, {"id": "FL-1"}), (2, RecordStatus.PENDING, None)]
        run = commit_store.get_run(rid)
        assert (run.status, run.owner, run.lease_until) == (RunStatus.COMPLETED, "me", 20.0)

    def test_a_commit_that_fails_writes_nothing(self, commit_store: Any) -> None:
        rid = _rid()
        commit_store.create_run(RunInfo(rid, owner="me"))
        commit_store.append(make_record(rid, 1, args={"v": "first"}))
        with pytest.raises(ConflictError):
            commit_store.commit([UpdateRecord(rid, 1, {"status": RecordStatus.COMPLETED}),
                                 Append(make_record(rid, 2)),
                                 UpdateRun(rid, {"summary": "changed"}),
                                 Append(make_record(rid, 1, args={"v": "second"}))])
        with pytest.raises(KeyError):
            commit_store.commit([Append(make_record(rid, 3)),
                                 UpdateRecord(rid, 99, {"status": RecordStatus.COMPLETED})])
        (only,) = commit_store.get_records(rid)
        assert (only.status, only.args) == (RecordStatus.PENDING, {"v": "first"})
        run = commit_store.get_run(rid)
        assert run is not None and run.summary is None

    def test_an_illegal_status_change_is_refused_and_writes_nothing(self,
                                                                    commit_store: Any) -> None:
        rid = _rid()
        commit_store.create_run(RunInfo(rid))
        commit_store.append(make_record(rid, 1, status=RecordStatus.FAILED))
        commit_store.append(make_record(rid, 2, kind=RecordKind.COMPENSATION, compensates=1))
        with pytest.raises(LifecycleError, match="failed -> compensated"):
            commit_store.update_record(rid, 1, status=RecordStatus.COMPENSATED)
        with pytest.raises(LifecycleError, match="pending -> compensated"):
            commit_store.update_record(rid, 2, status=RecordStatus.COMPENSATED)
        with pytest.raises(LifecycleError, match="running -> needs_attention"):
            commit_store.update_run(rid, status=RunStatus.NEEDS_ATTENTION)
        with pytest.raises(LifecycleError):
            commit_store.commit([Append(make_record(rid, 3)),
                                 UpdateRecord(rid, 3, {"status": RecordStatus.COMPLETED}),
                                 UpdateRecord(rid, 3, {"status": RecordStatus.PENDING})])
        assert [(r.seq, r.status) for r in commit_store.get_records(rid)] == [
            (1, RecordStatus.FAILED), (2, RecordStatus.PENDING)]
        assert commit_store.get_run(rid).status is RunStatus.RUNNING
        # What the tables allow goes through, and writing the same status again is no change.
        commit_store.update_record(rid, 2, status=RecordStatus.COMPLETED)
        commit_store.update_record(rid, 2, status=RecordStatus.COMPLETED, note="again")
        commit_store.update_run(rid, status=RunStatus.COMPENSATING)
        commit_store.update_run(rid, status=RunStatus.NEEDS_ATTENTION)
        assert commit_store.get_run(rid).status is RunStatus.NEEDS_ATTENTION

    def test_a_fence_refuses_the_writes_of_a_process_that_lost_its_run(self,
                                                                      commit_store: Any) -> None:
        rid = _rid()
        commit_store.create_run(RunInfo(rid, owner="worker", lease_until=100.0))
        commit_store.append(make_record(rid, 1))
        assert commit_store.claim_run(rid, "recoverer", now=150.0, lease_seconds=60.0)
        with pytest.raises(LeaseLostError, match="recoverer"):
            commit_store.commit([Fence(rid, "worker", 160.0),
                                 UpdateRecord(rid, 1, {"status": RecordStatus.COMPLETED}),
                                 Append(make_record(rid, 2))])
        with pytest.raises(LeaseLostError):
            commit_store.commit([Fence(rid, "worker")])
        (only,) = commit_store.get_records(rid)
        assert only.status is RecordStatus.PENDING
        run = commit_store.get_run(rid)
        assert (run.owner, run.lease_until) == ("recoverer", 210.0)
        commit_store.commit([Fence(rid, "recoverer"),
                             UpdateRecord(rid, 1, {"status": RecordStatus.COMPENSATING})])
        assert commit_store.get_records(rid)[0].status is RecordStatus.COMPENSATING

    def test_a_commit_that_may_skip_the_flush_is_read_back(self, commit_store: Any) -> None:
        rid = _rid()
        commit_store.create_run(RunInfo(rid))
        commit_store.commit([Append(make_record(rid, 1))], durable=False)
        commit_store.commit([UpdateRecord(rid, 1, {"status": RecordStatus.COMPLETED})],
                            durable=False)
        commit_store.commit([Append(make_record(rid, 2))])
        assert [r.status for r in commit_store.get_records(rid)] == [RecordStatus.COMPLETED,
                                                                    RecordStatus.PENDING]

    def test_commit_of_nothing_writes_nothing(self, commit_store: Any) -> None:
        commit_store.commit([])


class StoreConformance(CommitStoreConformance, PairStoreConformance, RunQueryConformance):
    """Inherit this and provide a ``store`` fixture; every ``test_*`` method checks one promise
    of :class:`rac.stores.Store`."""

    @pytest.fixture
    def store(self) -> Store:  # pragma: no cover - subclasses override
        raise NotImplementedError("give the conformance suite a `store` fixture")

    # -- runs ----------------------------------------------------------------------------------
    def test_create_and_get_run(self, store: Store) -> None:
        rid = _rid()
        assert store.get_run(rid) is None
        store.create_run(RunInfo(rid, "agent-1", RunStatus.RUNNING, 10.0, 11.0, owner="me",
                                 lease_until=0.0, summary="s"))
        got = store.get_run(rid)
        assert got == RunInfo(rid, "agent-1", RunStatus.RUNNING, 10.0, 11.0, owner="me",
                              lease_until=0.0, summary="s")
        assert isinstance(got.status, RunStatus)

    def test_a_runs_report_text_is_kept(self, store: Store) -> None:
        """The rollback's report, as the agent reads it, survives the store (``rac show``
        says what the agent was told from it)."""
        rid = _rid()
        store.create_run(RunInfo(rid, created_at=1.0, updated_at=1.0))
        assert store.get_run(rid).report is None  # type: ignore[union-attr]
        text = "RAC: book_car failed (permanent: no cars).\nUndone, newest first: ... é"
        store.update_run(rid, status=RunStatus.COMPENSATING, updated_at=2.0)
        store.update_run(rid, status=RunStatus.COMPENSATED, report=text, updated_at=3.0)
        got = store.get_run(rid)
        assert got is not None and (got.status, got.report) == (RunStatus.COMPENSATED, text)

    def test_duplicate_run_is_a_conflict(self, store: Store) -> None:
        rid = _rid()
        store.create_run(RunInfo(rid, "first", created_at=1.0, updated_at=1.0))
        with pytest.raises(ConflictError):
            store.create_run(RunInfo(rid, "second", created_at=2.0, updated_at=2.0))
        got = store.get_run(rid)
        assert got is not None and got.agent_id == "first"

    def test_update_run(self, store: Store) -> None:
        rid = _rid()
        store.create_run(RunInfo(rid, created_at=1.0, updated_at=1.0))
        store.update_run(rid, status=RunStatus.COMPENSATING, updated_at=4.0)
        store.update_run(rid, status=RunStatus.NEEDS_ATTENTION, summary="left: #2",
                         updated_at=5.0)
        got = store.get_run(rid)
        assert got is not None
        assert (got.status, got.summary, got.updated_at) == (RunStatus.NEEDS_ATTENTION,
                                                             "left: #2", 5.0)

    def test_list_runs_by_status_newest_first(self, store: Store) -> None:
        mine = {}
        for i, status in enumerate([RunStatus.RUNNING, RunStatus.COMPENSATED,
                                    RunStatus.NEEDS_ATTENTION, RunStatus.RUNNING,
                                    RunStatus.COMPENSATING]):
            rid = _rid()
            mine[rid] = status
            store.create_run(RunInfo(rid, status=status, created_at=100.0 + i,
                                     updated_at=100.0 + i))
        every = [r.run_id for r in store.list_runs() if r.run_id in mine]
        assert every == list(mine)[::-1]
        running = [r.run_id for r in store.list_runs(RunStatus.RUNNING) if r.run_id in mine]
        assert running == [k for k, v in mine.items() if v is RunStatus.RUNNING][::-1]
        either = {r.run_id for r in store.list_runs([RunStatus.RUNNING, RunStatus.COMPENSATING])
                  if r.run_id in mine}
        assert either == {k for k, v in mine.items()
                          if v in (RunStatus.RUNNING, RunStatus.COMPENSATING)}
        attention = store.list_runs(RunStatus.NEEDS_ATTENTION)
        assert all(r.status is RunStatus.NEEDS_ATTENTION for r in attention)
        assert len(store.list_runs(limit=2)) == 2

    # -- claims ----------------------------------------------------------------------------------
    def test_claim_run_is_compare_and_set_with_a_lease(self, store: Store) -> None:
        rid = _rid()
        store.create_run(RunInfo(rid, owner="dead-process", lease_until=0.0))
        assert store.claim_run(rid, "recoverer-a", now=1000.0, lease_seconds=30.0)
        assert not store.claim_run(rid, "recoverer-b", now=1010.0, lease_seconds=30.0)
        got = store.get_run(rid)
        assert got is not None and (got.owner, got.lease_until) == ("recoverer-a", 1030.0)
        # The holder may renew its own lease.
        assert store.claim_run(rid, "recoverer-a", now=1020.0, lease_seconds=30.0)
        assert not store.claim_run(rid, "recoverer-b", now=1049.0, lease_seconds=30.0)
        # Once the lease has run out, another owner may take over.
        assert store.claim_run(rid, "recoverer-b", now=1050.0, lease_seconds=30.0)
        got = store.get_run(rid)
        assert got is not None and got.owner == "recoverer-b"

    def test_claim_of_unknown_run_fails(self, store: Store) -> None:
        assert not store.claim_run(_rid(), "me", now=1.0, lease_seconds=1.0)

    def test_unowned_run_can_be_claimed(self, store: Store) -> None:
        rid = _rid()
        store.create_run(RunInfo(rid, owner=None))
        assert store.claim_run(rid, "me", now=1.0, lease_seconds=5.0)

    # -- records ---------------------------------------------------------------------------------
    def test_append_and_get_round_trip_every_field(self, store: Store) -> None:
        rid = _rid()
        store.create_run(RunInfo(rid))
        rec = make_record(rid, 1, result={"booking_id": "FL-1"}, status=RecordStatus.COMPLETED,
                          error="an error", attempts=3, depends_on=[], note="a note")
        comp = make_record(rid, 2, "cancel_flight", kind=RecordKind.COMPENSATION,
                           compensates=1, depends_on=[1], alternative_of=None,
                           compensable=False, read_only=True)
        store.append(rec)
        store.append(comp)
        assert store.get_records(rid) == [rec, comp]
        got = store.get_records(rid)
        assert isinstance(got[0].kind, RecordKind) and isinstance(got[0].status, RecordStatus)

    def test_duplicate_record_is_a_conflict_never_an_overwrite(self, store: Store) -> None:
        rid = _rid()
        store.create_run(RunInfo(rid))
        first = make_record(rid, 1, "book_flight", args={"v": "first"})
        store.append(first)
        with pytest.raises(ConflictError):
            store.append(make_record(rid, 1, "book_hotel", args={"v": "second"}))
        assert store.get_records(rid) == [first]

    def test_same_seq_in_other_runs_is_no_conflict(self, store: Store) -> None:
        a, b = _rid(), _rid()
        store.append(make_record(a, 1))
        store.append(make_record(b, 1))
        assert len(store.get_records(a)) == len(store.get_records(b)) == 1

    def test_update_record(self, store: Store) -> None:
        rid = _rid()
        store.append(make_record(rid, 1))
        store.update_record(rid, 1, status=RecordStatus.COMPLETED, result={"booking_id": "X"},
                            attempts=2, updated_at=2000.0)
        (got,) = store.get_records(rid)
        assert (got.status, got.result, got.attempts, got.updated_at) == (
            RecordStatus.COMPLETED, {"booking_id": "X"}, 2, 2000.0)
        assert got.args == {"passenger": "ada", "n": 1}

    def test_update_record_sets_effect_and_undo(self, store: Store) -> None:
        rid = _rid()
        store.append(make_record(rid, 1, effect="", undo=None))
        (before,) = store.get_records(rid)
        assert (before.effect, before.undo) == ("", None)
        store.update_record(rid, 1, status=RecordStatus.COMPLETED, effect="unsafe",
                            undo=undo_sample(1))
        (got,) = store.get_records(rid)
        assert (got.status, got.effect, got.undo) == (RecordStatus.COMPLETED, "unsafe",
                                                      undo_sample(1))
        store.update_record(rid, 1, undo=None)
        assert store.get_records(rid)[0].undo is None

    def test_undo_round_trips_exactly(self, store: Store) -> None:
        """Undo data is never redacted or truncated: a secret-named value and a value over
        the display cap come back exactly, key order included."""
        rid = _rid()
        store.append(make_record(rid, 1, undo=undo_sample(1)))
        store.append(make_record(rid, 2))
        store.update_record(rid, 2, undo=undo_sample(2))
        got = store.get_records(rid)
        for rec in got:
            assert rec.undo == undo_sample(rec.seq)
            assert rec.undo is not None and list(rec.undo) == list(undo_sample(rec.seq))
            assert rec.undo["cancel_token"] == PLANTED_SECRET
            assert rec.undo["blob"] == LONG_VALUE
        got[0].undo["cancel_token"] = "changed"  # type: ignore[index]
        got[0].undo["before"]["seats"].append(9)  # type: ignore[index]
        assert store.get_records(rid)[0].undo == undo_sample(1)

    def test_unknown_fields_are_refused_by_name(self, store: Store) -> None:
        rid = _rid()
        store.create_run(RunInfo(rid))
        store.append(make_record(rid, 1))
        with pytest.raises(StoreError, match="bogus_field"):
            store.update_record(rid, 1, status=RecordStatus.COMPLETED, bogus_field=1)
        with pytest.raises(StoreError, match="bogus_field"):
            store.update_run(rid, bogus_field=1)
        (got,) = store.get_records(rid)
        assert got.status is RecordStatus.PENDING

    def test_status_given_as_text_reads_back_as_the_enum(self, store: Store) -> None:
        rid = _rid()
        store.create_run(RunInfo(rid))
        store.append(make_record(rid, 1))
        store.update_record(rid, 1, status="completed")
        store.update_run(rid, status="compensating")
        assert store.get_records(rid)[0].status is RecordStatus.COMPLETED
        assert store.get_run(rid).status is RunStatus.COMPENSATING  # type: ignore[union-attr]

    def test_declared_capabilities_are_known_and_implemented(self, store: Store) -> None:
        for name in declared(store):
            assert name in CAPABILITIES, f"{type(store).__name__} declares unknown {name!r}"
            assert isinstance(store, CAPABILITIES[name]), (
                f"{type(store).__name__} declares {name!r} but lacks its methods")
            assert supports(store, name)

    def test_update_of_missing_record_raises_key_error(self, store: Store) -> None:
        rid = _rid()
        store.append(make_record(rid, 1))
        with pytest.raises(KeyError):
            store.update_record(rid, 2, status=RecordStatus.COMPLETED)
        with pytest.raises(KeyError):
            store.update_record(_rid(), 1, status=RecordStatus.COMPLETED)

    @pytest.mark.parametrize("value", JSON_SAMPLES, ids=lambda v: type(v).__name__)
    def test_json_values_round_trip(self, store: Store, value: Any) -> None:
        rid = _rid()
        store.append(make_record(rid, 1, args={"value": value}, result=value))
        store.update_record(rid, 2 - 1, result=value)
        (got,) = store.get_records(rid)
        assert got.args == {"value": value} and got.result == value
        assert type(got.result) is type(value)

    def test_records_come_back_in_seq_order(self, store: Store) -> None:
        rid = _rid()
        for seq in (5, 1, 12, 3, 2):
            store.append(make_record(rid, seq))
        assert [r.seq for r in store.get_records(rid)] == [1, 2, 3, 5, 12]
        assert store.get_records(_rid()) == []

    def test_reads_are_copies(self, store: Store) -> None:
        rid = _rid()
        store.create_run(RunInfo(rid))
        store.append(make_record(rid, 1, depends_on=[7]))
        got = store.get_records(rid)[0]
        got.args["passenger"] = "mallory"
        got.depends_on.append(99)
        run = store.get_run(rid)
        assert run is not None
        run.status = RunStatus.COMPENSATED
        again = store.get_records(rid)[0]
        assert again.args["passenger"] == "ada" and again.depends_on == [7]
        assert store.get_run(rid).status is RunStatus.RUNNING  # type: ignore[union-attr]

    # -- threads ---------------------------------------------------------------------------------
    def test_threads_append_without_losing_records(self, store: Store) -> None:
        rid = _rid()
        store.create_run(RunInfo(rid))
        errors: list[BaseException] = []
        n_threads, per_thread = 6, 15

        def writer(t: int) -> None:
            try:
                for i in range(per_thread):
                    seq = t * per_thread + i + 1
                    store.append(make_record(rid, seq))
                    store.update_record(rid, seq, status=RecordStatus.COMPLETED)
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=writer, args=(t,)) for t in range(n_threads)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert errors == []
        recs = store.get_records(rid)
        assert [r.seq for r in recs] == list(range(1, n_threads * per_thread + 1))
        assert all(r.status is RecordStatus.COMPLETED for r in recs)

    def test_racing_duplicate_appends_one_wins(self, store: Store) -> None:
        rid = _rid()
        outcomes: list[str] = []
        lock = threading.Lock()
        barrier = threading.Barrier(6)

        def writer(t: int) -> None:
            barrier.wait()
            try:
                store.append(make_record(rid, 1, f"tool_{t}"))
                res = "won"
            except ConflictError:
                res = "conflict"
            with lock:
                outcomes.append(res)

        threads = [threading.Thread(target=writer, args=(t,)) for t in range(6)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert sorted(outcomes) == ["conflict"] * 5 + ["won"]
        assert len(store.get_records(rid)) == 1

    def test_racing_claims_one_wins(self, store: Store) -> None:
        rid = _rid()
        store.create_run(RunInfo(rid, owner="dead", lease_until=0.0))
        wins: list[str] = []
        lock = threading.Lock()
        barrier = threading.Barrier(6)

        def claimer(t: int) -> None:
            barrier.wait()
            if store.claim_run(rid, f"recoverer-{t}", now=500.0, lease_seconds=60.0):
                with lock:
                    wins.append(f"recoverer-{t}")

        threads = [threading.Thread(target=claimer, args=(t,)) for t in range(6)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert len(wins) == 1
        run = store.get_run(rid)
        assert run is not None and run.owner == wins[0]


def sqlite_cells_holding(path: str | Path, needle: str) -> set[str]:
    """``table.column`` of every cell of a SQLite file whose text contains ``needle``.

    For redaction tests: without ``RAC_LOG_KEY`` a planted secret of undo data may appear only
    in ``records.undo``; with it, nowhere (check the raw bytes of the file and its ``-wal``
    too, see :func:`sqlite_raw_bytes`).
    """
    conn = sqlite3.connect(str(path))
    try:
        found: set[str] = set()
        tables = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            cols = [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                for col, value in zip(cols, row, strict=True):
                    text = value.decode("utf-8", "replace") if isinstance(value, bytes) \
                        else str(value)
                    if needle in text:
                        found.add(f"{table}.{col}")
        return found
    finally:
        conn.close()


def sqlite_raw_bytes(path: str | Path) -> bytes:
    """Every byte on disk of a SQLite file and its ``-wal``/``-shm``/``-journal`` files."""
    db = Path(path)
    return b"".join(p.read_bytes() for p in sorted(db.parent.glob(db.name + "*")))


#: The environment variable naming the PostgreSQL server the test suites use.
POSTGRES_URL_ENV = "RAC_TEST_POSTGRES_URL"


def postgres_test_url(schema: str | None = None) -> str:
    """The URL of the test PostgreSQL server (from ``$RAC_TEST_POSTGRES_URL``), with
    ``rac_schema`` set to ``schema`` (a fresh one per caller keeps tests apart).

    Skips the calling test with a clear reason when the variable is unset, except under CI
    (``CI=true``), where a missing server fails the test: CI must always run these.
    """
    import os

    url = os.environ.get(POSTGRES_URL_ENV, "").strip()
    if not url:
        reason = (f"{POSTGRES_URL_ENV} is not set: no PostgreSQL server to test against "
                  "(run `eval \"$(.ci/postgres.sh start)\"` to start one)")
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true but {reason}")
        pytest.skip(reason)
    if schema is None:
        schema = f"rac_t_{uuid.uuid4().hex[:12]}"
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}rac_schema={schema}"
