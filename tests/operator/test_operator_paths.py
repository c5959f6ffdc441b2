"""The operator's paths in one process: who works on a run (the predicate resume and recover
act on), and a resolution written through the run's checked writer and its notifications."""

from __future__ import annotations

import socket
import subprocess
import sys
from typing import Any

import pytest

import rac
from rac.models import RecordStatus, RunInfo, RunStatus
from rac.recovery import ownership, unresolvable
from rac.testing import TravelWorld, VirtualClock

FLIGHT = {"passenger": "ann", "origin": "SFO", "dest": "CDG"}


def gone_pid() -> int:
    """The pid of a process that has ended."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(120)
    return proc.pid


@pytest.mark.parametrize(("owner", "lease", "state"), [
    (None, 0.0, "free"),
    ("ENGINE", 0.0, "self"),
    ("other-host:1:abc", 0.0, "unknown"),
    ("other-host:1:abc", 100.0, "live"),          # a lease held (a recoverer, or a heartbeat)
    ("other-host:1:abc", -50.0, "free"),          # a lease that expired
    (f"{socket.gethostname()}:ME:abc", 0.0, "local"),
    (f"{socket.gethostname()}:ALIVE:abc", 0.0, "live"),
    (f"{socket.gethostname()}:GONE:abc", 0.0, "free"),
])
def test_who_works_on_a_run(make_engine: Any, owner: str | None, lease: float,
                            state: str) -> None:
    import os

    engine = make_engine()
    now = engine.clock.now()
    if owner == "ENGINE":
        owner = engine.owner
    elif owner is not None:
        owner = owner.replace("ME", str(os.getpid())).replace("GONE", str(gone_pid()))
        owner = owner.replace("ALIVE", str(os.getppid()))
    who = ownership(engine, RunInfo("r", owner=owner, lease_until=now + lease if lease else 0.0),
                    now)
    assert who.state == state and who.reason


class Listener:
    def __init__(self) -> None:
        self.records: list[tuple[int, str, str | None]] = []
        self.runs: list[tuple[str, str | None]] = []

    @rac.hookimpl
    def rac_record_written(self, record: rac.Record, previous: str | None) -> None:
        self.records.append((record.seq, str(record.status), previous))

    @rac.hookimpl
    def rac_run_status_changed(self, run_id: str, status: RunStatus,
                               previous: RunStatus | None) -> None:
        self.runs.append((str(status), str(previous) if previous else None))


def test_a_resolution_goes_through_the_runs_writer_and_its_notifications(
        make_engine: Any, world: TravelWorld) -> None:
    world.fail("cancel_flight", "permanent")
    engine = make_engine()
    with engine.run() as run:
        run.call("book_flight", **FLIGHT)
        run.rollback()
    assert run.status is RunStatus.NEEDS_ATTENTION
    heard = Listener()
    engine.register_plugin(heard)
    engine.clock = VirtualClock(1_800_003_600.0)
    from structlog.testing import capture_logs

    with capture_logs() as events:
        info = engine.resolve(run.run_id, 1, note="cancelled with the airline by phone",
                              by="dana")
    assert info.status is RunStatus.RESOLVED
    assert heard.records == [(1, "resolved", "compensation_failed")]
    assert heard.runs == [("resolved", "needs_attention")]
    assert {(e["event"], e.get("status")) for e in events} >= {
        ("rac.record", "resolved"), ("rac.run", "resolved")}
    (rec, _) = engine.store.get_records(run.run_id)
    assert rec.note == ("resolved by dana at 2027-01-15T09:00:00Z: cancelled with the airline "
                        "by phone")
    # the lifecycle wrapper saw both changes as legal ones
    changes = [c for c in engine.store.changes if c[0] == run.run_id]
    assert changes[-2:] == [(run.run_id, 1, "compensation_failed", "resolved"),
                            (run.run_id, None, "needs_attention", "resolved")]


def test_resolve_refuses_with_the_reason(make_engine: Any, world: TravelWorld) -> None:
    engine = make_engine()
    with engine.run() as run:
        run.call("book_flight", **FLIGHT)
    with pytest.raises(rac.RACError, match="the run is completed: nothing of it waits"):
        engine.resolve(run.run_id, 1, note="x")
    info = engine.store.get_run(run.run_id)
    rec = engine.store.get_records(run.run_id)[0]
    assert info is not None and "nothing of it waits" in (unresolvable(info, rec) or "")
    assert rec.status is RecordStatus.COMPLETED and len(world.live()) == 1


def test_resume_by_another_engine_leaves_the_live_owners_newer_work(
        make_engine: Any, world: TravelWorld) -> None:
    """The in-process form of the CLI's reproduction: an engine resumes a run whose owner (a
    live process on this host: here the test's parent, standing in for it) made newer calls
    after the dead letter, its run still open."""
    import os

    world.fail("cancel_flight", "permanent", times=1)
    owner = make_engine()
    owner.owner = f"{socket.gethostname()}:{os.getppid()}:stand-in"
    with owner.run() as run:
        run.call("book_flight", **FLIGHT)
        run.rollback()
        run.call("book_hotel", guest="ann", city="Paris", nights=1)
        operator = make_engine(store=owner.store, clock=VirtualClock())
        out = operator.resume(run.run_id)
        assert out.outcome == "retried" and out.settled
        assert [b["kind"] for b in world.live()] == ["hotel"]
    assert owner.store.get_run(run.run_id).status is RunStatus.NEEDS_ATTENTION  # type: ignore[union-attr]
