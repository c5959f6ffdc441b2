"""tau2 airline ``book_reservation`` calls that may have happened, reconciled through the user's
reservations (``rac.Lookup`` over :meth:`Tau2AirlineWorld.list_user_reservations_booked_now`).

Every test drives tau2's real airline environment (its ``AirlineTools`` over the shipped
database, through ``Environment.use_tool``) under the engine the benchmark's
``rac-memory+lookup`` approach builds, with the benchmark's fault layer raising a real
``TimeoutError`` before or after tau2 committed. Judged on tau2's database: how many
reservations the run added, and whether they are cancelled."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("tau2")

import rac  # noqa: E402
from benchmarks.approaches.rac_engine import make_engine  # noqa: E402
from benchmarks.harness.clock import VirtualClock  # noqa: E402
from benchmarks.harness.faults import FaultLayer, FaultRule  # noqa: E402
from benchmarks.harness.runner import quiet  # noqa: E402
from benchmarks.worlds.tau2_airline import (  # noqa: E402
    BOOKING_LOOKUP,
    PASSENGERS,
    Tau2AirlineWorld,
    _choices,
    booking,
)

STORES = ("memory", "sqlite")


@pytest.fixture
def world() -> Iterator[Tau2AirlineWorld]:
    quiet()
    w = Tau2AirlineWorld(VirtualClock())
    w.full_diff = True  # put every changed record back, not only the named ones
    try:
        yield w
    finally:
        w.reset()
        assert w.changed(full=True) == {}


def ana() -> dict[str, Any]:
    """Ana, one way in economy on the cheapest flight, paid by card."""
    c = _choices()
    fn = c["flights"][0]
    return booking(c, fn, PASSENGERS[0], c["card"], c["prices"][fn])


def unpayable() -> dict[str, Any]:
    """Ben's booking paid with a card the user does not hold: tau2 refuses it for good
    (``ValueError: Payment method ... not found``)."""
    c = _choices()
    fn = c["flights"][0]
    return booking(c, fn, PASSENGERS[1], "credit_card_0000000", c["prices"][fn])


def engine_for(world: Tau2AirlineWorld, rules: list[FaultRule], store: str,
               tmp_path: Path) -> tuple[rac.RAC, list[rac.Tool], FaultLayer]:
    layer = FaultLayer(rules, seed=0, scenario="tau2_airline/lookup", clock=world.clock)
    url = "memory://" if store == "memory" else f"sqlite:///{tmp_path / 'log.db'}"
    engine = make_engine(world, url, world.clock, lookups=True)
    tools = [rac.Tool.from_function(fn, name=name)
             for name, fn in layer.wrap_all(world.tools()).items()]
    return engine, tools, layer


def new_reservations(world: Tau2AirlineWorld) -> dict[str, Any]:
    """The reservations this run added to tau2's database, by id."""
    return {k: world.db.reservations[k]
            for k in sorted(world.db.reservations.keys() - world.before.reservations.keys())}


def in_run(engine: rac.RAC, tools: list[rac.Tool], mode: str,
           calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[Any], Any, Any]:
    """Make ``calls`` in one run, blocking or on asyncio: (results, the ToolCallFailed that
    ended it or None, the run)."""
    results: list[Any] = []
    failed: Any = None
    if mode == "sync":
        with engine.run(tools=tools) as run:
            try:
                for name, args in calls:
                    results.append(run.call(name, **args))
            except rac.ToolCallFailed as e:
                failed = e
        return results, failed, run

    async def go() -> Any:
        nonlocal failed
        async with engine.run(tools=tools) as run:
            try:
                for name, args in calls:
                    results.append(await run.acall(name, **args))
            except rac.ToolCallFailed as e:
                failed = e
        return run

    run = asyncio.run(go())
    return results, failed, run


def booking_record(run: Any) -> rac.Record:
    recs = [r for r in run.records() if r.tool == "book_reservation"
            and r.kind is rac.RecordKind.ACTION]
    return recs[0]


