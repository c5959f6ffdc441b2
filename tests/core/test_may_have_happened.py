"""Calls that may have happened (issue 13): effect classes, ambiguous errors, reconciliation,
before-images, irreversible tools, and the parallel calls of one model turn. Every test runs
against a world that does not deduplicate by key and checks the world itself: no duplicate
effect ever, and nothing live that the report does not name."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

import rac
from rac.testing import TravelWorld

FLIGHT = {"passenger": "ann", "origin": "SFO", "dest": "CDG"}
def flights(world: TravelWorld) -> list[dict[str, Any]]:
    return world.live("flight")


def trip_tools(world: TravelWorld) -> list[Any]:
    def find_flights(who: str) -> dict[str, Any]:
        """Live flights of a passenger (read-only)."""
        return world.find_bookings(who, "flight")
    return [*world.tools(), find_flights, world.get_booking, world.change_detail]


LOOKUP_COMPENSATIONS = {
    "book_flight": rac.Compensation("cancel_flight", args={"booking_id": "result.booking_id"},
                                    lookup=rac.Lookup("find_flights",
                                                      args={"who": "args.passenger"},
                                                      items="result.bookings",
                                                      match={"place": "args.dest"})),
    "book_hotel": "cancel_hotel", "book_car": "cancel_car"}


def test_a_timeout_after_commit_is_never_retried_blindly_and_is_named(
        make_engine: Any, world: TravelWorld) -> None:
    # The reproduction of issue 13: the booking commits, then the call times out.
    world.fail("book_flight", "timeout", times=1, phase="after")
    world.fail("book_car", "permanent", message="no cars")
    engine = make_engine()
    with engine.run() as run:
        with pytest.raises(rac.ToolCallFailed) as failed:
            run.call("book_flight", **FLIGHT)
    assert len(flights(world)) == 1  # booked once: no blind retry
    report = failed.value.report
    assert [u.tool for u in report.in_doubt] == ["book_flight"]
    assert report.in_doubt[0].happened == "maybe"
    assert not report.clean and report.status is rac.RunStatus.NEEDS_ATTENTION
    text = str(failed.value)
    assert "MAY HAVE HAPPENED" in text and "world is back" not in text
    (rec,) = [r for r in engine.store.get_records(run.run_id) if r.tool == "book_flight"]
    assert rec.effect == "unsafe" and rec.status is rac.RecordStatus.COMPENSATION_FAILED


def test_a_lookup_finds_the_effect_and_the_run_goes_on(make_engine: Any,
                                                       world: TravelWorld) -> None:
    world.fail("book_flight", "timeout", times=1, phase="after")
    world.fail("book_car", "permanent", message="no cars")
    engine = make_engine(compensations=LOOKUP_COMPENSATIONS, tools=trip_tools(world),
                         read_only=["find_flights", "get_booking", "search_flights",
                                    "get_weather"])
    with engine.run() as run:
        flight = run.call("book_flight", **FLIGHT)  # reconciled: the found booking
        run.call("book_hotel", guest="ann", city="Paris", nights=2)
        with pytest.raises(rac.ToolCallFailed) as failed:
            run.call("book_car", driver="ann", city="Paris")
    assert flight["booking_id"].startswith("FL-")
    assert world.live() == []
    assert [u.tool for u in failed.value.report.compensated] == ["book_hotel", "book_flight"]
    assert failed.value.report.clean and "world is back" in str(failed.value)
    assert [e for _t, _b, e in world.ledger()].count("book") == 2  # one flight, one hotel


def test_a_lookup_that_finds_nothing_lets_the_call_be_retried(make_engine: Any,
                                                              world: TravelWorld) -> None:
    world.fail("book_flight", "reset", times=1, phase="before")  # lost before it committed
    engine = make_engine(compensations=LOOKUP_COMPENSATIONS, tools=trip_tools(world),
                         read_only=["find_flights", "get_booking"])
    with engine.run() as run:
        run.call("book_flight", **FLIGHT)
    assert len(flights(world)) == 1
    (rec,) = [r for r in engine.store.get_records(run.run_id) if r.tool == "book_flight"]
    assert rec.status is rac.RecordStatus.COMPLETED and rec.attempts == 2


def test_every_attempt_timing_out_after_commit_is_named_not_failed(
        make_engine: Any, world: TravelWorld) -> None:
    world.fail("book_flight", "timeout", phase="after")  # every attempt commits, then times out
    engine = make_engine(effects={"book_flight": "idempotent"})
    with engine.run() as run, pytest.raises(rac.ToolCallFailed) as failed:
        run.call("book_flight", **FLIGHT)
    # idempotent by declaration: retried (the world is not, so each attempt books again)
    assert len(flights(world)) == 3
    assert [u.tool for u in failed.value.report.in_doubt] == ["book_flight"]
    assert run.status is rac.RunStatus.NEEDS_ATTENTION


def test_a_keyed_tool_gets_the_step_key_and_is_retried(make_engine: Any) -> None:
    charges: dict[str, str] = {}
    calls: list[str] = []

    def charge(customer: str, amount: float, idempotency_key: str) -> dict[str, Any]:
        """Charge a card; the key deduplicates (like Stripe's)."""
        calls.append(idempotency_key)
        charges.setdefault(idempotency_key, f"CH-{len(charges) + 1}")
        if len(calls) == 1:
            raise TimeoutError("read timed out")
        return {"charge_id": charges[idempotency_key]}

    def refund(charge_id: str) -> dict[str, Any]:
        return {"refunded": charge_id}

    engine = make_engine(tools=[charge, refund], compensations={"charge": "refund"},
                         read_only=[])
    with engine.run() as run:
        assert run.call("charge", customer="a", amount=5.0) == {"charge_id": "CH-1"}
    assert len(set(calls)) == 1 and len(calls) == 2 and charges == {calls[0]: "CH-1"}
    assert run.records()[0].effect == "keyed"


def test_a_compensator_that_times_out_is_retried_where_a_repeat_is_safe(
        make_engine: Any, world: TravelWorld) -> None:
    # cancel_flight is declared idempotent (a second cancel changes nothing): retried
    world.fail("cancel_flight", "timeout", times=1, phase="after")
    engine = make_engine(effects={"cancel_flight": "idempotent"})
    with engine.run() as run:
        run.call("book_flight", **FLIGHT)
        report = run.rollback()
    assert report.clean and world.live() == []
    assert world.calls["cancel_flight"] == 2


def test_an_unsafe_compensator_that_times_out_is_not_retried_blindly(
        make_engine: Any, world: TravelWorld) -> None:
    # undeclared, cancel_flight is unsafe: its timeout may have cancelled (it did), and a
    # repeat is not known to be harmless; the booking is named, never reported undone
    world.fail("cancel_flight", "timeout", times=1, phase="after")
    engine = make_engine()
    with engine.run() as run:
        run.call("book_flight", **FLIGHT)
        report = run.rollback()
    assert world.calls["cancel_flight"] == 1
    assert not report.clean and run.status is rac.RunStatus.NEEDS_ATTENTION
    assert [u.tool for u in report.compensation_failed] == ["book_flight"]
    assert "world is back" not in engine.render(report)


@pytest.mark.parametrize("declared", [True, False])
def test_a_compensator_failing_with_an_unknown_error_is_dead_lettered(
        make_engine: Any, world: TravelWorld, declared: bool) -> None:
    world.fail("cancel_flight", "value", message="backend said no")
    engine = make_engine(effects={"cancel_flight": "idempotent"} if declared else {})
    with engine.run() as run:
        run.call("book_flight", **FLIGHT)
        report = run.rollback()
    # compensation_retry's 3 attempts where a repeat is safe; else one (it may have acted)
    assert world.calls["cancel_flight"] == (3 if declared else 1)
    assert [u.tool for u in report.compensation_failed] == ["book_flight"]
    assert not report.clean and "world is back" not in engine.render(report)


def test_a_before_image_lets_an_update_undo_itself(make_engine: Any,
                                                   world: TravelWorld) -> None:
    engine = make_engine(tools=trip_tools(world), read_only=["find_flights", "get_booking"],
                         compensations={
                             "book_flight": "cancel_flight",
                             "change_detail": rac.Compensation(
                                 "change_detail",
                                 args={"booking_id": "args.booking_id",
                                       "detail": "before.detail"},
                                 before=rac.BeforeImage("get_booking",
                                                        args={"booking_id": "args.booking_id"}))})
    with engine.run() as run:
        booking = run.call("book_flight", **FLIGHT)
        run.call("change_detail", booking_id=booking["booking_id"], detail="aisle")
        assert world.detail_of(booking["booking_id"]) == "aisle"
        with run.scope():
            run.call("change_detail", booking_id=booking["booking_id"], detail="window")
            run.rollback()
        assert world.detail_of(booking["booking_id"]) == "aisle"  # restored
    rec = engine.store.get_records(run.run_id)[2]
    assert rec.undo is not None and rec.undo["before"]["detail"] == "aisle"


def test_an_update_whose_before_image_cannot_be_read_is_refused(make_engine: Any,
                                                                world: TravelWorld) -> None:
    engine = make_engine(tools=trip_tools(world), read_only=["find_flights", "get_booking"],
                         compensations={"change_detail": rac.Compensation(
                             "change_detail", args={"booking_id": "args.booking_id",
                                                    "detail": "before.detail"},
                             before=rac.BeforeImage("get_booking",
                                                    args={"booking_id": "args.booking_id"}))})
    with engine.run() as run, pytest.raises(rac.CallRefused, match="could not read first"):
        run.call("change_detail", booking_id="FL-999", detail="x")
    assert world.calls.get("change_detail", 0) == 0


def test_a_self_compensation_without_a_before_image_is_refused_at_declaration() -> None:
    with pytest.raises(rac.ConfigurationError, match="before=rac.BeforeImage"):
        rac.RAC(compensations={"change_detail": "change_detail"}, store="memory://")


@pytest.mark.parametrize("policy", ["refuse", "approve"])
def test_an_irreversible_tool_is_refused_or_asked_for(make_engine: Any, world: TravelWorld,
                                                      policy: str) -> None:
    sent: list[str] = []

    def send_voucher(who: str) -> dict[str, Any]:
        sent.append(who)
        return {"sent": who}

    engine = make_engine(tools=[*world.tools(), send_voucher],
                         irreversible={"send_voucher": policy})
    with engine.run() as run, pytest.raises(rac.CallRefused) as refused:
        run.call("send_voucher", who="ann")
    assert sent == []
    assert ("waits for approval" if policy == "approve" else "irreversible") \
        in str(refused.value)


def test_an_approved_irreversible_tool_runs_and_is_named_after_a_rollback(
        make_engine: Any, world: TravelWorld) -> None:
    asked: list[tuple[str, dict[str, Any]]] = []

    class Operator:
        @rac.hookimpl
        def rac_approve_action(self, tool: str, args: dict[str, Any]) -> bool:
            asked.append((tool, args))
            return True

    def send_voucher(who: str) -> dict[str, Any]:
        return {"voucher_id": f"V-{who}-1"}

    world.fail("book_car", "permanent")
    engine = make_engine(tools=[*world.tools(), send_voucher], plugins=[Operator()],
                         irreversible={"send_voucher": "approve"})
    with engine.run() as run:
        run.call("book_flight", **FLIGHT)
        run.call("send_voucher", who="ann")
        with pytest.raises(rac.ToolCallFailed) as failed:
            run.call("book_car", driver="ann", city="Paris")
    assert asked == [("send_voucher", {"who": "ann"})]
    report = failed.value.report
    assert [u.tool for u in report.not_undoable] == ["send_voucher"]
    assert not report.clean and report.status is rac.RunStatus.NEEDS_ATTENTION


def test_the_async_path_reconciles_too(make_engine: Any, world: TravelWorld) -> None:
    world.fail("book_flight", "timeout", times=1, phase="after")
    engine = make_engine(compensations=LOOKUP_COMPENSATIONS, tools=trip_tools(world),
                         read_only=["find_flights", "get_booking"])

    async def main() -> rac.Run:
        async with engine.run() as run:
            await run.acall("book_flight", **FLIGHT)
            await run.arollback()
        return run

    run = asyncio.run(main())
    assert world.live() == [] and [e for *_x, e in world.ledger()].count("book") == 1
    assert run.status is rac.RunStatus.COMPENSATED


def test_a_sibling_of_a_failed_model_turn_that_has_not_started_is_refused(
        make_engine: Any, world: TravelWorld) -> None:
    world.fail("book_car", "permanent", message="no cars")
    engine = make_engine()
    turn = "model-message-1"
    with engine.run() as run:
        flight = run.execute("book_flight", FLIGHT, lambda n, a: run.tool(n).invoke(a),
                             batch=turn)
        car = run.execute("book_car", {"driver": "ann", "city": "Paris"},
                          lambda n, a: run.tool(n).invoke(a), batch=turn)
        hotel = run.execute("book_hotel", {"guest": "ann", "city": "Paris", "nights": 1},
                            lambda n, a: run.tool(n).invoke(a), batch=turn)
        later = run.execute("book_hotel", {"guest": "ann", "city": "Paris", "nights": 1},
                            lambda n, a: run.tool(n).invoke(a), batch="model-message-2")
    assert flight.ok and not car.ok and hotel.refused and later.ok
    assert "same model turn" in (hotel.message or "")
    assert [b["kind"] for b in world.live()] == ["hotel"]  # only the replanned one
    assert world.calls.get("book_hotel") == 1


def test_a_sibling_still_running_when_the_turn_fails_is_undone_when_it_returns(
        make_engine: Any, world: TravelWorld) -> None:
    world.fail("book_car", "permanent")
    started, release = threading.Event(), threading.Event()

    def slow(args: dict[str, Any]) -> None:
        started.set()
        release.wait(60)

    world.on_call("book_hotel", slow)
    engine = make_engine()
    outcomes: dict[str, rac.CallOutcome] = {}
    with engine.run() as run:
        def sibling() -> None:
            outcomes["hotel"] = run.execute(
                "book_hotel", {"guest": "a", "city": "P", "nights": 1},
                lambda n, a: run.tool(n).invoke(a), batch="t")
        t = threading.Thread(target=sibling)
        t.start()
        started.wait(60)
        outcomes["car"] = run.execute("book_car", {"driver": "a", "city": "P"},
                                      lambda n, a: run.tool(n).invoke(a), batch="t")
        assert outcomes["car"].report is not None
        assert not outcomes["car"].report.clean  # the hotel is still running: not an all-clear
        release.set()
        t.join()
    assert outcomes["hotel"].undone and world.live() == []
    assert run.status is rac.RunStatus.COMPENSATED


def test_a_result_flagged_ambiguous_is_a_call_that_may_have_happened(make_engine: Any,
                                                                     world: TravelWorld) -> None:
    class ResponseCheck:
        """The application's check: a booking reply must carry its id."""

        @rac.hookimpl
        def rac_detect_result_error(self, tool: str, result: Any) -> BaseException | None:
            if tool == "book_flight" and not result.get("booking_id"):
                return rac.ResultError("reply without a booking id", result, ambiguous=True)
            return None

    def garbled(passenger: str, origin: str, dest: str) -> dict[str, Any]:
        world.book_flight(passenger, origin, dest)  # it happened
        return {"status": "confirmed"}  # but the id was lost on the way

    tools = [t for t in world.tools() if t.__name__ != "book_flight"]
    engine = make_engine(tools=[*tools, rac.Tool.from_function(garbled, name="book_flight")],
                         plugins=[ResponseCheck()])
    with engine.run() as run, pytest.raises(rac.ToolCallFailed) as failed:
        run.call("book_flight", **FLIGHT)
    assert len(flights(world)) == 1 and world.calls["book_flight"] == 1  # not repeated
    assert [u.tool for u in failed.value.report.in_doubt] == ["book_flight"]
    assert not failed.value.report.clean


def test_a_call_settled_at_rollback_keeps_only_what_its_undo_reads(make_engine: Any,
                                                                    world: TravelWorld) -> None:
    """A booking that timed out after committing, whose lookup could not tell at first, is
    in doubt; the rollback asks the lookup again, finds it and cancels it. The found result's
    exact copy is kept only for the fields the undo reads: a card number the lookup returned
    is in neither the log's copy nor the undo data."""
    card = "4111 1111 1111 1111"
    asked = []

    def find_flights(who: str) -> dict[str, Any]:
        """Live flights of a passenger (read-only); the question right after the booking's
        timeout times out (the first is the snapshot taken before the call)."""
        asked.append(who)
        if len(asked) == 2:
            raise TimeoutError("lookup timed out")
        found = world.find_bookings(who, "flight")
        return {"bookings": [{**b, "card": card} for b in found["bookings"]]}

    world.fail("book_flight", "timeout", times=1, phase="after")
    engine = make_engine(compensations=LOOKUP_COMPENSATIONS,
                         tools=[*world.tools(), find_flights],
                         read_only=["find_flights", "search_flights", "get_weather"])
    with engine.run() as run, pytest.raises(rac.ToolCallFailed) as failed:
        run.call("book_flight", **FLIGHT)
    assert world.live() == [] and len(asked) == 3
    report = failed.value.report
    assert [u.tool for u in report.compensated] == ["book_flight"] and report.clean
    (rec,) = [r for r in engine.store.get_records(run.run_id) if r.tool == "book_flight"]
    assert rec.status is rac.RecordStatus.COMPENSATED
    assert rec.note == "reconciled: find_flights found the effect"
    assert card not in repr(rec.result) and card not in repr(rec.undo)


class _Crash(BaseException):
    """The process dying in the middle of a call (not an error RAC handles)."""


def crashing_booking(world: TravelWorld, booked: bool) -> list[Any]:
    """The trip's tools, with a ``book_flight`` during which the process dies: after the
    booking committed (``booked``), or before anything was written."""
    def book_flight(passenger: str, origin: str, dest: str) -> dict[str, Any]:
        """Book a seat; the process dies during the call."""
        if booked:
            world.book_flight(passenger, origin, dest)
        raise _Crash()

    return [*[t for t in trip_tools(world) if getattr(t, "__name__", "") != "book_flight"],
            book_flight]


@pytest.mark.parametrize("booked", [True, False])
def test_a_call_a_crash_interrupted_is_settled_through_its_lookup(
        make_engine: Any, world: TravelWorld, booked: bool) -> None:
    """``Run.settle`` (for adapters whose framework repeats an interrupted call): found, the
    record is completed with the found booking and a later failure cancels it; absent, it is
    failed and nothing is left to undo."""

    engine = make_engine(compensations=LOOKUP_COMPENSATIONS,
                         tools=crashing_booking(world, booked),
                         read_only=["find_flights", "get_booking", "search_flights",
                                    "get_weather"])
    run = engine.run()
    with pytest.raises(_Crash):
        run.call("book_flight", **FLIGHT)
    (rec,) = run.records()
    assert rec.status is rac.RecordStatus.PENDING
    verdict = run.settle(rec.seq, why="reconciled on resume")
    (rec,) = run.records()
    if booked:
        assert verdict.verdict == "found" and verdict.result["booking_id"].startswith("FL-")
        assert rec.status is rac.RecordStatus.COMPLETED
        assert rec.note == "reconciled on resume: find_flights found the effect"
        report = run.rollback(reason="the trip was abandoned")
        assert [u.tool for u in report.compensated] == ["book_flight"] and report.clean
    else:
        assert verdict.verdict == "absent" and rec.status is rac.RecordStatus.FAILED
    assert world.live() == []
    with pytest.raises(ValueError, match=r"only an action with an intent and no known outcome"):
        run.settle(rec.seq)


def test_settling_asks_for_a_lookup(make_engine: Any, world: TravelWorld) -> None:
    engine = make_engine(tools=world.tools())
    run = engine.run()

    def crash(args: dict[str, Any]) -> None:
        raise _Crash()

    world.on_call("book_hotel", crash)
    with pytest.raises(_Crash):
        run.call("book_hotel", guest="ann", city="Paris", nights=2)
    with pytest.raises(ValueError, match="book_hotel declares no lookup"):
        run.settle(1)
    with pytest.raises(ValueError, match="no such record"):
        run.settle(7)


def test_settling_on_the_async_path(make_engine: Any, world: TravelWorld) -> None:
    engine = make_engine(compensations=LOOKUP_COMPENSATIONS,
                         tools=crashing_booking(world, booked=True),
                         read_only=["find_flights", "get_booking", "search_flights",
                                    "get_weather"])
    run = engine.run()
    with pytest.raises(_Crash):  # the booking was made, then the process died
        run.call("book_flight", **FLIGHT)
    verdict = asyncio.run(run.asettle(1))
    assert verdict.verdict == "found"
    assert [r.status for r in run.records()] == [rac.RecordStatus.COMPLETED]


def lookup_down(make_engine: Any, world: TravelWorld) -> rac.RAC:
    """An engine whose flight bookings commit and then time out, and whose lookup of them
    (``find_flights``) fails: a booking can be neither settled nor undone (no booking id)."""
    def find_flights(who: str) -> dict[str, Any]:
        """Live flights of a passenger (read-only); the service is down."""
        raise ConnectionError("lookup service returned 503")

    world.fail("book_flight", "timeout", phase="after")
    return make_engine(compensations=LOOKUP_COMPENSATIONS, tools=[*world.tools(), find_flights],
                       read_only=["find_flights", "search_flights", "get_weather"])


def test_the_report_says_why_a_call_may_have_happened_when_its_lookup_failed(
        make_engine: Any, world: TravelWorld) -> None:
    """The in-doubt line names both reasons: why it could not be undone (no booking id to
    cancel) and why it may have happened (the lookup itself failed)."""
    engine = lookup_down(make_engine, world)
    with engine.run() as run, pytest.raises(rac.ToolCallFailed) as failed:
        run.call("book_flight", **FLIGHT)
    text = str(failed.value)
    assert "MAY HAVE HAPPENED" in text and "world is back" not in text
    assert "cannot map argument 'booking_id'" in text
    assert "the lookup find_flights raised ConnectionError: lookup service returned 503" in text
    assert len(world.live("flight")) == 1  # live, and named as possibly live
    assert failed.value.report.status is rac.RunStatus.NEEDS_ATTENTION


def test_resume_still_says_a_call_may_have_happened_when_it_cannot_undo_it(
        make_engine: Any, world: TravelWorld) -> None:
    """A call in doubt whose undo failed stays "may have happened" through `rac resume`: a
    retried undo that fails again must not turn it into a call that surely happened."""
    engine = lookup_down(make_engine, world)
    with engine.run() as run, pytest.raises(rac.ToolCallFailed):
        run.call("book_flight", **FLIGHT)

    done = engine.resume(run.run_id)

    assert done.outcome == "needs_attention" and done.report is not None
    assert [(u.tool, u.happened) for u in done.report.in_doubt] == [("book_flight", "maybe")]
    assert done.report.compensation_failed == []
    assert "MAY HAVE HAPPENED" in done.report.render()
    assert len(world.live("flight")) == 1


def test_the_doubt_is_read_from_the_end_of_a_dead_letters_error_old_wording_included(
        ) -> None:
    from rac.lifecycle import uncertain
    from rac.models import Record, RecordKind, RecordStatus

    def dead_letter(error: str) -> Record:
        return Record("run-1", 1, "book_flight", RecordKind.ACTION,
                      status=RecordStatus.COMPENSATION_FAILED, error=error)

    assert uncertain(dead_letter("cancel_flight failed after 3 attempt(s): 503 "
                                 "(the call may or may not have taken effect)"))
    assert uncertain(dead_letter("cannot map argument 'booking_id' (the call is in doubt: it "
                                 "may or may not have taken effect)"))  # logs of 0.1 betas
    # A compensator's own error that quotes the words does not make a surely-made call uncertain.
    assert not uncertain(dead_letter("cancel_flight failed: upstream said '(the call may or may "
                                     "not have taken effect)' about another call"))


def test_a_call_in_doubt_whose_compensator_fails_is_still_a_call_that_may_have_happened(
        make_engine: Any) -> None:
    held: list[str] = []

    def hold_seat(name: str) -> dict[str, Any]:
        """Hold a seat; the answer is lost after the hold is made."""
        held.append(name)
        raise TimeoutError("no answer")

    def release_seat(name: str) -> dict[str, Any]:
        """Release a held seat; the service refuses."""
        raise rac.PermanentError("release service is closed")

    engine = make_engine(tools=[hold_seat, release_seat], compensations={
        "hold_seat": rac.Compensation("release_seat", args={"name": "args.name"})})
    with engine.run() as run, pytest.raises(rac.ToolCallFailed) as failed:
        run.call("hold_seat", name="ann")
    report = failed.value.report
    assert [(u.tool, u.happened) for u in report.in_doubt] == [("hold_seat", "maybe")]
    assert report.compensation_failed == [] and held == ["ann"]
    assert "release service is closed" in str(failed.value)
    assert "MAY HAVE HAPPENED" in str(failed.value) and "world is back" not in str(failed.value)


class _AskAHuman(Exception):  # noqa: N818 - a framework's control flow, as LangGraph's interrupt
    """How a framework pauses for a person."""


def test_an_approver_may_pause_the_call_with_the_frameworks_control_flow(
        make_engine: Any, world: TravelWorld) -> None:
    """A ``rac_approve_action`` plugin that raises a declared pass-through (a framework's
    human-in-the-loop pause) pauses the call: the exception leaves ``run.call`` untouched, the
    tool does not run and nothing is written; a plugin's other failures are no answer."""
    sent: list[str] = []

    def send_voucher(who: str) -> dict[str, Any]:
        sent.append(who)
        return {"sent": who}

    class Pause:
        @rac.hookimpl
        def rac_approve_action(self, tool: str, args: dict[str, Any]) -> bool | None:
            raise _AskAHuman(f"approve {tool}({args['who']})?")

    engine = make_engine(tools=[*world.tools(), send_voucher],
                         irreversible={"send_voucher": "approve"}, plugins=[Pause()])
    engine.add_passthrough(_AskAHuman)
    with engine.run() as run:
        with pytest.raises(_AskAHuman, match=r"approve send_voucher\(ann\)"):
            run.call("send_voucher", who="ann")
        assert sent == [] and run.records() == []
    other = make_engine(tools=[*world.tools(), send_voucher],
                        irreversible={"send_voucher": "approve"}, plugins=[Pause()])
    with other.run() as run, pytest.raises(rac.CallRefused, match="waits for approval"):
        run.call("send_voucher", who="ann")  # not declared: a failing plugin, no answer
    assert sent == []
