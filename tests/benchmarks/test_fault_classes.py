"""The fault classes of issue 25 and how runs are judged: each client library's own
mid-response exception, servers that answer an error after writing, a passenger who already
holds a matching booking; an undo made twice counted as a false all-clear, totals counted
apart from silent residuals, and the named effect taken as the extra one."""

from __future__ import annotations

import ssl

import pytest

pytest.importorskip("tau2")

import httpx  # noqa: E402

from benchmarks.approaches.base import ABORT, ATTENTION, Episode, RunResult, make_setup  # noqa: E402
from benchmarks.harness import errors  # noqa: E402
from benchmarks.harness.catalog import cells, fault_classes, scenarios  # noqa: E402
from benchmarks.harness.classify import Live, classify, goal_split, pick_extras  # noqa: E402
from benchmarks.harness.faults import FaultLayer, FaultRule  # noqa: E402
from benchmarks.harness.invariants import check  # noqa: E402
from benchmarks.harness.runner import quiet  # noqa: E402
from benchmarks.worlds.tau2_airline import HELD_ID  # noqa: E402

#: fault kind -> (module the class comes from, class name)
LIBRARIES = {
    "httpx_read": ("httpx", "ReadError"),
    "requests_chunked": ("requests.exceptions", "ChunkedEncodingError"),
    "urllib3_protocol": ("urllib3.exceptions", "ProtocolError"),
    "ssl_eof": ("ssl", "SSLEOFError"),
    "aiohttp_payload": ("aiohttp.client_exceptions", "ClientPayloadError"),
    "grpc_deadline": ("grpc.aio._call", "AioRpcError"),
    "psycopg_closed": ("psycopg", "OperationalError"),
    "anyio_broken": ("anyio", "BrokenResourceError"),
}


def booking_setup(cls: str = "clean", scenario: str = "travel/group_of_3"):  # type: ignore[no-untyped-def]
    return make_setup(scenarios()[scenario], fault_classes()[cls], 0)


@pytest.mark.parametrize("kind", sorted(LIBRARIES))
def test_a_mid_response_fault_commits_then_raises_the_librarys_own_class(kind: str) -> None:
    import importlib

    import rac.errors

    setup = booking_setup()
    layer = FaultLayer([FaultRule("book_flight", kind, "after_effect")], seed=0,
                       scenario="s", clock=setup.clock)
    book = layer.wrap("book_flight", setup.world.book_flight)
    with pytest.raises(Exception) as info:
        book(passenger="ann", flight="AF12")
    module, name = LIBRARIES[kind]
    assert type(info.value) is getattr(importlib.import_module(module), name)
    assert not isinstance(info.value, rac.errors.RACError)
    assert len(setup.world.ledger.live_effects()) == 1  # the booking is made
    assert layer.stats.in_doubt == 1


def test_the_mid_response_exceptions_are_built_as_their_libraries_build_them() -> None:
    import grpc
    from requests.exceptions import ChunkedEncodingError
    from urllib3.exceptions import ProtocolError

    chunked = errors.requests_chunked("t")
    assert isinstance(chunked, ChunkedEncodingError)
    assert isinstance(chunked.args[0], ProtocolError)  # requests wraps urllib3's error
    assert errors.grpc_deadline("t").code() is grpc.StatusCode.DEADLINE_EXCEEDED
    assert isinstance(errors.httpx_read("t"), httpx.TransportError)
    assert errors.httpx_read("t").request.url.path == "/v1/t"
    assert isinstance(errors.ssl_eof("t"), ssl.SSLError)
    assert "server closed the connection unexpectedly" in str(errors.psycopg_closed("t"))


def test_every_world_meets_every_mid_response_kind() -> None:
    for sk, sc in scenarios().items():
        setup = make_setup(sc, fault_classes()["mid_response"], 0)
        kinds = {r.kind for r in setup.layer.rules}
        assert kinds == set(errors.MID_RESPONSE), sk
        assert all(r.phase == "after_effect" for r in setup.layer.rules), sk


@pytest.mark.parametrize(("kind", "raises"), [("4xx", ValueError),
                                              ("500", httpx.HTTPStatusError),
                                              ("error_result", None)])
def test_a_server_that_writes_then_answers_an_error(kind: str, raises: type | None) -> None:
    setup = booking_setup()
    layer = FaultLayer([FaultRule("book_flight", kind, "after_effect", message="book failed")],
                       seed=0, scenario="s", clock=setup.clock)
    book = layer.wrap("book_flight", setup.world.book_flight)
    if raises is None:
        assert book(passenger="ann", flight="AF12") == {"error": "book failed"}
    else:
        with pytest.raises(raises) as info:
            book(passenger="ann", flight="AF12")
        if kind == "500":
            assert info.value.response.status_code == 500  # type: ignore[attr-defined]
    assert len(setup.world.ledger.live_effects()) == 1
    assert layer.stats.in_doubt == 1


