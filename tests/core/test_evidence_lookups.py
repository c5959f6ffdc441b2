"""Issue 25, lookups by identity: a lookup's verdict concerns *this* call's effect. What
matched before the call, another call's known effect (compared on every id, not the first
id-like field), and a sibling's possible effect are never credited to it; rows RAC cannot
read mean *cannot tell*, never *absent*."""

from __future__ import annotations

import threading
from collections import namedtuple
from typing import Any

import pytest

import rac
from rac.recovery import rebuild
from rac.testing import TravelWorld, VirtualClock

FLIGHT = {"passenger": "ann", "origin": "SFO", "dest": "CDG"}
Row = namedtuple("Row", ["booking_id", "who", "place"])


class Obj:
    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)


def flight_lookup(**kw: Any) -> rac.Compensation:
    return rac.Compensation("cancel_flight", args={"booking_id": "result.booking_id"},
                            lookup=rac.Lookup("find_flights", args={"who": "args.passenger"},
                                              items="result.bookings",
                                              match={"place": "args.dest"}, **kw))


def lookup_engine(make_engine: Any, world: TravelWorld, find: Any, **kw: Any) -> rac.RAC:
    kw.setdefault("compensations", {"book_flight": flight_lookup(), "book_hotel": "cancel_hotel",
                                    "book_car": "cancel_car"})
    tools = kw.pop("tools", [*world.tools(), find])
    return make_engine(tools=tools, read_only=["find_flights", "search_flights", "get_weather"],
                       **kw)


@pytest.mark.parametrize("shape", ["namedtuple", "object", "bare id", "row without the field"])
def test_rows_rac_cannot_read_are_never_taken_as_absent(make_engine: Any, world: TravelWorld,
                                                        shape: str) -> None:
    """The booking commits and its answer is lost; the lookup's rows are namedtuples, plain
    objects, bare ids, or rows without the matched field. Read as *absent*, the unsafe
    booking was made again (issue 25)."""
    def find_flights(who: str) -> dict[str, Any]:
        """Live flights of a passenger (read-only)."""
        rows = world.find_bookings(who, "flight")["bookings"]
        if shape == "namedtuple":
            return {"bookings": [Row(r["booking_id"], r["who"], r["place"]) for r in rows]}
        if shape == "object":
            return {"bookings": [Obj(booking_id=r["booking_id"], who=r["who"],
                                     place=r["place"]) for r in rows]}
        if shape == "bare id":
            return {"bookings": [r["booking_id"] for r in rows]}
        return {"bookings": [{"booking_id": r["booking_id"]} for r in rows]}

    world.fail("book_flight", "timeout", times=1, phase="after")
    engine = lookup_engine(make_engine, world, find_flights)
    with engine.run() as run:
        if shape in ("namedtuple", "object"):  # readable: found, the run goes on
            flight = run.call("book_flight", **FLIGHT)
            assert flight["booking_id"] == world.live("flight")[0]["booking_id"]
        else:
            with pytest.raises(rac.ToolCallFailed) as failed:
                run.call("book_flight", **FLIGHT)
            report = failed.value.report
            assert [(u.tool, u.happened) for u in report.in_doubt] == [("book_flight", "maybe")]
            assert "cannot tell" in report.in_doubt[0].error
    assert world.calls["book_flight"] == 1 and len(world.live("flight")) == 1


def _stamped(world: TravelWorld, clock: VirtualClock) -> tuple[Any, Any]:
    """A booking tool that stamps when each booking was made, and a lookup that shows it."""
    made: dict[str, float] = {}

    def book_flight(passenger: str, origin: str, dest: str) -> dict[str, Any]:
        """Book a seat (stamped with its creation time)."""
        booked = world.book_flight(passenger, origin, dest)
        made[booked["booking_id"]] = clock.now()
        return booked

    def find_flights(who: str) -> dict[str, Any]:
        """Live flights of a passenger, with when each was made (read-only)."""
        rows = world.find_bookings(who, "flight")["bookings"]
        return {"bookings": [{**r, "created_at": made.get(r["booking_id"], 0.0)} for r in rows]}

    return book_flight, find_flights


