"""What LangChain's tool errors mean to RAC: a ``ToolException`` raised from a timeout (the
builtin one, httpx's) may have taken effect and is never retried blindly; one raised from a
refused connection is retried; a bare one is a permanent failure. Through real ``create_agent``
agents, checked against the world."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from langchain.agents import create_agent
from langchain_core.tools import ToolException, tool

import rac
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld
from rac_langgraph import RACMiddleware
from tests.adapters.langgraph.support import (
    HOTEL,
    call,
    engine,
    errors,
    model,
    records,
    say,
    tool_messages,
    turn,
    world_tools,
)

HOTEL_LOOKUP = rac.Compensation("cancel_hotel", args={"booking_id": "result.booking_id"},
                                lookup=rac.Lookup("find_hotels", args={"who": "args.guest"},
                                                  items="result.bookings",
                                                  match={"place": "args.city"}))


def _hotel_tools(world: TravelWorld, cause: str) -> list[Any]:
    @tool
    def book_hotel(guest: str, city: str, nights: int) -> dict[str, Any]:
        """Book a hotel room (a client that wraps transport errors in ToolException)."""
        try:
            return world.book_hotel(guest, city, nights)
        except TimeoutError as e:  # the world's injected fault: committed, then no answer
            lost = e if cause == "timeout" else httpx.ReadTimeout("read timed out")
            raise ToolException("the hotel service failed") from lost
        except ConnectionRefusedError as e:
            raise ToolException("the hotel service is unreachable") from e

    @tool
    def find_hotels(who: str) -> dict[str, Any]:
        """The guest's live hotel bookings (read-only)."""
        return world.find_bookings(who, "hotel")

    return [book_hotel, find_hotels, *world_tools(world, ["cancel_hotel"])]


@pytest.mark.parametrize("cause", ["timeout", "httpx"])
def test_a_tool_exception_around_a_timeout_is_reconciled_not_retried(cause: str) -> None:
    world = TravelWorld()
    world.fail("book_hotel", "timeout", times=1, phase="after")  # booked, then it times out
    eng = engine(compensations={**TRAVEL_COMPENSATIONS, "book_hotel": HOTEL_LOOKUP},
                 read_only=[*TRAVEL_READ_ONLY, "find_hotels"])
    m = model(turn(call("book_hotel", **HOTEL)), say("Your hotel is booked."))
    create_agent(m, _hotel_tools(world, cause), middleware=[RACMiddleware(rac=eng)]).invoke(
        {"messages": [("user", "a hotel in Paris")]})

    assert world.calls["book_hotel"] == 1  # never retried blindly
    assert len(world.live("hotel")) == 1
    [answer] = tool_messages(m.seen[-1])
    assert answer.status != "error" and "HT-" in str(answer.content)  # the effect, found
    [rec] = [r for r in records(eng) if r.tool == "book_hotel"]
    assert rec.status is rac.RecordStatus.COMPLETED
    assert rec.result["booking_id"] == world.live("hotel")[0]["booking_id"]


def test_a_tool_exception_around_a_timeout_with_no_lookup_is_in_doubt() -> None:
    world = TravelWorld()
    world.fail("book_hotel", "timeout", times=1, phase="after")
    eng = engine()
    m = model(turn(call("book_hotel", **HOTEL)), say("I could not confirm the hotel."))
    create_agent(m, _hotel_tools(world, "timeout"), middleware=[RACMiddleware(rac=eng)]).invoke(
        {"messages": [("user", "a hotel in Paris")]})

    assert world.calls["book_hotel"] == 1
    [report] = errors(m.seen[-1])
    assert "MAY HAVE HAPPENED" in report.content
    assert "world is back" not in report.content  # never a false all-clear
    [info] = eng.store.list_runs()
    assert info.status is rac.RunStatus.NEEDS_ATTENTION


def test_a_tool_exception_around_a_refused_connection_is_retried() -> None:
    world = TravelWorld()
    world.fail("book_hotel", "refused", times=1)  # nothing sent: safe to retry
    eng = engine()
    m = model(turn(call("book_hotel", **HOTEL)), say("Booked."))
    create_agent(m, _hotel_tools(world, "timeout"), middleware=[RACMiddleware(rac=eng)]).invoke(
        {"messages": [("user", "a hotel in Paris")]})
    assert world.calls["book_hotel"] == 2 and len(world.live("hotel")) == 1
    [rec] = [r for r in records(eng) if r.tool == "book_hotel"]
    assert rec.status is rac.RecordStatus.COMPLETED and rec.attempts == 2


