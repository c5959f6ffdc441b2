"""Regression (from a review of the core), the bug it guarded against: dependency inference treats an id that a call merely *echoes* from its own arguments as
produced by it. Two independent bookings for the same customer id get a false edge, and when the
hotel's compensation fails the (independent) flight is 'blocked' and left live."""
import rac


def test_echoed_customer_id_is_not_a_dependency(make_engine, world):
    engine = make_engine(compensation_retry=rac.RetryPolicy.none())
    world.fail("cancel_hotel", "permanent")
    world.fail("charge_card", "permanent")
    with engine.run() as run:
        run.call("book_flight", passenger="CUST-4711", origin="PAR", dest="NYC")
        run.call("book_hotel", guest="CUST-4711", city="NYC", nights=2)
        recs = run.records()
        assert recs[1].depends_on == [], "hotel does not consume anything the flight produced"
