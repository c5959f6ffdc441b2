"""Travel: flights with seats, hotels with rooms (and a partner channel), cars, a card ledger."""

from __future__ import annotations

from typing import Any, ClassVar

from benchmarks.harness.clock import VirtualClock
from benchmarks.harness.scenario import Option, Scenario, Slot
from benchmarks.worlds.base import CompSpec, World

FLIGHTS = {"AF10": (3, 320), "AF12": (3, 360), "AF14": (5, 410), "BA20": (5, 390)}
HOTELS = {"RITZ": (2, 180), "IBIS": (4, 90)}
CARS = {"CLIO": (2, 40), "GOLF": (2, 55)}
#: what a charge pays for
PRICED = frozenset({"book_flight", "book_hotel", "book_hotel_partner", "rent_car"})


class TravelWorld(World):
    """Inventory per flight, hotel and car; a card that is charged and refunded."""

    name = "travel"
    compensations: ClassVar[dict[str, CompSpec]] = {
        "book_flight": CompSpec("cancel_flight", {"booking_id": "result.booking_id"}),
        "book_hotel": CompSpec("cancel_hotel", {"booking_id": "result.booking_id"}),
        "book_hotel_partner": CompSpec("cancel_hotel_partner",
                                       {"reference": "result.reference"}),
        "rent_car": CompSpec("return_car", {"rental_id": "result.rental_id"}),
        "charge_card": CompSpec("refund_card", {"charge_id": "result.charge_id"}),
    }
    alternatives: ClassVar[dict[str, list[str]]] = {"book_hotel": ["book_hotel_partner"]}
    read_only = frozenset({"search_flights"})
    irreversible = frozenset({"send_voucher"})
    keyed_tools = frozenset({"book_flight", "book_hotel", "book_hotel_partner", "rent_car",
                             "charge_card", "refund_card"})
    effect_field: ClassVar[dict[str, str]] = {
        "book_flight": "booking_id", "book_hotel": "booking_id",
        "book_hotel_partner": "reference", "rent_car": "rental_id",
        "charge_card": "charge_id", "send_voucher": "voucher_id"}

    def __init__(self, clock: VirtualClock, *, flight_seats: dict[str, int] | None = None) -> None:
        super().__init__(clock)
        self.capacity = {f: (flight_seats or {}).get(f, s) for f, (s, _) in FLIGHTS.items()}
        self.seats = dict(self.capacity)
        self.rooms = {h: r for h, (r, _) in HOTELS.items()}
        self.cars = {c: n for c, (n, _) in CARS.items()}
        # a booking made before the run (the one a rebooking replaces)
        self.seats["AF10"] -= 1
        self.ledger.create("FL-OLD", "book_flight", "old", pre_existing=True,
                           flight="AF10", price=FLIGHTS["AF10"][1], passenger="ann")

    # -- read-only -----------------------------------------------------------------------------
    def search_flights(self, dest: str) -> list[dict[str, Any]]:
        """Flights to ``dest`` with free seats, cheapest first."""
        return self.once("search_flights", lambda: sorted(
            ({"flight": f, "price": p, "seats": self.seats[f]} for f, (_, p) in FLIGHTS.items()
             if self.seats[f] > 0), key=lambda r: r["price"]))

    # -- flights -------------------------------------------------------------------------------
    def book_flight(self, passenger: str, flight: str) -> dict[str, Any]:
        """Book one seat for ``passenger``."""
        def do() -> dict[str, Any]:
            if flight not in FLIGHTS:
                raise ValueError(f"unknown flight {flight}")
            if self.seats[flight] <= 0:
                raise ValueError(f"flight {flight} is full")
            self.seats[flight] -= 1
            eid = self.new_id("FL")
            price = FLIGHTS[flight][1]
            self.ledger.create(eid, "book_flight", f"{passenger}:{flight}", flight=flight,
                               price=price, passenger=passenger)
            return {"booking_id": eid, "flight": flight, "passenger": passenger, "price": price}
        return self.once("book_flight", do)

    def cancel_flight(self, booking_id: str) -> dict[str, Any]:
        """Cancel a flight booking and free its seat."""
        def do() -> dict[str, Any]:
            eff = self.ledger.effects.get(booking_id)
            if eff is None or eff.tool != "book_flight":
                raise ValueError(f"no flight booking {booking_id}")
            if not eff.live:
                raise ValueError(f"booking {booking_id} is already cancelled")
            self.ledger.undo(booking_id)
            self.seats[eff.data["flight"]] += 1
            return {"cancelled": booking_id}
        return self.once("cancel_flight", do)

    # -- hotels (direct and through a partner channel with its own references) -----------------
    def _book_room(self, tool: str, prefix: str, idfield: str, guest: str, hotel: str,
                   nights: int) -> dict[str, Any]:
        if hotel not in HOTELS:
            raise ValueError(f"unknown hotel {hotel}")
        if self.rooms[hotel] <= 0:
            raise ValueError(f"hotel {hotel} has no room left")
        self.rooms[hotel] -= 1
        eid = self.new_id(prefix)
        price = HOTELS[hotel][1] * nights
        self.ledger.create(eid, tool, f"{guest}:{hotel}", hotel=hotel, price=price)
        return {idfield: eid, "hotel": hotel, "price": price}

    def _cancel_room(self, tool: str, eid: str) -> dict[str, Any]:
        eff = self.take_back(tool, eid, f"{tool.replace('book_', '')} booking")
        self.rooms[eff.data["hotel"]] += 1
        return {"cancelled": eid}

    def book_hotel(self, guest: str, hotel: str, nights: int) -> dict[str, Any]:
        """Book a room directly with the hotel."""
        return self.once("book_hotel", lambda: self._book_room(
            "book_hotel", "HT", "booking_id", guest, hotel, nights))

    def cancel_hotel(self, booking_id: str) -> dict[str, Any]:
        """Cancel a direct hotel booking."""
        return self.once("cancel_hotel", lambda: self._cancel_room("book_hotel", booking_id))

    def book_hotel_partner(self, guest: str, hotel: str, nights: int) -> dict[str, Any]:
        """Book a room through the partner channel (an alternative to ``book_hotel``)."""
        return self.once("book_hotel_partner", lambda: self._book_room(
            "book_hotel_partner", "HP", "reference", guest, hotel, nights))

    def cancel_hotel_partner(self, reference: str) -> dict[str, Any]:
        """Cancel a partner-channel booking by its reference."""
        return self.once("cancel_hotel_partner",
                         lambda: self._cancel_room("book_hotel_partner", reference))

    # -- cars ----------------------------------------------------------------------------------
    def rent_car(self, driver: str, car: str, days: int) -> dict[str, Any]:
        """Rent a car for ``days``."""
        def do() -> dict[str, Any]:
            if car not in CARS or self.cars[car] <= 0:
                raise ValueError(f"car {car} is not available")
            self.cars[car] -= 1
            eid = self.new_id("CR")
            price = CARS[car][1] * days
            self.ledger.create(eid, "rent_car", f"{driver}:{car}", car=car, price=price)
            return {"rental_id": eid, "car": car, "price": price}
        return self.once("rent_car", do)

    def return_car(self, rental_id: str) -> dict[str, Any]:
        """End a rental."""
        def do() -> dict[str, Any]:
            eff = self.ledger.effects.get(rental_id)
            if eff is None or eff.tool != "rent_car":
                raise ValueError(f"no rental {rental_id}")
            if not eff.live:
                raise ValueError(f"rental {rental_id} already returned")
            self.ledger.undo(rental_id)
            self.cars[eff.data["car"]] += 1
            return {"returned": rental_id}
        return self.once("return_car", do)

    # -- money ---------------------------------------------------------------------------------
    def charge_card(self, customer: str, amount: int, items: list[str]) -> dict[str, Any]:
        """Charge the customer's card for the listed bookings."""
        return self.pay("charge_card", "CH", "charge_id", customer, amount, items)

    def refund_card(self, charge_id: str) -> dict[str, Any]:
        """Refund a charge. Not idempotent, like many payment APIs: a second call pays again."""
        return self.pay_back("refund_card", "charge_card", charge_id, "charge")

    def send_voucher(self, customer: str, text: str) -> dict[str, Any]:
        """E-mail the travel voucher. Cannot be taken back."""
        def do() -> dict[str, Any]:
            eid = self.new_id("VO")
            self.ledger.create(eid, "send_voucher", customer, reversible=False)
            return {"voucher_id": eid}
        return self.once("send_voucher", do)

    # -- invariants ----------------------------------------------------------------------------
    def conservation_errors(self) -> list[str]:
        """Seats, rooms and cars add up; charges minus refunds equal what was kept."""
        errors = []
        live = self.ledger.live_effects(include_pre_existing=True)
        for f, cap in self.capacity.items():
            held = sum(1 for e in live if e.tool == "book_flight" and e.data["flight"] == f)
            if self.seats[f] + held != cap:
                errors.append(f"flight {f}: {self.seats[f]} free + {held} held != {cap}")
        for h, (cap, _) in HOTELS.items():
            held = sum(1 for e in live if e.tool.startswith("book_hotel") and e.data["hotel"] == h)
            if self.rooms[h] + held != cap:
                errors.append(f"hotel {h}: {self.rooms[h]} free + {held} held != {cap}")
        return errors + self.money_errors("charge_card", PRICED)


