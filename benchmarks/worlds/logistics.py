"""Logistics (REALM-Bench P5-P9 style): an event with a venue, a caterer and a band that have
capacities; vehicles booked in time slots with real conflict checks; a kitchen that holds three
cooks at a time; a deposit that pays for what is booked.

Road closures and flight delays are faults (see :mod:`benchmarks.harness.fault_classes`): a closed road
rejects trips over it, a delayed flight rejects a pickup at the original arrival time.
"""

from __future__ import annotations

from typing import Any, ClassVar

from benchmarks.harness.clock import VirtualClock
from benchmarks.harness.scenario import Option, Scenario, Slot
from benchmarks.worlds.base import CompSpec, World

#: venue -> (guests it holds, price)
VENUES = {"BARN": (80, 600), "HALL": (120, 900), "LOFT": (60, 450)}
#: caterer -> (meals it can still cook that day, price per meal)
CATERERS = {"BITES": (90, 18), "FEAST": (150, 25)}
#: band -> fee
BANDS = {"ROCKS": 500, "JAZZ4": 700}
#: vehicle -> (seats, price per trip)
VEHICLES = {"VAN1": (8, 60), "VAN2": (8, 70), "BUS1": (30, 150)}
ROUTES = ("A1", "B7")
TRIP_HOURS = 2
#: dish -> hours of a cook in the kitchen
DISHES = {"turkey": 4, "sides": 2, "pie": 2, "bread": 1}
COOKS = ("ana", "ben", "cal", "dee")
KITCHEN_CAP = 3
KITCHEN_OPENS = 8


def _overlap(a0: int, a1: int, b0: int, b1: int) -> bool:
    return a0 < b1 and b0 < a1


