"""Issue 28: live leases. A live run renews its lease (by its writes and by a heartbeat);
``recover()`` with no run ids finds exactly the runs whose lease ran out, on any machine; two
machines racing end with one claim; a worker paused past its lease loses the run and its late
writes are refused. On SQLite and PostgreSQL, time virtual (the heartbeat's own interval is
the one real-time wait, bounded generously)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rac
from rac.models import RecordStatus, RunInfo, RunStatus
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld, VirtualClock
from tests.reliability.support import drop, store_url

#: Another machine's process, as an owner string (its liveness cannot be told from here).
ELSEWHERE = "machine-b:4242:b0b0b0"
LEASE = 30.0


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    u = store_url(request.param, tmp_path)
    yield u
    drop(u)


def engine(world: TravelWorld, url: str, clock: VirtualClock, *, owner: str | None = None,
           **kw: Any) -> rac.RAC:
    kw.setdefault("lease_seconds", LEASE)
    kw.setdefault("heartbeat_seconds", 0)  # renewed by writes and renew() alone: a paused process
    e = rac.RAC(compensations=TRAVEL_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                tools=world.tools(), store=url, clock=clock, load_entrypoints=False,
                retry=rac.RetryPolicy(max_attempts=1), **kw)
    if owner is not None:
        e.owner = owner
    return e


def lease_of(eng: rac.RAC, run_id: str) -> float:
    info = eng.store.get_run(run_id)
    assert info is not None
    return info.lease_until


def test_a_live_run_holds_a_lease_and_renews_it(url: str) -> None:
    clock, world = VirtualClock(), TravelWorld()
    eng = engine(world, url, clock)
    run = eng.run()
    run.start()
    assert lease_of(eng, run.run_id) == clock.now() + LEASE
    clock.advance(10)
    run.call("book_flight", passenger="ann", origin="SFO", dest="CDG")  # a write renews it
    assert lease_of(eng, run.run_id) == clock.now() + LEASE
    clock.advance(20)
    assert eng.leases.renew() == 1  # the heartbeat's beat
    assert lease_of(eng, run.run_id) == clock.now() + LEASE
    run.finish()  # over in this process: the lease ends, nothing renews it any more
    assert lease_of(eng, run.run_id) == rac.leases.ENDED
    assert eng.leases.renew() == 0
    eng.close()


def test_the_heartbeat_thread_renews_a_quiet_run(tmp_path: Path) -> None:
    clock, world = VirtualClock(), TravelWorld()
    eng = engine(world, f"sqlite:///{tmp_path / 'log.db'}", clock, lease_seconds=3.0,
                 heartbeat_seconds=0.02)
    assert eng.leases.heartbeat_seconds == 0.02
    run = eng.run()
    run.start()
    clock.advance(2.0)  # nothing written since: only the heartbeat can move the lease
    deadline = time.monotonic() + 60
    while lease_of(eng, run.run_id) != clock.now() + 3.0:
        assert time.monotonic() < deadline, "the heartbeat renewed nothing in 60 s"
        time.sleep(0.01)
    eng.close()  # the heartbeat stops with the engine
    assert eng.leases.held() == []


def test_the_default_heartbeat_is_a_third_of_the_lease() -> None:
    eng = rac.RAC(store="memory://", load_entrypoints=False)
    assert (eng.leases.lease_seconds, eng.leases.heartbeat_seconds) == (60.0, 20.0)
    with pytest.raises(rac.ConfigurationError, match="lease_seconds"):
        rac.RAC(store="memory://", lease_seconds=0)
    with pytest.raises(rac.ConfigurationError, match="heartbeat_seconds"):
        rac.RAC(store="memory://", lease_seconds=10, heartbeat_seconds=10)


def test_recover_finds_exactly_the_runs_whose_lease_ran_out(url: str) -> None:
    """No flag, no run id: of another machine's runs, the one whose lease ran out is recovered;
    one still renewed, one finished, and one written by RAC 0.1 (no lease, owner unknown) are
    left alone."""
    clock, world = VirtualClock(), TravelWorld()
    worker = engine(world, url, clock, owner=ELSEWHERE)
    expired = worker.run()
    expired.start()
    expired.call("book_flight", passenger="ann", origin="SFO", dest="CDG")
    clock.advance(LEASE + 1)  # the worker stopped renewing it
    live = worker.run()
    live.start()
    live.call("book_flight", passenger="bob", origin="SFO", dest="CDG")
    with worker.run() as done:
        done.call("book_flight", passenger="cy", origin="SFO", dest="CDG")
    worker.store.create_run(RunInfo("run-from-0.1", status=RunStatus.RUNNING, owner=ELSEWHERE,
                                    lease_until=0.0))
    recoverer = engine(world, url, clock)
    found = recoverer.recover()
    assert [(o.run_id, o.outcome) for o in found] == [(expired.run_id, "compensated")]
    assert [b["who"] for b in world.live()] == ["bob", "cy"]
    assert recoverer.store.get_run(live.run_id).status is RunStatus.RUNNING  # type: ignore[union-attr]
    assert recoverer.recover() == []


def test_two_machines_racing_end_with_one_claim(url: str) -> None:
    clock, world = VirtualClock(), TravelWorld()
    worker = engine(world, url, clock, owner=ELSEWHERE)
    run = worker.run()
    run.start()
    run.call("book_flight", passenger="ann", origin="SFO", dest="CDG")
    run.call("book_hotel", guest="ann", city="Paris", nights=2)
    worker.store.flush()  # type: ignore[attr-defined]  # its last outcome reached the log
    clock.advance(LEASE + 1)
    machines = [engine(world, url, clock, owner=f"machine-{i}:1:aaaaaa") for i in "cd"]
    barrier = threading.Barrier(2)
    outcomes: list[tuple[str, str]] = []

    def recover(e: rac.RAC) -> None:
        barrier.wait()
        outcomes.extend((e.owner, o.outcome) for o in e.recover())

    threads = [threading.Thread(target=recover, args=(m,)) for m in machines]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [o for _, o in outcomes if o != "skipped"] == ["compensated"], outcomes
    assert world.live() == []
    cancels = [t for t, _, event in world.ledger() if event == "cancel"]
    assert sorted(cancels) == ["cancel_flight", "cancel_hotel"]  # each undone once


def test_a_worker_paused_past_its_lease_loses_the_run_and_its_late_writes(url: str) -> None:
    """The worker stops (paused) in the middle of booking the hotel; its lease runs out and
    another machine recovers the run. When the worker wakes up, the hotel is booked, but its
    outcome is refused, and so is its next call, before it runs: the log stays the
    recoverer's, and it names the hotel as possibly live, which it is."""
    clock, world = VirtualClock(), TravelWorld()
    worker = engine(world, url, clock, owner=ELSEWHERE)
    started, resume = threading.Event(), threading.Event()

    def pause(args: dict[str, Any]) -> None:
        started.set()
        assert resume.wait(120), "the test never woke the worker up"

    world.on_call("book_hotel", pause)
    seen: list[BaseException] = []
    box: list[rac.Run] = []

    def agent() -> None:
        run = worker.run()
        box.append(run)
        run.start()
        run.call("book_flight", passenger="ann", origin="SFO", dest="CDG")
        try:
            run.call("book_hotel", guest="ann", city="Paris", nights=2)
        except rac.LeaseLostError as e:
            seen.append(e)
        try:
            run.call("book_car", driver="ann", city="Paris")
        except rac.LeaseLostError as e:
            seen.append(e)

    thread = threading.Thread(target=agent)
    thread.start()
    assert started.wait(120), "the worker never reached the hotel"
    clock.advance(LEASE + 1)  # paused: no heartbeat, no write
    recoverer = engine(world, url, clock, owner="machine-c:1:cccccc")
    [out] = recoverer.recover()
    assert out.outcome == "needs_attention"
    resume.set()
    thread.join(120)
    assert len(seen) == 2 and all("no longer holds" in str(e) for e in seen)
    run_id = box[0].run_id
    records = recoverer.store.get_records(run_id)
    # the hotel's undo needs the booking id its lost outcome held: it is named, possibly live
    assert [(r.tool, r.status) for r in records if r.kind is rac.RecordKind.ACTION] == [
        ("book_flight", RecordStatus.COMPENSATED),
        ("book_hotel", RecordStatus.COMPENSATION_FAILED)]
    assert [(a.tool, a.happened) for a in out.report.left_live] == [  # type: ignore[union-attr]
        ("book_hotel", "maybe")]
    assert [b["kind"] for b in world.live()] == ["hotel"]  # the hotel is live, as named
    assert world.calls.get("book_car", 0) == 0  # refused before it ran
    info = recoverer.store.get_run(run_id)
    assert info is not None and info.owner == "machine-c:1:cccccc"
    assert info.status is RunStatus.NEEDS_ATTENTION


def test_a_run_over_in_its_process_can_be_resumed_at_once(url: str) -> None:
    """A needs_attention run whose block closed ended its lease: another process may resume
    it without waiting for the lease to run out; while the block is open, it may not."""
    clock, world = VirtualClock(), TravelWorld()
    world.fail("book_car", "permanent")
    outage = world.fail("cancel_hotel", "transient")
    worker = engine(world, url, clock, owner=ELSEWHERE, compensation_retry=rac.RetryPolicy(
        max_attempts=1))
    operator = engine(world, url, clock)
    with pytest.raises(rac.ToolCallFailed), worker.run() as run:
        run.call("book_flight", passenger="ann", origin="SFO", dest="CDG")
        run.call("book_hotel", guest="ann", city="Paris", nights=2)
        run.call("book_car", driver="ann", city="Paris")
        assert run.status is RunStatus.NEEDS_ATTENTION
        assert operator.resume(run.run_id).outcome == "skipped"  # its process is on it
    world.faults["cancel_hotel"].remove(outage)
    assert operator.resume(run.run_id).outcome == "compensated"
    assert world.live() == []
