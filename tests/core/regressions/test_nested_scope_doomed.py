"""Regression (from a review of the core), the bug it guarded against: a doomed call of a *nested* scope completes after that scope's rollback; `_undo_doomed`
sets the run status to `_status_after_rollback(scope)` = COMPENSATED (the nested rollback itself
would have set RUNNING). The run exits COMPENSATED while the outer flight is live."""
import threading

import pytest

import rac
from rac.models import RunStatus
from tests.core.regressions.conftest import RollbackFinished


def test_nested_doomed_undo_does_not_mark_run_compensated(make_engine, world):
    engine = make_engine()
    world.fail("charge_card", "permanent")
    rolled = RollbackFinished()
    engine.register_plugin(rolled)
    hotel_started = threading.Event()

    def hotel_hook(args):
        hotel_started.set()
        rolled.done.wait(60)

    world.on_call("book_hotel", hotel_hook)
    with engine.run() as run:
        run.call("book_flight", passenger="ada", origin="PAR", dest="NYC")
        with run.scope():
            res = {}

            def sibling():
                res["hotel"] = run.call("book_hotel", guest="ada", city="NYC", nights=2)

            import contextvars
            ctx = contextvars.copy_context()
            th = threading.Thread(target=lambda: ctx.run(_safe, sibling, res))
            th.start()
            hotel_started.wait(60)
            with pytest.raises(rac.ToolCallFailed):
                run.call("charge_card", customer="ada", amount=10.0)
            th.join()
    # Outer flight was never rolled back: it is live, so the run is not 'compensated'.
    assert len(world.live("flight")) == 1
    assert world.live("hotel") == []
    assert run.status is RunStatus.COMPLETED, run.status


def _safe(fn, res):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        res["err"] = e