def test_a_passenger_can_hold_a_matching_booking_from_before_the_run() -> None:
    quiet()
    setup = booking_setup("holds_matching", "tau2_airline/three_passengers")
    world = setup.world
    try:
        held = world.db.reservations[HELD_ID]  # type: ignore[attr-defined]
        first = scenarios()["tau2_airline/three_passengers"].slots[0].options({})[0].args({})
        assert held.passengers[0].first_name == first["passengers"][0]["first_name"]
        assert [(f.flight_number, f.date) for f in held.flights] == [
            (f["flight_number"], f["date"]) for f in first["flights"]]
        # booked "now" on tau2's frozen clock: the booking lookup lists it
        found = world.tools()["list_user_reservations_booked_now"](user_id=first["user_id"])
        assert HELD_ID in [r["reservation_id"] for r in found["reservations"]]
        # the run starts from it: it is neither the run's effect nor a change of the run
        assert world.goal_reservations() == []  # type: ignore[attr-defined]
        assert world.changed() == {}  # type: ignore[attr-defined]
        # cancelling it is a live effect of the run (the passenger lost a booking) and I3
        world.tools()["cancel_reservation"](reservation_id=HELD_ID)
        ep = Episode("t", setup, RunResult(ABORT, 1, claims_clean=True))
        verdict = check(ep)
        klass = classify(ep, verdict)
        assert verdict.violations["I3"]
        assert klass.outcome == "residual" and klass.false_clean
        assert any(HELD_ID in x for x in klass.live)
    finally:
        world.reset()  # type: ignore[attr-defined]
    assert HELD_ID not in world.db.reservations  # type: ignore[attr-defined]
    assert world.changed(full=True) == {}  # type: ignore[attr-defined]


def test_holds_matching_runs_where_a_passenger_can_hold_a_booking() -> None:
    worlds = {sk.split("/")[0] for sk, cls, _ in cells() if cls == "holds_matching"}
    assert worlds == {"tau2_airline"}


def test_an_undo_made_twice_is_a_false_all_clear() -> None:
    setup = booking_setup("clean", "travel/trip_budget")
    tools = setup.tools
    charge = tools["charge_card"](customer="ann", amount=100, items=[])
    tools["refund_card"](charge_id=charge["charge_id"])
    tools["refund_card"](charge_id=charge["charge_id"])  # the refund paid out again
    ep = Episode("t", setup, RunResult(ABORT, 1, claims_clean=True))
    klass = classify(ep, check(ep))
    assert klass.double_undo and klass.false_clean and klass.outcome == "residual"
    assert f"{charge['charge_id']} undone 2 times (refund_card)" in klass.live
    # named as needs_attention instead, it is a residual, not a false all-clear
    named = Episode("t", setup, RunResult(ATTENTION, 1, report="refund_card may have run twice"))
    klass = classify(named, check(named))
    assert klass.double_undo and not klass.false_clean and not klass.silent_residual


def test_totals_that_do_not_add_up_are_counted_apart_never_as_silent() -> None:
    setup = booking_setup("clean", "shop/order_and_ship")
    setup.world.available[("main", "LAMP")] -= 1  # type: ignore[attr-defined]
    ep = Episode("t", setup, RunResult(ABORT, 1))
    klass = classify(ep, check(ep))
    assert klass.outcome == "residual" and klass.totals_off
    assert not klass.silent_residual and not klass.false_clean


def test_the_named_effect_is_taken_as_the_extra_one() -> None:
    first, second = Live("FL-1", "book_flight", 1), Live("FL-2", "book_flight", 3)
    car = Live("CR-3", "rent_car", 4)
    live = [("ann:AF12", first), ("ann:BA20", second), ("ann:CLIO", car)]
    sure, surplus = goal_split(live, True, 2)
    assert sure == [] and surplus == [([first, second, car], 1)]
    assert pick_extras(*surplus[0], "book_flight FL-1 may have happened") == [first]
    assert pick_extras(*surplus[0], "") == [car]  # nothing named: the newest
    # repeats of one request: all but one are extra
    sure, surplus = goal_split([("k", first), ("k", second)], True, 1)
    assert surplus == [([first, second], 1)]
    assert goal_split(live, False, 2) == ([first, second, car], [])



def test_a_compensator_in_comp_ambiguous_commits_then_times_out() -> None:
    setup = booking_setup("comp_ambiguous", "travel/trip_budget")
    undo = {r.tool for r in setup.layer.rules if r.phase == "after_effect"}
    assert {"refund_card", "cancel_flight", "cancel_hotel", "return_car"} <= undo
    assert all(r.kind == "timeout" for r in setup.layer.rules if r.tool in undo)
    charge = setup.tools["charge_card"](customer="ann", amount=100, items=[])
    with pytest.raises(TimeoutError):
        setup.tools["refund_card"](charge_id=charge["charge_id"])
    assert setup.world.ledger.live_effects() == []  # the refund took effect all the same


def test_an_undo_reported_done_while_its_effect_is_live_is_a_false_all_clear() -> None:
    setup = booking_setup("clean", "travel/trip_budget")
    setup.tools["charge_card"](customer="ann", amount=100, items=[])
    (charge,) = setup.world.ledger.live_effects()
    # the run ends needs_attention, but told the agent this charge was undone
    ep = Episode("t", setup, RunResult(ATTENTION, 1, report="refund_card failed",
                                       claimed_undone={charge.call_no}))
    klass = classify(ep, check(ep))
    assert klass.outcome == "residual" and klass.false_clean
    told_nothing = Episode("t", setup, RunResult(ATTENTION, 1, report="charge_card CH-1 live"))
    assert not classify(told_nothing, check(told_nothing)).false_clean
