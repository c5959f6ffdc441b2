"""Regression (from a review of the core), the bug it guarded against: `_match_by_name` passes a whole free-text scalar result as the one required parameter
(a guess); with a tolerant compensator the run is then reported COMPENSATED while the booking
stays live."""
import pytest

import rac
from rac.models import RunStatus


def test_free_text_result_is_not_used_as_booking_id(make_engine, world):
    def book_room(guest: str) -> str:
        r = world.book_hotel(guest, "NYC", 1)
        return f"Booked! Your reference is {r['booking_id']}."

    engine = make_engine(compensations={**__import__("rac.testing", fromlist=["x"]).TRAVEL_COMPENSATIONS,
                                        "book_room": "cancel_hotel"},
                         tools=[*world.tools(), book_room])
    world.fail("charge_card", "permanent")
    run = engine.run()
    with pytest.raises(rac.ToolCallFailed):
        with run:
            run.call(book_room, guest="ada")
            run.call("charge_card", customer="ada", amount=1.0)
    comp = [r for r in run.records() if r.tool == "cancel_hotel"]
    assert not comp or comp[0].args.get("booking_id", "").startswith("HT-"), comp[0].args
    assert not (run.status is RunStatus.COMPENSATED and world.live()), (run.status, world.live())