@pytest.mark.parametrize("how", ["snapshot", "created_after"])
def test_a_booking_the_passenger_held_before_the_run_is_never_taken_for_the_call(
        make_engine: Any, world: TravelWorld, clock: VirtualClock, how: str) -> None:
    """The passenger already holds a flight to CDG; this run's booking times out before it
    commits. Matched on the passenger and the destination, the lookup found the old
    booking, took it for the call's, and the rollback cancelled it (issue 25)."""
    held = world.book_flight(**FLIGHT)["booking_id"]  # before the run
    world.fail("book_flight", "timeout", times=1, phase="before")
    book_flight, find_flights = _stamped(world, clock)
    tools = [t for t in world.tools() if t.__name__ != "book_flight"]
    decl = flight_lookup(created_after="created_at") if how == "created_after" \
        else flight_lookup()
    engine = lookup_engine(make_engine, world, find_flights,
                           tools=[*tools, book_flight, find_flights],
                           compensations={"book_flight": decl})
    with engine.run() as run:
        mine = run.call("book_flight", **FLIGHT)["booking_id"]  # retried: it did not happen
        report = run.rollback("the trip was abandoned")
    assert mine != held
    assert [b["booking_id"] for b in world.live("flight")] == [held]  # the passenger's own
    assert report.clean and [u.ref for u in report.compensated] == [mine]
    (rec,) = [r for r in run.records() if r.tool == "book_flight"]
    assert rec.attempts == 2


def test_a_lookup_by_the_calls_key_needs_no_snapshot(make_engine: Any) -> None:
    """Matched on the key the call was sent with, nothing else can be taken for it; and a
    lookup by key of a call that was never sent with one cannot tell."""
    rows: list[dict[str, Any]] = [{"booking_id": "BK-0007", "who": "ann", "key": "old-key"}]
    asked: list[str] = []

    def book(who: str, idempotency_key: str) -> dict[str, Any]:
        """Book; the answer is always lost, before anything is written."""
        raise TimeoutError("read timed out")

    def cancel(booking_id: str) -> dict[str, Any]:
        return {"cancelled": booking_id}

    def find(who: str) -> dict[str, Any]:
        """Bookings of who (read-only)."""
        asked.append(who)
        return {"rows": [r for r in rows if r["who"] == who]}

    lookup = rac.Lookup("find", args={"who": "args.who"}, items="result.rows",
                        match={"key": "key"})
    engine = make_engine(tools=[book, cancel, find], read_only=["find"],
                         retry=rac.RetryPolicy(max_attempts=1),
                         compensations={"book": rac.Compensation("cancel", lookup=lookup)})
    with engine.run() as run, pytest.raises(rac.ToolCallFailed) as failed:
        run.call("book", who="ann")
    assert asked == ["ann"]  # no snapshot before the call: one question, after the failure
    (rec,) = [r for r in run.records() if r.tool == "book"]
    assert rec.status is rac.RecordStatus.FAILED  # absent: its key is on no booking
    assert failed.value.report.clean and rows[0]["key"] == "old-key"


class Bookings:
    """A booking service whose answers put the customer's id first and whose listing puts
    the booking's id first (what made RAC compare the wrong ids)."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.hooks: list[Any] = []

    def book(self, passenger: str, dest: str) -> dict[str, Any]:
        """Book a seat for passenger to dest."""
        hook = self.hooks.pop(0) if self.hooks else None
        if hook is not None:
            hook("before")
        with self.lock:
            booking = f"BK-{1001 + len(self.rows):04d}"
            self.rows.append({"booking_id": booking, "customer_id": "C-1001", "place": dest,
                              "who": passenger, "live": True})
        if hook is not None:
            hook("after")
        return {"customer_id": "C-1001", "booking_id": booking, "place": dest,
                "itinerary": "x" * 400}

    def cancel(self, booking_id: str) -> dict[str, Any]:
        """Cancel a booking."""
        for r in self.rows:
            if r["booking_id"] == booking_id:
                r["live"] = False
        return {"cancelled": booking_id}

    def find(self, passenger: str) -> dict[str, Any]:
        """The passenger's live bookings (read-only)."""
        return {"rows": [{"booking_id": r["booking_id"], "customer_id": r["customer_id"],
                          "place": r["place"]} for r in self.rows
                         if r["who"] == passenger and r["live"]]}

    def engine(self, make_engine: Any, **kw: Any) -> rac.RAC:
        lookup = rac.Lookup("find", args={"passenger": "args.passenger"}, items="result.rows",
                            match={"place": "args.dest"})
        return make_engine(tools=[self.book, self.cancel, self.find], read_only=["find"],
                           compensations={"book": rac.Compensation(
                               "cancel", args={"booking_id": "result.booking_id"},
                               lookup=lookup)}, **kw)


