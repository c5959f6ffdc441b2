"""Regression (from a review of the core), the bug it guarded against: a sibling call that *begins* while a rollback runs is neither a candidate nor doomed;
`_status_after_rollback` skips it because it is in flight, so the run is marked COMPENSATED and
the call then completes and stays live."""
import threading

import pytest

import rac
from rac.models import RunStatus


def test_call_begun_during_rollback_does_not_escape(make_engine, world):
    engine = make_engine()
    world.fail("charge_card", "permanent")
    in_cancel = threading.Event()
    hotel_started = threading.Event()
    release_hotel = threading.Event()

    def cancel_flight_hook(args):
        in_cancel.set()
        hotel_started.wait(60)  # the sibling call has begun (intent written) meanwhile

    def hotel_hook(args):
        hotel_started.set()
        release_hotel.wait(60)  # completes after the rollback finished

    world.on_call("cancel_flight", cancel_flight_hook)
    world.on_call("book_hotel", hotel_hook)
    run = engine.run()
    out = {}
    with pytest.raises(rac.ToolCallFailed):
        with run:
            run.call("book_flight", passenger="ada", origin="PAR", dest="NYC")

            def sibling():
                in_cancel.wait(60)
                try:
                    out["hotel"] = run.call("book_hotel", guest="ada", city="NYC", nights=2)
                except Exception as e:  # noqa: BLE001
                    out["hotel"] = e

            th = threading.Thread(target=sibling)
            th.start()
            try:
                run.call("charge_card", customer="ada", amount=10.0)
            finally:
                release_hotel.set()
                th.join()
    live = world.live()
    assert not (run.status is RunStatus.COMPENSATED and live), (run.status, live)
    assert live == [], (run.status, live)