def _live(world: World, tool: str) -> list[Any]:
    return [e for e in world.ledger.live_effects() if e.tool == tool]


def scenarios() -> list[Scenario]:
    """A trip on a budget, a group of three booked one by one, and a rebooking."""
    def flight_opts(passenger: str) -> Any:
        return lambda done: [Option("book_flight", lambda d, f=f: {"passenger": passenger,
                                                                    "flight": f}, f)
                             for f in sorted(("AF12", "BA20", "AF14"),
                                             key=lambda f: FLIGHTS[f][1])]

    def hotel_opts(done: dict[str, Any]) -> list[Option]:
        return [Option(tool, lambda d, h=h: {"guest": "ann", "hotel": h, "nights": 3},
                       f"{tool}:{h}")
                for h in ("IBIS", "RITZ") for tool in ("book_hotel", "book_hotel_partner")]

    def car_opts(done: dict[str, Any]) -> list[Option]:
        return [Option("rent_car", lambda d, c=c: {"driver": "ann", "car": c, "days": 3}, c)
                for c in ("CLIO", "GOLF")]

    def charge_opts(done: dict[str, Any]) -> list[Option]:
        def args(d: dict[str, Any]) -> dict[str, Any]:
            items = [d[k] for k in ("flight", "hotel", "car")]
            return {"customer": "ann", "amount": sum(int(i["price"]) for i in items),
                    "items": [str(next(v for k, v in i.items() if k in (
                        "booking_id", "reference", "rental_id"))) for i in items]}
        return [Option("charge_card", args, "card")]

    def voucher_opts(done: dict[str, Any]) -> list[Option]:
        return [Option("send_voucher", lambda d: {"customer": "ann", "text": "your trip"},
                       "mail")]

    def trip_goal(w: World) -> bool:
        return (len(_live(w, "book_flight")) == 1 and len(_live(w, "rent_car")) == 1
                and len(_live(w, "book_hotel")) + len(_live(w, "book_hotel_partner")) == 1
                and len(_live(w, "charge_card")) == 1 and len(_live(w, "send_voucher")) == 1)

    trip = Scenario(
        "travel", "trip_budget",
        [Slot("flight", flight_opts("ann")), Slot("hotel", hotel_opts), Slot("car", car_opts),
         Slot("charge", charge_opts), Slot("voucher", voucher_opts)],
        "Book Ann a flight, 3 hotel nights and a car for Paris, pay, send the voucher.",
        trip_goal, make_world=TravelWorld)

    def group_opts(passenger: str) -> Any:
        return lambda done: [Option("book_flight", lambda d: {"passenger": passenger,
                                                              "flight": "AF12"}, "AF12")]

    group = Scenario(
        "travel", "group_of_3",
        [Slot(p, group_opts(p)) for p in ("ann", "bob", "cid")],
        "Book Ann, Bob and Cid on AF12 one by one; if any cannot fly, cancel them all.",
        lambda w: len([e for e in _live(w, "book_flight") if e.data["flight"] == "AF12"]) == 3
        and len(w.ledger.live_effects()) == 3,
        make_world=TravelWorld)

    def cancel_old(done: dict[str, Any]) -> list[Option]:
        return [Option("cancel_flight", lambda d: {"booking_id": "FL-OLD"}, "FL-OLD")]

    rebook = Scenario(
        "travel", "rebooking",
        [Slot("new_flight", flight_opts("ann")), Slot("cancel_old", cancel_old, creates=False)],
        "Move Ann from AF10 to a cheaper later flight, then cancel AF10.",
        lambda w: len(_live(w, "book_flight")) == 1 and not w.ledger.effects["FL-OLD"].live,
        allowed_undo=frozenset({"FL-OLD"}), make_world=TravelWorld)
    parallel = Scenario(
        "travel", "group_parallel",
        [Slot(p, group_opts(p)) for p in ("ann", "bob", "cid")],
        "Book Ann, Bob and Cid on AF12 in one go (three parallel calls); if any cannot fly, "
        "cancel them all.", group.goal, make_world=TravelWorld, params={"parallel": True})
    return [trip, group, rebook, parallel]