def test_another_calls_effect_is_compared_on_every_id(make_engine: Any) -> None:
    """Two bookings for one passenger run side by side; the second's answer is lost before it
    booked anything, once the first has returned. Compared on the first id-like field of each
    (the customer's id in the answer, the booking's in the listing), the first call's booking
    was credited to the second, which was never made again (issue 25)."""
    svc = Bookings()
    engine = svc.engine(make_engine)
    go, first_done = threading.Event(), threading.Event()

    def first(phase: str) -> None:
        if phase == "before":
            assert go.wait(60), "the second call never started"

    def second(phase: str) -> None:
        go.set()
        assert first_done.wait(60), "the first call never returned"
        raise TimeoutError("read timed out")  # before anything was written

    svc.hooks = [first, second]
    results: dict[str, Any] = {}
    with engine.run() as run:
        def call_first() -> None:
            results["first"] = run.call("book", passenger="ann", dest="CDG")
            first_done.set()

        thread = threading.Thread(target=call_first)
        thread.start()
        _first_takes_its_hook(svc, first, thread)
        results["second"] = run.call("book", passenger="ann", dest="CDG")
        thread.join(60)
    assert results["first"]["booking_id"] != results["second"]["booking_id"]
    assert len([r for r in svc.rows if r["live"]]) == 2
    by_seq = {r.seq: r for r in run.records()}
    assert len({r.result["booking_id"] for r in by_seq.values()}) == 2


def _first_takes_its_hook(svc: Bookings, first: Any, thread: threading.Thread) -> None:
    """Wait until the first call (in ``thread``) is inside the tool, past its snapshot."""
    while svc.hooks and svc.hooks[0] is first and thread.is_alive():
        threading.Event().wait(0.01)


def test_a_sibling_still_in_flight_is_never_credited(make_engine: Any) -> None:
    """Two bookings of one model turn: the first books while the second's call is out, and is
    still running when the second's answer is lost (before it booked anything). The lookup
    shows the first's booking, which was not there before the second began; it was credited
    to the second (issue 25). It may be the sibling's: the second is in doubt."""
    svc = Bookings()
    engine = svc.engine(make_engine)
    go, committed, release = threading.Event(), threading.Event(), threading.Event()

    def first(phase: str) -> None:
        if phase == "before":
            assert go.wait(60), "the second call never started"
        else:
            committed.set()
            assert release.wait(60), "the test never released the first call"

    def second(phase: str) -> None:
        go.set()
        assert committed.wait(60), "the first call never booked"
        raise TimeoutError("read timed out")

    svc.hooks = [first, second]
    outcomes: dict[str, rac.CallOutcome] = {}
    with engine.run() as run:
        def call_first() -> None:
            outcomes["first"] = run.execute("book", {"passenger": "ann", "dest": "CDG"},
                                            lambda n, a: run.tool(n).invoke(a), batch="turn")

        thread = threading.Thread(target=call_first)
        thread.start()
        _first_takes_its_hook(svc, first, thread)
        outcomes["second"] = run.execute("book", {"passenger": "ann", "dest": "CDG"},
                                         lambda n, a: run.tool(n).invoke(a), batch="turn")
        release.set()
        thread.join(60)
    second_report = outcomes["second"].report
    assert second_report is not None and not second_report.clean
    (second_rec,) = [r for r in run.records() if r.seq == outcomes["second"].seq]
    assert second_rec.result is None  # never given the sibling's booking
    assert "may be the effect of book" in " ".join(u.error or "" for u in second_report.in_doubt)
    assert outcomes["first"].undone  # the sibling returned after the rollback: undone
    assert [r for r in svc.rows if r["live"]] == []


def test_a_cut_short_result_of_another_call_cannot_be_told_apart(make_engine: Any) -> None:
    """A process died with a booking's intent written (nothing booked); a later booking of the
    same passenger returned an answer too big for the log, which keeps it cut short. Settled
    in a fresh process, the lookup shows the later booking: RAC cannot tell it from the other
    call's, so it does not credit it (issue 25: it did)."""
    svc = Bookings()
    engine = svc.engine(make_engine, max_value_chars=300)

    class Crash(BaseException):
        pass

    def crash(phase: str) -> None:
        raise Crash()

    svc.hooks = [crash]
    run = engine.run()
    with pytest.raises(Crash):
        run.call("book", passenger="ann", dest="CDG")
    later = run.call("book", passenger="ann", dest="CDG")
    # a fresh process reads the log
    (info,) = engine.store.list_runs()
    again = rebuild(engine, info, engine.store.get_records(info.run_id))
    (stored_later,) = [r for r in again.records() if r.seq == 2]
    assert stored_later.result.get("__truncated__") is True
    verdict = again.settle(1)
    assert verdict.verdict == "unknown" and "#2" in verdict.reason
    assert [r.status for r in again.records()] == [rac.RecordStatus.PENDING,
                                                   rac.RecordStatus.COMPLETED]
    assert later["booking_id"] == "BK-1001"
