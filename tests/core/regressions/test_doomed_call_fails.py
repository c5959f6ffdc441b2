"""Regression (from a review of the core), the bug it guarded against: a call doomed by a sibling's rollback that then fails: its seq is never removed from
`_doomed`, so the run stays COMPENSATING forever; and its declared alternative runs, succeeds,
is not doomed, and escapes compensation."""
import threading

import pytest

import rac
from rac.models import RunStatus
from tests.core.regressions.conftest import RollbackFinished


def _scenario(make_engine, world, with_alternative):
    kw = {"alternatives": {"book_car": ["rent_car"]}} if with_alternative else {}
    engine = make_engine(**kw)
    world.fail("charge_card", "permanent")
    rolled = RollbackFinished()
    engine.register_plugin(rolled)
    car_started = threading.Event()

    def car_hook(args):
        car_started.set()
        rolled.done.wait(60)
        raise rac.PermanentError("no cars")

    world.on_call("book_car", car_hook)
    run = engine.run()
    with pytest.raises(rac.ToolCallFailed):
        with run:
            run.call("book_flight", passenger="ada", origin="PAR", dest="NYC")
            res = {}

            def sibling():
                try:
                    res["car"] = run.call("book_car", driver="ada", city="NYC")
                except Exception as e:  # noqa: BLE001
                    res["car"] = e

            th = threading.Thread(target=sibling)
            th.start()
            car_started.wait(60)
            try:
                run.call("charge_card", customer="ada", amount=10.0)
            finally:
                th.join()
    return run


def test_doomed_call_that_fails_does_not_leave_run_compensating(make_engine, world):
    run = _scenario(make_engine, world, with_alternative=False)
    assert world.live() == []
    assert run.status is RunStatus.COMPENSATED, run.status


def test_alternative_of_doomed_call_does_not_escape(make_engine, world):
    run = _scenario(make_engine, world, with_alternative=True)
    assert world.live() == [], (run.status, world.live())
