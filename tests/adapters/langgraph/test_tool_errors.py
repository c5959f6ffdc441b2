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