@pytest.mark.parametrize("store", STORES)
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_booking_that_committed_then_timed_out_is_found_not_booked_again(
        world: Tau2AirlineWorld, mode: str, store: str, tmp_path: Path) -> None:
    engine, tools, layer = engine_for(
        world, [FaultRule("book_reservation", "timeout", "after_effect", attempts=1)],
        store, tmp_path)
    results, failed, run = in_run(engine, tools, mode, [("book_reservation", ana())])
    assert failed is None and layer.stats.in_doubt == 1
    made = new_reservations(world)
    assert len(made) == 1  # tau2 holds one reservation: it was not booked a second time
    (rid, res), = made.items()
    assert res.status is None and results[0]["reservation_id"] == rid
    assert layer.stats.per_tool["book_reservation"] == 1
    # asked with the intent (what matched before the call: nothing) and when it timed out
    assert layer.stats.per_tool[BOOKING_LOOKUP] == 2
    rec = booking_record(run)
    assert rec.status is rac.RecordStatus.COMPLETED and rec.result["reservation_id"] == rid
    assert run.status is rac.RunStatus.COMPLETED


@pytest.mark.parametrize("store", STORES)
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_found_booking_is_cancelled_when_a_later_call_fails_for_good(
        world: Tau2AirlineWorld, mode: str, store: str, tmp_path: Path) -> None:
    engine, tools, _ = engine_for(
        world, [FaultRule("book_reservation", "timeout", "after_effect", attempts=1,
                          match={"passengers": ana()["passengers"]})], store, tmp_path)
    _, failed, run = in_run(engine, tools, mode,
                            [("book_reservation", ana()), ("book_reservation", unpayable())])
    assert failed is not None and "Payment method credit_card_0000000 not found" in str(
        failed)
    made = new_reservations(world)
    assert len(made) == 1
    (rid, res), = made.items()
    assert res.status == "cancelled"  # tau2's cancel_reservation ran on the found booking
    assert sum(p.amount for p in res.payment_history) == 0  # and refunded it
    report = failed.report
    assert [(a.tool, a.compensator, a.ref, a.happened) for a in report.compensated] == [
        ("book_reservation", "cancel_reservation", rid, "yes")]
    assert report.left_live == [] and report.clean
    assert rid in str(failed) and "cancel_reservation" in str(failed)
    assert run.status is rac.RunStatus.COMPENSATED


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_timeout_before_tau2_committed_is_retried_once(world: Tau2AirlineWorld,
                                                         mode: str, tmp_path: Path) -> None:
    engine, tools, layer = engine_for(
        world, [FaultRule("book_reservation", "timeout", "before_effect", attempts=1)],
        "memory", tmp_path)
    results, failed, run = in_run(engine, tools, mode, [("book_reservation", ana())])
    assert failed is None
    made = new_reservations(world)
    assert len(made) == 1 and results[0]["reservation_id"] in made
    # one attempt timed out, the lookup showed nothing (asked with the intent, then after
    # the timeout: no snapshot is taken again for the retry), the retry booked it
    assert layer.stats.per_tool == {"book_reservation": 2, BOOKING_LOOKUP: 2}
    assert booking_record(run).attempts == 2


def test_a_reservation_that_existed_before_the_run_is_not_taken_for_the_booking(
        world: Tau2AirlineWorld, tmp_path: Path) -> None:
    # The user already holds a reservation with every booked field of the call (made before
    # tau2's "now"): the call times out before it committed; the lookup must say absent.
    args = ana()
    seed_env = world.env.tools
    old = seed_env.book_reservation(**args).model_copy(deep=True)
    del seed_env.db.reservations[old.reservation_id]
    seed_env.db.users[args["user_id"]].reservations.remove(old.reservation_id)
    old.reservation_id, old.created_at = "OLD001", "2024-05-01T09:00:00"
    seed_env.db.reservations["OLD001"] = old
    seed_env.db.users[args["user_id"]].reservations.append("OLD001")
    engine, tools, layer = engine_for(
        world, [FaultRule("book_reservation", "timeout", "before_effect", attempts=1)],
        "memory", tmp_path)
    results, failed, _ = in_run(engine, tools, "sync", [("book_reservation", args)])
    assert failed is None and results[0]["reservation_id"] not in ("OLD001", None)
    assert layer.stats.per_tool["book_reservation"] == 2  # retried: the old one is not it
    assert seed_env.db.reservations["OLD001"].status is None


