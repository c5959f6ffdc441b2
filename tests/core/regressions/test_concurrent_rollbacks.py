"""Regression (from a review of the core), the bug it guarded against: two parallel calls fail; their rollbacks snapshot the same COMPLETED record and both
compensate it (the second `_update(COMPENSATING)` is a same-status no-op, so no check fires)."""
import threading

import pytest

import rac


class Signal:
    def __init__(self):
        self.started = []
        self.second = threading.Event()

    @rac.hookimpl
    def rac_rollback_started(self, run_id, scope, seqs, reason):
        self.started.append(seqs)
        if len(self.started) == 2:
            self.second.set()


def test_parallel_failures_compensate_each_effect_once(make_engine, world):
    sig = Signal()
    engine = make_engine(plugins=[sig])
    world.fail("book_hotel", "permanent")
    world.fail("charge_card", "permanent")
    in_car = threading.Event()
    barrier = threading.Barrier(2, timeout=2)

    def car_hook(args):
        in_car.set()
        sig.second.wait(2)  # rollback A waits until rollback B has taken its snapshot

    def flight_hook(args):
        try:
            barrier.wait()
        except threading.BrokenBarrierError:
            pass

    world.on_call("cancel_car", car_hook)
    world.on_call("cancel_flight", flight_hook)
    errors = []
    with pytest.raises(rac.ToolCallFailed):
        with engine.run() as run:
            run.call("book_flight", passenger="ada", origin="PAR", dest="NYC")
            run.call("book_car", driver="ada", city="NYC")

            def t1():
                try:
                    run.call("book_hotel", guest="ada", city="NYC", nights=2)
                except Exception as e:
                    errors.append(e)

            def t2():
                in_car.wait(2)
                try:
                    run.call("charge_card", customer="ada", amount=10.0)
                except Exception as e:
                    errors.append(e)

            ths = [threading.Thread(target=t1), threading.Thread(target=t2)]
            for t in ths:
                t.start()
            for t in ths:
                t.join()
            raise errors[0]
    flights = [b for b in world.bookings() if b["kind"] == "flight"]
    assert [b["cancellations"] for b in flights] == [1], (flights, world.ledger())
    assert not any(isinstance(e, RuntimeError) for e in errors), errors