class LogisticsWorld(World):
    """Venues, caterers, bands, vehicles in time slots, a three-cook kitchen and a deposit."""

    name = "logistics"
    compensations: ClassVar[dict[str, CompSpec]] = {
        "book_venue": CompSpec("cancel_venue", {"venue_booking": "result.venue_booking"}),
        "book_caterer": CompSpec("cancel_catering", {"catering_id": "result.catering_id"}),
        "hire_band": CompSpec("release_band", {"band_id": "result.band_id"}),
        "reserve_vehicle": CompSpec("cancel_trip", {"trip_id": "result.trip_id"}),
        "assign_cook": CompSpec("cancel_shift", {"shift_id": "result.shift_id"}),
        "pay_deposit": CompSpec("refund_deposit", {"deposit_id": "result.deposit_id"}),
    }
    read_only = frozenset({"vehicle_calendar"})
    keyed_tools = frozenset({"book_venue", "book_caterer", "hire_band", "reserve_vehicle",
                             "pay_deposit", "refund_deposit"})
    effect_field: ClassVar[dict[str, str]] = {
        "book_venue": "venue_booking", "book_caterer": "catering_id", "hire_band": "band_id",
        "reserve_vehicle": "trip_id", "assign_cook": "shift_id", "pay_deposit": "deposit_id"}
    #: tools whose effects a deposit pays for, and their price field
    priced: ClassVar[frozenset[str]] = frozenset({"book_venue", "book_caterer", "hire_band",
                                                  "reserve_vehicle"})

    def __init__(self, clock: VirtualClock) -> None:
        super().__init__(clock)
        self.meals_left = {c: m for c, (m, _) in CATERERS.items()}
        self.venue_free = dict.fromkeys(VENUES, True)
        self.band_free = dict.fromkeys(BANDS, True)
        # another event already holds the loft and VAN2 around noon (not ours to touch)
        self.venue_free["LOFT"] = False
        self.ledger.create("VN-OTHER", "book_venue", "other:LOFT", pre_existing=True,
                           venue="LOFT", price=VENUES["LOFT"][1])
        self.ledger.create("TR-OTHER", "reserve_vehicle", "other:VAN2", pre_existing=True,
                           vehicle="VAN2", route="A1", start=12, end=14, passengers=6,
                           price=VEHICLES["VAN2"][1])

    def _live(self, tool: str) -> list[Any]:
        return [e for e in self.ledger.live_effects(include_pre_existing=True) if e.tool == tool]

    # -- read-only -----------------------------------------------------------------------------
    def vehicle_calendar(self, vehicle: str) -> list[dict[str, int]]:
        """Busy slots of a vehicle."""
        return self.once("vehicle_calendar", lambda: [
            {"start": e.data["start"], "end": e.data["end"]}
            for e in self._live("reserve_vehicle") if e.data["vehicle"] == vehicle])

    # -- venue, caterer, band ------------------------------------------------------------------
    def book_venue(self, event: str, venue: str, guests: int) -> dict[str, Any]:
        """Book a venue for ``guests`` people."""
        def do() -> dict[str, Any]:
            if venue not in VENUES:
                raise ValueError(f"unknown venue {venue}")
            if guests > VENUES[venue][0]:
                raise ValueError(f"venue {venue} holds {VENUES[venue][0]}, not {guests}")
            if not self.venue_free[venue]:
                raise ValueError(f"venue {venue} is already booked that day")
            self.venue_free[venue] = False
            eid = self.new_id("VN")
            price = VENUES[venue][1]
            self.ledger.create(eid, "book_venue", f"{event}:{venue}", venue=venue, price=price)
            return {"venue_booking": eid, "venue": venue, "price": price}
        return self.once("book_venue", do)

    def cancel_venue(self, venue_booking: str) -> dict[str, Any]:
        """Cancel a venue booking."""
        def do() -> dict[str, Any]:
            eff = self.take_back("book_venue", venue_booking, "venue booking")
            self.venue_free[eff.data["venue"]] = True
            return {"cancelled": venue_booking}
        return self.once("cancel_venue", do)

    def book_caterer(self, event: str, caterer: str, meals: int) -> dict[str, Any]:
        """Order ``meals`` meals from a caterer (its kitchen has a daily capacity)."""
        def do() -> dict[str, Any]:
            if caterer not in CATERERS:
                raise ValueError(f"unknown caterer {caterer}")
            if self.meals_left[caterer] < meals:
                raise ValueError(f"caterer {caterer} is full: {self.meals_left[caterer]} "
                                    f"meals left, {meals} asked")
            self.meals_left[caterer] -= meals
            eid = self.new_id("CT")
            price = CATERERS[caterer][1] * meals
            self.ledger.create(eid, "book_caterer", f"{event}:{caterer}", caterer=caterer,
                               meals=meals, price=price)
            return {"catering_id": eid, "caterer": caterer, "price": price}
        return self.once("book_caterer", do)

    def cancel_catering(self, catering_id: str) -> dict[str, Any]:
        """Cancel a catering order and free its meals."""
        def do() -> dict[str, Any]:
            eff = self.take_back("book_caterer", catering_id, "catering order")
            self.meals_left[eff.data["caterer"]] += eff.data["meals"]
            return {"cancelled": catering_id}
        return self.once("cancel_catering", do)

    def hire_band(self, event: str, band: str) -> dict[str, Any]:
        """Hire a band for the evening."""
        def do() -> dict[str, Any]:
            if band not in BANDS:
                raise ValueError(f"unknown band {band}")
            if not self.band_free[band]:
                raise ValueError(f"band {band} already plays elsewhere that night")
            self.band_free[band] = False
            eid = self.new_id("BD")
            self.ledger.create(eid, "hire_band", f"{event}:{band}", band=band,
                               price=BANDS[band])
            return {"band_id": eid, "band": band, "price": BANDS[band]}
        return self.once("hire_band", do)

    def release_band(self, band_id: str) -> dict[str, Any]:
        """Release a hired band."""
        def do() -> dict[str, Any]:
            eff = self.take_back("hire_band", band_id, "band booking")
            self.band_free[eff.data["band"]] = True
            return {"released": band_id}
        return self.once("release_band", do)

    # -- vehicles in time slots ----------------------------------------------------------------
    def reserve_vehicle(self, who: str, vehicle: str, route: str, start: int,
                        passengers: int) -> dict[str, Any]:
        """Send ``vehicle`` over ``route`` from ``start`` for a two-hour trip."""
        def do() -> dict[str, Any]:
            if vehicle not in VEHICLES or route not in ROUTES:
                raise ValueError(f"unknown vehicle {vehicle} or route {route}")
            if passengers > VEHICLES[vehicle][0]:
                raise ValueError(f"{vehicle} seats {VEHICLES[vehicle][0]}, not {passengers}")
            end = start + TRIP_HOURS
            for e in self._live("reserve_vehicle"):
                if e.data["vehicle"] == vehicle and _overlap(start, end, e.data["start"],
                                                             e.data["end"]):
                    raise ValueError(f"{vehicle} is busy {e.data['start']}:00-"
                                        f"{e.data['end']}:00 ({e.eid})")
            eid = self.new_id("TR")
            price = VEHICLES[vehicle][1]
            self.ledger.create(eid, "reserve_vehicle", f"{who}:{vehicle}:{start}",
                               vehicle=vehicle, route=route, start=start, end=end,
                               passengers=passengers, price=price)
            return {"trip_id": eid, "vehicle": vehicle, "start": start, "end": end,
                    "price": price}
        return self.once("reserve_vehicle", do)

    def cancel_trip(self, trip_id: str) -> dict[str, Any]:
        """Cancel a vehicle trip and free its slot."""
        return self.once("cancel_trip", lambda: {
            "cancelled": self.take_back("reserve_vehicle", trip_id, "trip").eid})

    # -- the kitchen ---------------------------------------------------------------------------
    def assign_cook(self, cook: str, dish: str, start: int) -> dict[str, Any]:
        """Put ``cook`` in the kitchen on ``dish`` from ``start``; the kitchen holds three."""
        def do() -> dict[str, Any]:
            if cook not in COOKS or dish not in DISHES:
                raise ValueError(f"unknown cook {cook} or dish {dish}")
            end = start + DISHES[dish]
            shifts = self._live("assign_cook")
            for e in shifts:
                if e.data["cook"] == cook and _overlap(start, end, e.data["start"],
                                                       e.data["end"]):
                    raise ValueError(f"{cook} is already cooking {e.data['dish']} then")
            for hour in range(start, end):
                busy = sum(1 for e in shifts if e.data["start"] <= hour < e.data["end"])
                if busy >= KITCHEN_CAP:
                    raise ValueError(f"kitchen is full at {hour}:00 ({KITCHEN_CAP} cooks)")
            eid = self.new_id("SF")
            self.ledger.create(eid, "assign_cook", f"dish:{dish}", cook=cook, dish=dish,
                               start=start, end=end)
            return {"shift_id": eid, "cook": cook, "dish": dish, "start": start, "end": end}
        return self.once("assign_cook", do)

    def cancel_shift(self, shift_id: str) -> dict[str, Any]:
        """Take a cook off a dish."""
        return self.once("cancel_shift", lambda: {
            "cancelled": self.take_back("assign_cook", shift_id, "shift").eid})

    # -- money ---------------------------------------------------------------------------------
    def pay_deposit(self, event: str, amount: int, items: list[str]) -> dict[str, Any]:
        """Pay the deposit for the listed bookings."""
        return self.pay("pay_deposit", "DP", "deposit_id", event, amount, items)

    def refund_deposit(self, deposit_id: str) -> dict[str, Any]:
        """Refund a deposit (not idempotent: a second call pays out again)."""
        return self.pay_back("refund_deposit", "pay_deposit", deposit_id, "deposit")

    # -- invariants ----------------------------------------------------------------------------
    def conservation_errors(self) -> list[str]:
        """Capacities hold (venue, caterer, band, vehicle slots, kitchen) and money adds up."""
        errors = []
        live = self.ledger.live_effects(include_pre_existing=True)
        for v in VENUES:
            n = sum(1 for e in live if e.tool == "book_venue" and e.data["venue"] == v)
            if n > 1 or self.venue_free[v] != (n == 0):
                errors.append(f"venue {v}: {n} live bookings, free={self.venue_free[v]}")
        for c, (cap, _) in CATERERS.items():
            held = sum(e.data["meals"] for e in live if e.tool == "book_caterer"
                       and e.data["caterer"] == c)
            if self.meals_left[c] + held != cap:
                errors.append(f"caterer {c}: {self.meals_left[c]} left + {held} held != {cap}")
        for b in BANDS:
            n = sum(1 for e in live if e.tool == "hire_band" and e.data["band"] == b)
            if n > 1 or self.band_free[b] != (n == 0):
                errors.append(f"band {b}: {n} live bookings, free={self.band_free[b]}")
        trips = [e for e in live if e.tool == "reserve_vehicle"]
        for i, a in enumerate(trips):
            for b in trips[i + 1:]:
                if a.data["vehicle"] == b.data["vehicle"] and _overlap(
                        a.data["start"], a.data["end"], b.data["start"], b.data["end"]):
                    errors.append(f"{a.eid} and {b.eid} double-book {a.data['vehicle']}")
        shifts = [e for e in live if e.tool == "assign_cook"]
        for hour in range(KITCHEN_OPENS, 24):
            n = sum(1 for e in shifts if e.data["start"] <= hour < e.data["end"])
            if n > KITCHEN_CAP:
                errors.append(f"kitchen holds {n} cooks at {hour}:00")
        return errors + self.money_errors("pay_deposit", self.priced)