def test_another_call_s_identical_booking_is_not_credited_to_this_one(
        world: Tau2AirlineWorld, tmp_path: Path) -> None:
    # Two bookings with the same arguments: the first returns normally, the second commits
    # and times out. The lookup sees two matching reservations; the first call's is left
    # out (the core's known effects), so the second is found, not booked a third time.
    engine, tools, layer = engine_for(world, [], "memory", tmp_path)
    tau2_book = world.tools()["book_reservation"]
    made_calls: list[str] = []

    def book_reservation(**args: Any) -> Any:
        out = tau2_book(**args)  # tau2 commits
        made_calls.append(out["reservation_id"])
        if len(made_calls) == 2:
            raise TimeoutError("book_reservation: read timed out")
        return out

    tools = [t for t in tools if t.name != "book_reservation"]
    tools.append(rac.Tool.from_function(book_reservation))
    results, failed, _ = in_run(engine, tools, "sync",
                                [("book_reservation", ana()), ("book_reservation", ana())])
    assert failed is None
    made = new_reservations(world)
    assert len(made) == 2 and all(r.status is None for r in made.values())
    assert [r["reservation_id"] for r in results] == made_calls
    # a snapshot with each call's intent (the second's holds the first's booking), and the
    # second call's reconciliation
    assert layer.stats.per_tool[BOOKING_LOOKUP] == 3


@pytest.mark.parametrize("store", STORES)
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_when_the_lookup_fails_the_booking_is_in_doubt_and_named(
        world: Tau2AirlineWorld, mode: str, store: str, tmp_path: Path) -> None:
    engine, tools, layer = engine_for(
        world, [FaultRule("book_reservation", "timeout", "after_effect", attempts=1),
                FaultRule(BOOKING_LOOKUP, "5xx", attempts=None)], store, tmp_path)
    _, failed, run = in_run(engine, tools, mode, [("book_reservation", ana())])
    made = new_reservations(world)
    assert len(made) == 1  # tau2 committed it, and nothing could tell RAC so
    (rid, res), = made.items()
    assert res.status is None  # still live: nothing cancelled it blindly
    assert layer.stats.per_tool["book_reservation"] == 1  # never retried blindly
    assert failed is not None
    report = failed.report
    assert report.compensated == [] and not report.clean
    assert [(a.tool, a.happened) for a in report.in_doubt] == [("book_reservation", "maybe")]
    rec = booking_record(run)
    # why it is in doubt: the lookup could not be read (its own 503), in the record's note
    assert rec.note is not None and f"the lookup {BOOKING_LOOKUP} raised" in rec.note
    assert "503" in rec.note
    # asked with the intent (its snapshot failed too), when the call timed out, and again
    # when the rollback met the in-doubt record
    assert layer.stats.per_tool == {"book_reservation": 1, BOOKING_LOOKUP: 3}
    assert "STILL LIVE: book_reservation (MAY HAVE HAPPENED" in str(failed)
    assert run.status is rac.RunStatus.NEEDS_ATTENTION
    assert rec.status is not rac.RecordStatus.COMPENSATED


@pytest.mark.parametrize("variant", ["plain", "lookup"])
def test_a_crash_between_tau2_s_commit_and_the_outcome_is_recovered_through_the_lookup(
        variant: str, tmp_path: Path) -> None:
    # The benchmark's crash harness: the process ends (os._exit) right after tau2 committed
    # the first booking, before RAC wrote its outcome; a fresh process with a new engine on
    # the same SQLite log recovers the run against the reloaded tau2 database.
    from benchmarks.harness import crash

    quiet()
    case = ("tau2_airline/three_passengers", "unsolvable", variant, 0)
    points = crash._run_to_point(*case, 0, tmp_path / "trace.db", tmp_path / "trace.world")
    assert Tau2AirlineWorld(VirtualClock()).changed(full=True) == {}  # the trace put it back
    n = points.index("book_reservation:after_effect") + 1
    db, wf = tmp_path / "crash.db", tmp_path / "crash.world"
    code, _ = crash._in_child(lambda: crash._run_to_point(*case, n, db, wf))
    assert code == crash.CRASH_EXIT_CODE

    def recover() -> Any:
        row = crash._recover_and_check(*case, db, wf)
        # tau2's database (shared by this process) as recovery left it
        made = {k: r.status for k, r in Tau2AirlineWorld(VirtualClock()).db.reservations.items()
                if k not in Tau2AirlineWorld(VirtualClock()).before.reservations}
        return {**row, "made": made}

    _, row = crash._in_child(recover)
    assert row is not None and "child_error" not in row, row
    if variant == "lookup":  # found by the lookup, then cancelled with tau2's own tool
        assert row["status"] == "abort" and row["outcome"] == "equivalent_clean", row
        assert row["made"] == {"HATHAT": "cancelled"}
    else:  # no lookup: nothing can tell whether it happened; named, never said clean
        assert row["status"] == "needs_attention" and row["outcome"] == "residual", row
        assert not row["silent_residual"] and not row["false_clean"]
        assert row["made"] == {"HATHAT": None}
