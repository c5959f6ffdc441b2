"""A run's writes renew its lease once it has run down by a tenth (rac.run.log.RENEW_AFTER),
and every write is fenced all the same: a write that leaves the lease as it is is refused once
another process holds the run, on every store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import rac
from rac.models import RunInfo
from rac.run.log import RENEW_AFTER
from rac.stores.changes import Append, Fence
from rac.testing import TRAVEL_COMPENSATIONS, TravelWorld, VirtualClock
from rac.testing.conformance import make_record
from tests.reliability.support import drop, store_url

LEASE = 30.0


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "memory":
        yield "memory://"
        return
    u = store_url(request.param, tmp_path)
    yield u
    drop(u)


def _engine(world: TravelWorld, url: str, clock: VirtualClock) -> rac.RAC:
    return rac.RAC(compensations=TRAVEL_COMPENSATIONS, tools=world.tools(), store=url,
                   clock=clock, lease_seconds=LEASE, heartbeat_seconds=0,
                   load_entrypoints=False)


def _lease(engine: rac.RAC, run_id: str) -> float:
    info = engine.store.get_run(run_id)
    assert info is not None
    return info.lease_until


def test_a_write_renews_the_lease_once_it_ran_down_by_a_tenth(url: str) -> None:
    clock, world = VirtualClock(), TravelWorld()
    eng = _engine(world, url, clock)
    run = eng.run()
    run.start()
    written = clock.now() + LEASE
    assert _lease(eng, run.run_id) == written
    clock.advance(LEASE * RENEW_AFTER / 2)
    run.call("book_flight", passenger="ann", origin="SFO", dest="CDG")
    assert _lease(eng, run.run_id) == written  # renewed a moment ago: left as it is
    clock.advance(LEASE * RENEW_AFTER)
    run.call("book_hotel", guest="ann", city="Paris", nights=2)
    assert _lease(eng, run.run_id) == clock.now() + LEASE
    run.finish()
    assert _lease(eng, run.run_id) == rac.leases.ENDED
    eng.close()


def test_a_write_that_leaves_the_lease_is_refused_once_another_process_holds_the_run(
        url: str) -> None:
    clock, world = VirtualClock(), TravelWorld()
    eng = _engine(world, url, clock)
    run = eng.run()
    run.call("book_flight", passenger="ann", origin="SFO", dest="CDG")
    # another process took the run over (its claim, as the log sees it)
    eng.store.update_run(run.run_id, owner="machine-b:1:b0b0b0", lease_until=clock.now() + 60)
    with pytest.raises(rac.LeaseLostError):
        run.call("book_hotel", guest="ann", city="Paris", nights=2)
    assert [r.tool for r in eng.store.get_records(run.run_id)] == ["book_flight"]
    assert [b["kind"] for b in world.live()] == ["flight"]  # the hotel never ran
    eng.close()


def test_a_fence_without_a_lease_checks_the_owner_and_leaves_the_lease(url: str) -> None:
    eng = rac.RAC(store=url, load_entrypoints=False)  # kept: closing it closes its store
    store = eng.store
    store.create_run(RunInfo("fenced", owner="me", lease_until=10.0))
    store.commit([Fence("fenced", "me"), Append(make_record("fenced", 1))])
    info = store.get_run("fenced")
    assert info is not None and (info.owner, info.lease_until) == ("me", 10.0)
    with pytest.raises(rac.LeaseLostError):
        store.commit([Fence("fenced", "someone-else"), Append(make_record("fenced", 2))])
    assert [r.seq for r in store.get_records("fenced")] == [1]
    eng.close()
