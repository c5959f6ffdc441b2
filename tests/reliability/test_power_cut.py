"""Issue 28: one durable commit per step, and what a power cut can lose.

A successful call costs one commit flushed to disk: its intent, made before the tool runs.
Its outcome, and the run's status (an adapter that finishes the run after every call, a call
that reopens it), reach the database at once but are flushed with the next intent or when the
log is closed. A crash of the process loses none of it; a power cut may lose what came after
the last flush. :class:`Disk` keeps every commit with its durability and rebuilds, in a new
SQLite file, what a power cut at any point would leave (every commit up to the last durable
one); recovery from each of those logs must never call a run compensated while an effect of
it is live in the world's own ledger.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import rac
from rac.demo.crash import KeyedTravelWorld
from rac.models import RecordStatus, RunStatus
from rac.stores import SQLiteStore, Store, open_store
from rac.stores.changes import Append, Change, CreateRun, UpdateRecord, UpdateRun
from rac.testing import VirtualClock
from tests.reliability.support import check_world_after_abort, durable_url, keyed_engine  # noqa: F401


class Disk:
    """A store that remembers each commit it passed on (its changes, and whether it was
    durable) in front of a real one."""

    def __init__(self, inner: Store) -> None:
        self._inner = inner
        self.commits: list[tuple[list[Change], bool]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def commit(self, changes: Sequence[Change], *, durable: bool = True) -> None:
        self._inner.commit(changes, durable=durable)  # type: ignore[attr-defined]
        self.commits.append((list(changes), durable))

    # the single-change calls of the protocol, counted the same way
    def create_run(self, run: Any) -> None:
        self.commit([CreateRun(run)])

    def append(self, record: Any) -> None:
        self.commit([Append(record)])

    def update_record(self, run_id: str, seq: int, **fields: Any) -> None:
        self.commit([UpdateRecord(run_id, seq, fields)])

    def update_run(self, run_id: str, **fields: Any) -> None:
        self.commit([UpdateRun(run_id, fields)])

    def durable(self) -> int:
        return sum(1 for _, d in self.commits if d)

    def after_power_cut(self, path: Path, upto: int) -> str:
        """A new log holding what a power cut right after commit ``upto`` leaves: every commit
        up to the last durable one at or before it."""
        last = max((i for i, (_, d) in enumerate(self.commits[:upto + 1]) if d), default=-1)
        store = SQLiteStore(path)
        for changes, _ in self.commits[:last + 1]:
            store.commit(changes)
        store.close()
        return f"sqlite:///{path}"


TRIP = [("book_flight", {"passenger": "a", "origin": "X", "dest": "Y"}),
        ("book_hotel", {"guest": "a", "city": "Y", "nights": 1}),
        ("book_car", {"driver": "a", "city": "Y"})]


def test_a_successful_call_costs_one_durable_commit_made_before_the_tool_runs(
        tmp_path: Path, durable_url: str) -> None:  # noqa: F811
    world = KeyedTravelWorld(str(tmp_path / "w.db"))
    disk = Disk(open_store(durable_url))
    engine = keyed_engine(world, disk, VirtualClock())  # type: ignore[arg-type]
    seen: list[tuple[str, RecordStatus]] = []

    def before_effect(tool: str) -> None:  # the tool has acted: its intent must be on disk
        flushed = [c for changes, durable in disk.commits if durable for c in changes
                   if isinstance(c, Append)]
        seen.append((flushed[-1].record.tool, flushed[-1].record.status))

    world.after_effect = before_effect
    with engine.run() as run:
        run.call("book_flight", **TRIP[0][1])
        start = disk.durable()
        for tool, args in TRIP:
            run.call(tool, **args)
        assert disk.durable() - start == len(TRIP)
    assert seen == [(t, RecordStatus.PENDING) for t, _ in [TRIP[0], *TRIP]]
    engine.close()


def test_finishing_the_run_after_every_call_costs_no_durable_commit(
        tmp_path: Path, durable_url: str) -> None:  # noqa: F811
    """LangGraph and Semantic Kernel finish the run after each call: the completed/running
    flip rides with the next intent, so a call is still one flush."""
    world = KeyedTravelWorld(str(tmp_path / "w.db"))
    disk = Disk(open_store(durable_url))
    engine = keyed_engine(world, disk, VirtualClock())  # type: ignore[arg-type]
    run = engine.run()
    run.start()
    start = disk.durable()
    for tool, args in TRIP:
        assert run.execute(tool, args, lambda name, a: run.tool(name).invoke(a)).ok  # type: ignore[union-attr]
        assert run.finish()
    assert disk.durable() - start == len(TRIP)
    reopened = [c for changes, _ in disk.commits for c in changes
                if isinstance(c, UpdateRun) and c.fields.get("status") is RunStatus.RUNNING]
    assert len(reopened) == len(TRIP) - 1
    assert all(any(isinstance(c, Append) for c in changes) for changes, _ in disk.commits
               if any(c in reopened for c in changes)), "the reopening rode with an intent"
    engine.close()


def test_a_compensation_is_one_durable_commit(tmp_path: Path,
                                              durable_url: str) -> None:  # noqa: F811
    world = KeyedTravelWorld(str(tmp_path / "w.db"))
    world.fail("book_car", "permanent")
    disk = Disk(open_store(durable_url))
    engine = keyed_engine(world, disk, VirtualClock())  # type: ignore[arg-type]
    with pytest.raises(rac.ToolCallFailed), engine.run() as run:
        for tool, args in TRIP[:2]:
            run.call(tool, **args)
        before = disk.durable()
        run.call(*TRIP[2][:1], **TRIP[2][1])
    # the car's intent, then one flush per compensation (hotel, flight)
    assert disk.durable() - before == 1 + 2
    check_world_after_abort(world)
    engine.close()


def _world_copy(world: KeyedTravelWorld, path: Path) -> None:
    """The world as it stands, copied to ``path`` (its own ledger, to check a cut against)."""
    import sqlite3

    target = sqlite3.connect(path)
    world._db.backup(target)
    target.close()


@pytest.mark.parametrize("finish_steps", [False, True], ids=["open", "finished_per_call"])
def test_recovery_after_a_power_cut_at_any_point_leaves_nothing_live(
        tmp_path: Path, finish_steps: bool) -> None:
    """A power cut just before any commit of a run (after the tool it let run acted, before
    its outcome was flushed, ...) leaves the log of the last durable commit and the world as
    it was then. The outcome a cut lost is read as "may have happened": recovery undoes the
    call by its key, and never reports the run clean with an effect live."""
    world = KeyedTravelWorld(str(tmp_path / "w.db"))
    disk = Disk(SQLiteStore(tmp_path / "log.db"))
    real = disk.commit

    def commit(changes: Sequence[Change], *, durable: bool = True) -> None:
        _world_copy(world, tmp_path / f"w{len(disk.commits)}.db")  # the world before it
        real(changes, durable=durable)

    disk.commit = commit  # type: ignore[method-assign]
    engine = keyed_engine(world, disk, VirtualClock())  # type: ignore[arg-type]
    run = engine.run()
    run.start()
    for tool, args in TRIP[:2]:
        run.execute(tool, args, lambda name, a: run.tool(name).invoke(a))  # type: ignore[union-attr]
        if finish_steps:
            run.finish()
    engine.leases.close()  # the power goes: no heartbeat writes after this
    _world_copy(world, tmp_path / f"w{len(disk.commits)}.db")
    checked = 0
    for cut in range(len(disk.commits) + 1):  # the cut comes just before commit ``cut``
        url = disk.after_power_cut(tmp_path / f"cut{cut}.db", cut - 1)
        snapshot = KeyedTravelWorld(str(tmp_path / f"w{cut}.db"))
        log = open_store(url)
        engine = keyed_engine(snapshot, log, VirtualClock(start=VirtualClock().now() + 10_000))
        results = engine.recover()  # its lease has run out
        runs = log.list_runs()
        if not runs:  # nothing was on disk: nothing may have run
            assert results == [] and snapshot.live() == [], (cut, results)
        elif runs[0].status is RunStatus.COMPLETED:  # finished, its outcomes on disk
            assert results == [], (cut, results)
            assert all(r.status is RecordStatus.COMPLETED
                       for r in log.get_records(runs[0].run_id)), cut
        else:
            (out,) = results
            assert out.outcome == "compensated", (cut, out)
            check_world_after_abort(snapshot)
            checked += 1
        engine.close()
        snapshot.close()
    assert checked >= 2
