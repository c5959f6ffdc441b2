"""Issue 25, keys and mapping: a repeat counts as deduplicated only when the call really
carries a key, an in-doubt call is undone by a key only if it was sent with it, and no
compensation argument is filled from an empty field unless the declaration says it may be."""

from __future__ import annotations

from typing import Any

import pytest

import rac
from rac.testing import TravelWorld


class Charges:
    """Card charges; a non-empty key deduplicates (as Stripe's does), no key does not."""

    def __init__(self) -> None:
        self.made: list[dict[str, Any]] = []
        self.lost_answers = 0

    def charge(self, customer: str, amount: float,
               idempotency_key: str | None = None) -> dict[str, Any]:
        """Charge the customer's card."""
        made = next((c for c in self.made if idempotency_key and c["key"] == idempotency_key),
                    None)
        if made is None:
            made = {"charge_id": f"CH-{len(self.made) + 1:04d}", "key": idempotency_key,
                    "live": True}
            self.made.append(made)
        if self.lost_answers:
            self.lost_answers -= 1
            raise TimeoutError("read timed out")  # charged; the answer is lost
        return {"charge_id": made["charge_id"]}

    def refund(self, charge_id: str) -> dict[str, Any]:
        """Refund a charge."""
        for c in self.made:
            if c["charge_id"] == charge_id:
                c["live"] = False
        return {"refunded": charge_id}

    def refund_by_key(self, idempotency_key: str) -> dict[str, Any]:
        """Refund the charge made under a key (a no-op when none was)."""
        for c in self.made:
            if c["key"] == idempotency_key:
                c["live"] = False
                return {"refunded": c["charge_id"]}
        return {"refunded": None}

    def live(self) -> list[str]:
        return [c["charge_id"] for c in self.made if c["live"]]


@pytest.mark.parametrize("given", [None, "", "  "])
def test_a_keyed_tool_called_with_an_empty_key_gets_racs_key(make_engine: Any,
                                                             given: str | None) -> None:
    """Called with ``idempotency_key=None`` (or empty), the tool was retried as if the repeat
    were deduplicated, and charged twice (issue 25)."""
    cards = Charges()
    cards.lost_answers = 1
    engine = make_engine(tools=[cards.charge, cards.refund], compensations={"charge": "refund"},
                         read_only=[])
    with engine.run() as run:
        run.call("charge", customer="ann", amount=30.0, idempotency_key=given)
    assert len(cards.made) == 1 and cards.made[0]["key"]  # charged once, under RAC's key
    (rec,) = run.records()
    assert rec.effect == "keyed" and rec.attempts == 2


def test_keyed_on_a_tool_with_no_key_parameter_is_a_declaration_error(make_engine: Any) -> None:
    def book(who: str) -> dict[str, Any]:
        return {"booking_id": f"B-{who}"}

    def cancel(booking_id: str) -> dict[str, Any]:
        return {}

    with pytest.raises(rac.ConfigurationError,
                       match=r"effects\['book'\] = 'keyed'.*no parameter 'idempotency_key'"):
        make_engine(tools=[book, cancel], compensations={"book": "cancel"},
                    effects={"book": "keyed"})
    engine = make_engine(compensations={"book": "cancel"}, effects={"book": "keyed"}, tools=None)
    with engine.run() as run, pytest.raises(rac.ConfigurationError, match="'keyed'"):
        run.add_tools([book, cancel])  # known now: refused before any call
    ok = make_engine(compensations={"book": "cancel"}, effects={"book": "keyed"}, tools=None,
                     key_param="request_key")

    def keyed_book(who: str, request_key: str) -> dict[str, Any]:
        return {"booking_id": f"B-{who}"}

    with ok.run() as run:
        run.add_tools([rac.Tool.from_function(keyed_book, name="book"), cancel])
        run.call("book", who="ann")
    assert run.records()[0].effect == "keyed"


def test_an_in_doubt_call_is_undone_by_a_key_only_if_it_was_sent_with_it(
        make_engine: Any) -> None:
    """An unsafe tool's charge committed and its answer was lost; its refund, mapped from the
    call's key, was given RAC's key, which the charge never saw: the refund found nothing,
    and the run was reported compensated with the charge live (issue 25)."""
    cards = Charges()
    cards.lost_answers = 1

    def pay(customer: str, amount: float) -> dict[str, Any]:
        """Charge without a key (the API takes none)."""
        return cards.charge(customer, amount)

    refund = rac.Compensation("refund_by_key", args={"idempotency_key": "args.idempotency_key"})
    engine = make_engine(tools=[pay, cards.refund_by_key], read_only=[],
                         compensations={"pay": refund})
    with engine.run() as run, pytest.raises(rac.ToolCallFailed) as failed:
        run.call("pay", customer="ann", amount=30.0)
    assert cards.live() == ["CH-0001"]  # the charge stands, and the report says so
    report = failed.value.report
    assert [(u.tool, u.happened) for u in report.in_doubt] == [("pay", "maybe")]
    assert "idempotency_key" in report.in_doubt[0].error
    assert not report.clean and "world is back" not in str(failed.value)