def _live(world: World, tool: str) -> list[Any]:
    return [e for e in world.ledger.live_effects() if e.tool == tool]


def _trip_options(who: str, passengers: int, times: tuple[int, ...]) -> Any:
    """Pickups of ``who``: per arrival time and route, the cheapest vehicle that seats them and
    is free then (given the trips already made for this task)."""
    def options(done: dict[str, Any]) -> list[Option]:
        busy = [(r["vehicle"], r["start"], r["end"]) for r in done.values()
                if isinstance(r, dict) and "trip_id" in r]
        busy.append(("VAN2", 12, 14))  # the other event's trip, read from vehicle_calendar
        opts = []
        for t in times:
            for route in ROUTES:
                free = [v for v, (seats, _) in sorted(VEHICLES.items(), key=lambda kv: kv[1][1])
                        if seats >= passengers and not any(
                            bv == v and _overlap(t, t + TRIP_HOURS, bs, be)
                            for bv, bs, be in busy)]
                for v in free[:1]:
                    opts.append(Option("reserve_vehicle", lambda d, v=v, r=route, t=t: {
                        "who": who, "vehicle": v, "route": r, "start": t,
                        "passengers": passengers}, f"{v}:{route}@{t}"))
        return opts
    return options


def _deposit_options(event: str, slots: tuple[str, ...]) -> Any:
    id_fields = ("venue_booking", "catering_id", "band_id", "trip_id")

    def options(done: dict[str, Any]) -> list[Option]:
        def args(d: dict[str, Any]) -> dict[str, Any]:
            items = [d[s] for s in slots]
            return {"event": event, "amount": sum(int(i["price"]) for i in items),
                    "items": [str(next(v for k, v in i.items() if k in id_fields))
                              for i in items]}
        return [Option("pay_deposit", args, "card")]
    return options


