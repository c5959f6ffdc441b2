"""Recovery in one process: dead letters and resume, racing recoverers, errors during recovery,
sequence mismatches, cancellation during a rollback, threads and processes on one SQLite log."""

from __future__ import annotations

import asyncio
import multiprocessing
import threading
from pathlib import Path
from typing import Any

import pytest

import rac
from rac.demo.crash import CrashPlugin, KeyedTravelWorld
from rac.models import RecordStatus, RunStatus
from rac.recovery import continue_run, find_unfinished
from rac.stores import SQLiteStore, open_store
from rac.testing import VirtualClock, abandon_runs
from tests.reliability.support import check_world_after_abort, durable_url, keyed_engine  # noqa: F401


class Crash(BaseException):
    """Stands in for a dead process inside one test process."""


def _raise(point: str) -> None:
    raise Crash(point)


def crashed_run(world: KeyedTravelWorld, url: str, point: str, clock: VirtualClock) -> str:
    """Book flight, hotel, car (car fails) and stop at ``point`` as a killed process would."""
    world.fail("book_car", "permanent")
    engine = keyed_engine(world, url, clock)
    crash = CrashPlugin(point, action=_raise)
    crash.watch(world)
    engine.register_plugin(crash)
    run = engine.run()
    run.start()
    try:
        for tool, args in [("book_flight", {"passenger": "a", "origin": "X", "dest": "Y"}),
                           ("book_hotel", {"guest": "a", "city": "Y", "nights": 1}),
                           ("book_car", {"driver": "a", "city": "Y"})]:
            run.call(tool, **args)
    except Crash:
        pass
    world.after_effect = None
    world.faults.clear()
    abandon_runs(engine)  # killed: its lease runs out, nobody renews it
    return run.run_id


def test_dead_letter_then_resume_after_a_fix(tmp_path: Path) -> None:
    world = KeyedTravelWorld(str(tmp_path / "w.db"))
    url = f"sqlite:///{tmp_path / 'log.db'}"
    engine = keyed_engine(world, url)
    world.fail("book_car", "permanent")
    outage = world.fail("cancel_hotel", "transient")  # the hotel system is down
    with pytest.raises(rac.ToolCallFailed), engine.run() as run:
        run.call("book_flight", passenger="a", origin="X", dest="Y")
        run.call("book_hotel", guest="a", city="Y", nights=2)
        run.call("book_car", driver="a", city="Y")
    assert run.status is RunStatus.NEEDS_ATTENTION
    assert [r.run_id for r in engine.store.list_runs(RunStatus.NEEDS_ATTENTION)] == [run.run_id]
    hotel = engine.store.get_records(run.run_id)[1]
    assert hotel.status is RecordStatus.COMPENSATION_FAILED
    assert len(world.live("hotel")) == 1
    world.faults["cancel_hotel"].remove(outage)  # the fix
    fresh = keyed_engine(world, url)
    outcome = fresh.resume(run.run_id)
    assert outcome.outcome == "compensated"
    assert fresh.store.get_run(run.run_id).status is RunStatus.COMPENSATED  # type: ignore[union-attr]
    check_world_after_abort(world)


@pytest.mark.parametrize("point", ["book_hotel:after_effect", "cancel_hotel:after_intent"])
def test_recovery_loops_to_dead_letter_then_resume(point: str, tmp_path: Path,
                                                   durable_url: str) -> None:  # noqa: F811
    clock = VirtualClock()
    world = KeyedTravelWorld(str(tmp_path / "w.db"))
    run_id = crashed_run(world, durable_url, point, clock)
    broken = world.fail("cancel_flight", "transient")
    engine = keyed_engine(world, durable_url, clock)
    (out,) = engine.recover([run_id])
    assert out.outcome == "needs_attention" and [a.tool for a in out.report.left_live] == [
        "book_flight"]
    assert world.calls["cancel_flight"] == 3  # the compensation retry budget, virtual time
    assert clock.sleeps == [1.0, 2.0]
    assert engine.recover() == []  # a dead letter is not picked up again by itself
    world.faults["cancel_flight"].remove(broken)
    assert keyed_engine(world, durable_url, clock).resume(run_id).outcome == "compensated"
    check_world_after_abort(world)


def test_two_racing_recoverers_one_wins(tmp_path: Path, durable_url: str) -> None:  # noqa: F811
    clock = VirtualClock()
    world = KeyedTravelWorld(str(tmp_path / "w.db"))
    run_id = crashed_run(world, durable_url, "cancel_hotel:before_intent", clock)
    engines = [keyed_engine(world, open_store(durable_url), clock) for _ in range(2)]
    barrier = threading.Barrier(2)
    outcomes: list[Any] = []

    def recoverer(e: rac.RAC) -> None:
        barrier.wait()
        outcomes.extend(e.recover([run_id]))

    threads = [threading.Thread(target=recoverer, args=(e,)) for e in engines]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(o.outcome for o in outcomes) == ["compensated", "skipped"]
    check_world_after_abort(world)