def test_a_keyed_call_in_doubt_is_undone_by_the_key_it_was_sent_with(make_engine: Any) -> None:
    cards = Charges()
    cards.lost_answers = 5
    refund = rac.Compensation("refund_by_key", args={"idempotency_key": "args.idempotency_key"})
    engine = make_engine(tools=[cards.charge, cards.refund_by_key], read_only=[],
                         compensations={"charge": refund},
                         retry=rac.RetryPolicy(max_attempts=2, initial_delay=0, jitter=0))
    with engine.run() as run, pytest.raises(rac.ToolCallFailed) as failed:
        run.call("charge", customer="ann", amount=30.0)
    assert cards.live() == [] and len(cards.made) == 1  # deduplicated, then refunded by key
    assert failed.value.report.clean


def _car_engine(make_engine: Any, world: TravelWorld, result: dict[str, Any],
                comp: Any) -> rac.RAC:
    def book_car(driver: str, city: str) -> dict[str, Any]:
        """Book a car; the answer carries the booking id in an odd place."""
        booked = world.book_car(driver, city)
        return {**result, "confirmation": booked["booking_id"]}

    def cancel_car(booking_id: str | None = None, note: str | None = None) -> dict[str, Any]:
        """Cancel a car booking (given nothing, cancels nothing and says ok)."""
        if booking_id is None or booking_id == "":
            return {"ok": True}
        return world.cancel_car(booking_id)

    world.fail("book_hotel", "permanent")
    tools = [t for t in world.tools() if t.__name__ not in ("book_car", "cancel_car")]
    return make_engine(tools=[*tools, book_car, cancel_car],
                       compensations={"book_car": comp, "book_hotel": "cancel_hotel"})


@pytest.mark.parametrize(("result", "comp", "param"), [
    # an optional parameter filled with None by name (the result's booking_id is null)
    ({"booking_id": None}, "cancel_car", "booking_id"),
    # a required one filled with "" from a declared path
    ({"ref": ""}, rac.Compensation("cancel_car", args={"booking_id": "result.ref"}),
     "booking_id"),
    # a callable mapper that returns an empty value
    ({"ref": "x"}, rac.Compensation("cancel_car", args=lambda a, r: {"booking_id": None}),
     "booking_id"),
])
def test_a_compensation_argument_from_an_empty_field_is_refused(
        make_engine: Any, world: TravelWorld, result: dict[str, Any], comp: Any,
        param: str) -> None:
    """The compensator was called with ``booking_id=None`` or ``""``, cancelled nothing, and
    RAC recorded the car undone (issue 25)."""
    engine = _car_engine(make_engine, world, result, comp)
    with engine.run() as run:
        run.call("book_car", driver="ann", city="Paris")
        with pytest.raises(rac.ToolCallFailed) as failed:
            run.call("book_hotel", guest="ann", city="Paris", nights=1)
    assert len(world.live("car")) == 1
    report = failed.value.report
    assert [u.tool for u in report.compensation_failed] == ["book_car"]
    assert f"cannot map argument {param!r}" in report.compensation_failed[0].error
    assert run.status is rac.RunStatus.NEEDS_ATTENTION
    assert "world is back" not in str(failed.value)


def test_a_parameter_declared_optional_may_be_empty(make_engine: Any, world: TravelWorld) -> None:
    comp = rac.Compensation("cancel_car", args={"booking_id": "result.confirmation",
                                                "note": "result.note"}, optional=["note"])
    engine = _car_engine(make_engine, world, {"note": None}, comp)
    with engine.run() as run:
        run.call("book_car", driver="ann", city="Paris")
        with pytest.raises(rac.ToolCallFailed) as failed:
            run.call("book_hotel", guest="ann", city="Paris", nights=1)
    assert world.live("car") == [] and failed.value.report.clean


def test_optional_must_name_parameters_of_the_compensator(make_engine: Any,
                                                          world: TravelWorld) -> None:
    with pytest.raises(rac.ConfigurationError, match="optional"):
        make_engine(compensations={"book_car": rac.Compensation("cancel_car",
                                                                optional=["noet"])})