@pytest.mark.parametrize("declared", [False, True])
def test_a_bare_tool_exception_may_have_happened_unless_declared(declared: bool) -> None:
    """A ``ToolException`` that wraps nothing says nothing about whether the booking was made
    (issue 25): it is never repeated, and it is in doubt unless the application declares
    such errors come before any effect."""
    world = TravelWorld()
    eng = engine(errors_before_effect={"book_hotel": (ToolException,)}) if declared \
        else engine()

    @tool
    def book_hotel(guest: str, city: str, nights: int) -> dict[str, Any]:
        """Book a hotel room."""
        world.calls["book_hotel"] = world.calls.get("book_hotel", 0) + 1
        raise ToolException("no rooms left")

    m = model(turn(call("book_hotel", **HOTEL)), say("No rooms."))
    create_agent(m, [book_hotel, *world_tools(world, ["cancel_hotel"])],
                 middleware=[RACMiddleware(rac=eng)]).invoke(
        {"messages": [("user", "a hotel in Paris")]})
    assert world.calls["book_hotel"] == 1
    [rec] = [r for r in records(eng) if r.tool == "book_hotel"]
    assert rec.attempts == 1
    # Declared, it did not happen; undeclared, it may have: its undo needs the booking id
    # it never returned, so it stays named.
    assert rec.status is (rac.RecordStatus.FAILED if declared
                          else rac.RecordStatus.COMPENSATION_FAILED)


def test_a_tool_exception_around_an_http_answer_is_not_repeated() -> None:
    """A ``ToolException`` raised from an HTTP 404 carries the answer's verdict whole: the
    server answered, so a repeat would get the same answer, and even a read (safe to repeat)
    is not asked again; the model gets RAC's report after one attempt."""
    world = TravelWorld()
    asked: list[str] = []

    @tool
    def get_booking(booking_id: str) -> dict[str, Any]:
        """A booking (read-only), from a service that wraps HTTP errors in ToolException."""
        asked.append(booking_id)
        request = httpx.Request("GET", f"https://travel.example/bookings/{booking_id}")
        response = httpx.Response(404, request=request)
        try:
            response.raise_for_status()
        except httpx.HTTPStatusError as e:
            raise ToolException(f"no booking {booking_id}") from e
        return {}

    eng = engine(read_only=[*TRAVEL_READ_ONLY, "get_booking"])
    m = model(turn(call("get_booking", booking_id="FL-404")), say("There is no such booking."))
    create_agent(m, [get_booking, *world_tools(world)],
                 middleware=[RACMiddleware(rac=eng)]).invoke(
        {"messages": [("user", "where is FL-404?")]})

    assert asked == ["FL-404"]  # one attempt: the 4xx is an answer, not a fault
    [report] = errors(m.seen[-1])
    assert report.content.startswith("RAC: get_booking failed"), report.content
    [rec] = [r for r in records(eng) if r.tool == "get_booking"]
    assert rec.attempts == 1 and rec.status is rac.RecordStatus.FAILED


def test_an_undo_whose_error_is_declared_before_any_effect_is_tried_again() -> None:
    """A compensator raising a ``ToolException`` from an error result declared to come before
    any effect (``ResultError(ambiguous=False)``: nothing happened) is tried again under
    ``compensation_retry``, as the bare error would be: the flight is cancelled on the second
    try, never left live with the run called stuck."""
    world = TravelWorld()
    world.fail("book_car", "permanent", message="no cars")
    tries: list[str] = []

    @tool
    def cancel_flight(booking_id: str) -> dict[str, Any]:
        """Cancel a flight (a client that wraps the service's error results)."""
        tries.append(booking_id)
        if len(tries) == 1:
            declared = rac.ResultError("the cancellation desk is busy",
                                       {"error": "busy"}, ambiguous=False)
            raise ToolException("the cancellation desk is busy") from declared
        return world.cancel_flight(booking_id)

    tools = [cancel_flight, *world_tools(world, ["book_flight", "book_car", "cancel_car"])]
    eng = engine()
    m = model(turn(call("book_flight", passenger="ann", origin="LHR", dest="CDG")),
              turn(call("book_car", driver="ann", city="Paris")), say("No trip, sorry."))
    create_agent(m, tools, middleware=[RACMiddleware(rac=eng)]).invoke(
        {"messages": [("user", "a flight and a car")]})

    assert tries == ["FL-101", "FL-101"]  # tried again after the declared error
    assert world.live() == []
    [undo] = [r for r in records(eng) if r.kind is rac.RecordKind.COMPENSATION]
    assert undo.status is rac.RecordStatus.COMPLETED and undo.attempts == 2
    [info] = eng.store.list_runs()
    assert info.status is rac.RunStatus.COMPENSATED