def _shift_options(dish: str) -> Any:
    """Earliest start, then a free cook, such that the kitchen never holds more than three."""
    hours = DISHES[dish]

    def options(done: dict[str, Any]) -> list[Option]:
        shifts = [r for r in done.values() if isinstance(r, dict) and "shift_id" in r]
        opts = []
        for start in range(KITCHEN_OPENS, 20 - hours):
            end = start + hours
            full = any(sum(1 for s in shifts if s["start"] <= h < s["end"]) >= KITCHEN_CAP
                       for h in range(start, end))
            if full:
                continue
            for cook in COOKS:
                if any(s["cook"] == cook and _overlap(start, end, s["start"], s["end"])
                       for s in shifts):
                    continue
                opts.append(Option("assign_cook", lambda d, c=cook, s=start: {
                    "cook": c, "dish": dish, "start": s}, f"{cook}@{start}"))
            if len(opts) >= 4:
                break
        return opts
    return options


def scenarios() -> list[Scenario]:
    """A wedding (venue, caterer, band, guest shuttle, deposit) and a Thanksgiving dinner
    (four dishes in a three-cook kitchen, two airport pickups)."""
    guests = 70

    def venue_opts(done: dict[str, Any]) -> list[Option]:
        return [Option("book_venue", lambda d, v=v: {"event": "wedding", "venue": v,
                                                     "guests": guests}, v)
                for v, (cap, _) in sorted(VENUES.items(), key=lambda kv: kv[1][1])
                if cap >= guests]

    def caterer_opts(done: dict[str, Any]) -> list[Option]:
        return [Option("book_caterer", lambda d, c=c: {"event": "wedding", "caterer": c,
                                                       "meals": guests}, c)
                for c in sorted(CATERERS, key=lambda c: CATERERS[c][1])]

    def band_opts(done: dict[str, Any]) -> list[Option]:
        return [Option("hire_band", lambda d, b=b: {"event": "wedding", "band": b}, b)
                for b in sorted(BANDS, key=lambda b: BANDS[b])]

    def wedding_goal(w: World) -> bool:
        return all(len(_live(w, t)) == 1 for t in ("book_venue", "book_caterer", "hire_band",
                                                   "reserve_vehicle", "pay_deposit"))

    wedding = Scenario(
        "logistics", "wedding",
        [Slot("venue", venue_opts), Slot("caterer", caterer_opts), Slot("band", band_opts),
         Slot("shuttle", _trip_options("guests", 25, (14, 16))),
         Slot("deposit", _deposit_options("wedding", ("venue", "caterer", "band",
                                                      "shuttle")))],
        "Plan a wedding for 70: a venue, a caterer, a band, a shuttle for 25 guests from the "
        "airport at 14:00, and pay the deposit.", wedding_goal, make_world=LogisticsWorld)

    dishes = ("turkey", "sides", "pie", "bread")

    def dinner_goal(w: World) -> bool:
        cooked = sorted(e.data["dish"] for e in _live(w, "assign_cook"))
        picked = sorted(e.key.split(":")[0] for e in _live(w, "reserve_vehicle"))
        return cooked == sorted(dishes) and picked == ["dad", "mom"]

    dinner = Scenario(
        "logistics", "thanksgiving",
        [*(Slot(d, _shift_options(d)) for d in dishes),
         Slot("pickup_mom", _trip_options("mom", 1, (15, 17))),
         Slot("pickup_dad", _trip_options("dad", 2, (15, 17)))],
        "Cook turkey, sides, pie and bread (the kitchen holds three cooks), and pick mom and "
        "dad up at the airport when their flights land at 15:00.", dinner_goal,
        make_world=LogisticsWorld)
    return [wedding, dinner]