def test_an_error_during_recovery_leaves_the_run_claimable(tmp_path: Path) -> None:
    clock = VirtualClock()
    world = KeyedTravelWorld(str(tmp_path / "w.db"))
    url = f"sqlite:///{tmp_path / 'log.db'}"
    run_id = crashed_run(world, url, "book_hotel:after_outcome", clock)
    engine = keyed_engine(world, url, clock)

    class Boom(Exception):
        pass

    def broken_read(run_id: str) -> list[rac.Record]:
        raise Boom("the recoverer hit a bug")

    # A plugin that raises no longer breaks a recovery (it is "no answer"): a store that fails
    # while the run is rebuilt does.
    engine.store.get_records = broken_read  # type: ignore[method-assign]
    (out,) = engine.recover([run_id])
    assert out.outcome == "error" and "Boom" in (out.reason or "")
    info = engine.store.get_run(run_id)
    assert info is not None and info.owner is None
    assert info.status in (RunStatus.RUNNING, RunStatus.COMPENSATING)  # claimable again
    # Not stranded: any recoverer finds and finishes it.
    again = keyed_engine(world, url, clock)
    assert [r.run_id for r in find_unfinished(again)] == [run_id]
    assert [o.outcome for o in again.recover()] == ["compensated"]
    check_world_after_abort(world)


def test_a_live_runs_owner_is_left_alone(tmp_path: Path) -> None:
    world = KeyedTravelWorld()
    engine = keyed_engine(world, f"sqlite:///{tmp_path / 'log.db'}")
    with engine.run() as run:
        run.call("book_flight", passenger="a", origin="X", dest="Y")
        other = keyed_engine(world, f"sqlite:///{tmp_path / 'log.db'}")
        assert other.recover() == []  # the owner (this process) is alive
        assert other.store.get_run(run.run_id).status is RunStatus.RUNNING  # type: ignore[union-attr]


def test_a_different_step_at_a_seq_is_a_sequence_mismatch(tmp_path: Path) -> None:
    world = KeyedTravelWorld()
    url = f"sqlite:///{tmp_path / 'log.db'}"
    engine = keyed_engine(world, url)
    run = engine.run()
    run.start()
    first = run.call("book_flight", passenger="a", origin="X", dest="Y")
    # The process stops here; a new one carries the run on from its log.
    abandon_runs(engine)
    successor = keyed_engine(world, url)
    again = continue_run(successor, run.run_id)
    with pytest.raises(rac.SequenceMismatchError, match="book_flight"):
        again.call("book_hotel", guest="a", city="Y", nights=1)
    # Another process cannot take the run over while the successor holds it.
    with pytest.raises(rac.RACError, match="held by"):
        continue_run(keyed_engine(world, url), run.run_id)
    same = continue_run(successor, run.run_id)
    with same:
        assert same.call("book_flight", passenger="a", origin="X", dest="Y") == first
        same.call("book_hotel", guest="a", city="Y", nights=1)  # new: runs and is logged
    assert world.calls["book_flight"] == 1
    assert [r.tool for r in open_store(url).get_records(run.run_id)] == ["book_flight",
                                                                         "book_hotel"]


async def test_cancellation_during_a_rollback_finishes_compensations() -> None:
    world = KeyedTravelWorld()
    clock = VirtualClock()
    engine = keyed_engine(world, "memory://", clock)
    started = asyncio.Event()
    release = asyncio.Event()

    async def slow_cancel_hotel(booking_id: str = "", action_key: str = "") -> dict[str, Any]:
        started.set()
        await release.wait()
        return world.cancel_hotel(booking_id=booking_id, action_key=action_key)

    slow_cancel_hotel.__name__ = "cancel_hotel"
    engine.register_tools([slow_cancel_hotel])
    world.fail("book_car", "permanent")

    async def agent() -> None:
        async with engine.run() as run:
            await run.acall("book_flight", passenger="a", origin="X", dest="Y")
            await run.acall("book_hotel", guest="a", city="Y", nights=1)
            await run.acall("book_car", driver="a", city="Y")

    task = asyncio.create_task(agent())
    await started.wait()
    task.cancel()  # in the middle of the rollback
    await asyncio.sleep(0)
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    check_world_after_abort(world)


def _process_writer(path: str, worker: int, n: int) -> None:
    store = SQLiteStore(path)
    from rac.testing.conformance import make_record

    for i in range(n):
        store.append(make_record(f"proc-{worker}", i + 1))
        store.update_record(f"proc-{worker}", i + 1, status=RecordStatus.COMPLETED)
    store.close()


def test_threads_and_processes_share_one_sqlite_log(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.db")
    SQLiteStore(path).close()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_process_writer, args=(path, w, 40)) for w in range(3)]
    for p in procs:
        p.start()
    world = KeyedTravelWorld()
    engine = keyed_engine(world, SQLiteStore(path))
    errors: list[BaseException] = []

    def agent(i: int) -> None:
        try:
            with engine.run(run_id=f"thread-{i}") as run:
                for _ in range(5):
                    run.call("book_flight", passenger=f"p{i}", origin="X", dest="Y")
        except BaseException as e:  # noqa: BLE001 - asserted below
            errors.append(e)

    threads = [threading.Thread(target=agent, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for p in procs:
        p.join(120)
    assert errors == [] and all(p.exitcode == 0 for p in procs)
    check = SQLiteStore(path)
    for w in range(3):
        recs = check.get_records(f"proc-{w}")
        assert [r.seq for r in recs] == list(range(1, 41))
        assert all(r.status is RecordStatus.COMPLETED for r in recs)
    for i in range(4):
        assert len(check.get_records(f"thread-{i}")) == 5
        assert check.get_run(f"thread-{i}").status is RunStatus.COMPLETED  # type: ignore[union-attr]
