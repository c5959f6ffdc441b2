"""A scripted tool world with real state and its own ledger, for testing RAC and its adapters.

:class:`TravelWorld` books flights, hotels and cars in a SQLite database (in memory by default,
or a file), independent of RAC's log, so a test can check the world itself after a run. Faults
are injected per tool and per call: transient or permanent, before the effect or after it
(the effect happened, then an error came back).
"""

from __future__ import annotations

import itertools
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from rac.errors import PermanentError, TransientError

#: ``transient``/``permanent`` raise RAC's own error classes (a tool that says what it means);
#: ``timeout``, ``reset`` and ``refused`` raise what real tools raise (``TimeoutError``,
#: ``ConnectionResetError``, ``ConnectionRefusedError``), ``value`` a ``ValueError``.
FaultKind = Literal["transient", "permanent", "timeout", "reset", "refused", "value"]
FaultPhase = Literal["before", "after"]

#: The compensation pairs of the travel world, as ``rac.RAC(compensations=...)`` takes them.
TRAVEL_COMPENSATIONS: dict[str, str] = {
    "book_flight": "cancel_flight",
    "book_hotel": "cancel_hotel",
    "book_car": "cancel_car",
    "rent_car": "return_rental",
    "charge_card": "refund_charge",
}
#: Tools of the travel world that change nothing.
TRAVEL_READ_ONLY = ["search_flights", "get_weather"]

_KIND_OF = {"book_flight": "flight", "book_hotel": "hotel", "book_car": "car",
            "rent_car": "car", "charge_card": "charge"}
_PREFIX = {"flight": "FL", "hotel": "HT", "car": "CR", "charge": "CH"}


@dataclass
class Fault:
    """A fault injected into calls of one tool.

    ``times`` is how many calls it hits (None: every call); ``skip`` lets the first calls through;
    ``when`` (optional) selects the calls by their arguments; ``phase`` is ``"before"`` (nothing
    happened) or ``"after"`` (the effect happened, then the error came back).
    """

    kind: FaultKind = "permanent"
    times: int | None = None
    phase: FaultPhase = "before"
    message: str = ""
    skip: int = 0
    retry_after: float | None = None
    when: Callable[[dict[str, Any]], bool] | None = None
    hits: int = field(default=0, init=False)
    seen: int = field(default=0, init=False)


class TravelWorld:
    """Flights, hotels, cars and card charges with real state.

    Every bound method named like a tool (``book_flight``, ``cancel_flight``, ...) is a tool with
    a typed signature and a docstring, ready to hand to a framework. ``tools()`` lists them.
    """

    def __init__(self, path: str = ":memory:") -> None:
        self.path = path
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS bookings (booking_id TEXT PRIMARY KEY, kind TEXT NOT NULL,"
            " who TEXT NOT NULL, place TEXT NOT NULL, detail TEXT, amount REAL NOT NULL DEFAULT 0,"
            " status TEXT NOT NULL, cancellations INTEGER NOT NULL DEFAULT 0)")
        self._db.execute("CREATE TABLE IF NOT EXISTS ledger (n INTEGER PRIMARY KEY AUTOINCREMENT,"
                         " tool TEXT NOT NULL, booking_id TEXT, event TEXT NOT NULL)")
        self._lock = threading.RLock()
        (count,) = self._db.execute("SELECT COUNT(*) FROM bookings").fetchone()
        self._ids = itertools.count(count + 101)
        self.faults: dict[str, list[Fault]] = {}
        self.calls: dict[str, int] = {}
        self.hooks: dict[str, Callable[[dict[str, Any]], None]] = {}

    # -- fault injection ---------------------------------------------------------------------
    def fail(self, tool: str, kind: FaultKind = "permanent", *, times: int | None = None,
             phase: FaultPhase = "before", message: str = "", skip: int = 0,
             retry_after: float | None = None,
             when: Callable[[dict[str, Any]], bool] | None = None) -> Fault:
        """Make calls of ``tool`` fail (see :class:`Fault`)."""
        fault = Fault(kind, times, phase, message, skip, retry_after, when)
        self.faults.setdefault(tool, []).append(fault)
        return fault

    def on_call(self, tool: str, fn: Callable[[dict[str, Any]], None]) -> None:
        """Run ``fn(args)`` at the start of every call of ``tool`` (to block, count, ...)."""
        self.hooks[tool] = fn

    def _enter(self, tool: str, args: dict[str, Any]) -> Fault | None:
        with self._lock:
            self.calls[tool] = self.calls.get(tool, 0) + 1
        hook = self.hooks.get(tool)
        if hook is not None:
            hook(args)
        for fault in self.faults.get(tool, []):
            if fault.when is not None and not fault.when(args):
                continue
            fault.seen += 1
            if fault.seen <= fault.skip or (fault.times is not None and fault.hits >= fault.times):
                continue
            fault.hits += 1
            if fault.phase == "before":
                self._raise(tool, fault)
            return fault
        return None

    @staticmethod
    def _raise(tool: str, fault: Fault) -> None:
        msg = fault.message or f"{tool} failed ({fault.kind})"
        if fault.kind == "transient":
            raise TransientError(msg, retry_after=fault.retry_after)
        if fault.kind == "timeout":
            raise TimeoutError(msg)
        if fault.kind == "reset":
            raise ConnectionResetError(msg)
        if fault.kind == "refused":
            raise ConnectionRefusedError(msg)
        if fault.kind == "value":
            raise ValueError(msg)
        raise PermanentError(msg)

    # -- effects ---------------------------------------------------------------------------------
    def _book(self, tool: str, who: str, place: str, detail: str, amount: float,
              args: dict[str, Any]) -> dict[str, Any]:
        fault = self._enter(tool, args)
        kind = _KIND_OF[tool]
        with self._lock:
            booking_id = f"{_PREFIX[kind]}-{next(self._ids)}"
            self._db.execute("INSERT INTO bookings VALUES (?,?,?,?,?,?, 'live', 0)",
                             (booking_id, kind, who, place, detail, amount))
            self._db.execute("INSERT INTO ledger(tool, booking_id, event) VALUES (?,?,'book')",
                             (tool, booking_id))
        if fault is not None:
            self._raise(tool, fault)
        return {"booking_id": booking_id, "kind": kind, "who": who, "place": place,
                "detail": detail, "amount": amount, "status": "confirmed"}

    def _cancel(self, tool: str, booking_id: str, kinds: tuple[str, ...]) -> dict[str, Any]:
        fault = self._enter(tool, {"booking_id": booking_id})
        with self._lock:
            row = self._db.execute("SELECT kind, status FROM bookings WHERE booking_id=?",
                                   (booking_id,)).fetchone()
            if row is None or row[0] not in kinds:
                # Tolerant: undoing what never happened is a no-op, said so in the result.
                self._db.execute("INSERT INTO ledger(tool, booking_id, event) VALUES "
                                 "(?,?,'cancel_missing')", (tool, booking_id))
                return {"booking_id": booking_id, "cancelled": False, "reason": "no such booking"}
            self._db.execute("UPDATE bookings SET status='cancelled', "
                             "cancellations=cancellations+1 WHERE booking_id=?", (booking_id,))
            self._db.execute("INSERT INTO ledger(tool, booking_id, event) VALUES "
                             "(?,?,'cancel')", (tool, booking_id))
        if fault is not None:
            self._raise(tool, fault)
        return {"booking_id": booking_id, "cancelled": True}

    # -- the tools -------------------------------------------------------------------------------
    def find_bookings(self, who: str, kind: str) -> dict[str, Any]:
        """List the live bookings of one kind (flight, hotel, car, charge) held by ``who``
        (read-only; what a lookup reconciles a call that may have happened with)."""
        self._enter("find_bookings", {"who": who, "kind": kind})
        with self._lock:
            rows = self._db.execute(
                "SELECT booking_id, kind, who, place, detail, amount FROM bookings "
                "WHERE who=? AND kind=? AND status='live' ORDER BY booking_id",
                (who, kind)).fetchall()
        return {"bookings": [{"booking_id": r[0], "kind": r[1], "who": r[2], "place": r[3],
                              "detail": r[4], "amount": r[5], "status": "confirmed"}
                             for r in rows]}

    def get_booking(self, booking_id: str) -> dict[str, Any]:
        """One booking as it is now (read-only; a before-image for changes to it)."""
        self._enter("get_booking", {"booking_id": booking_id})
        with self._lock:
            row = self._db.execute("SELECT booking_id, kind, who, place, detail, status "
                                   "FROM bookings WHERE booking_id=?", (booking_id,)).fetchone()
        if row is None:
            raise ValueError(f"no booking {booking_id}")
        return dict(zip(("booking_id", "kind", "who", "place", "detail", "status"), row,
                        strict=True))

    def change_detail(self, booking_id: str, detail: str) -> dict[str, Any]:
        """Change a booking's detail (seat, room type, ...): an update that only a
        before-image can undo (call it again with the previous detail)."""
        fault = self._enter("change_detail", {"booking_id": booking_id, "detail": detail})
        with self._lock:
            cur = self._db.execute("UPDATE bookings SET detail=? WHERE booking_id=?",
                                   (detail, booking_id))
            if cur.rowcount == 0:
                raise ValueError(f"no booking {booking_id}")
            self._db.execute("INSERT INTO ledger(tool, booking_id, event) VALUES "
                             "('change_detail', ?, ?)", (booking_id, f"detail={detail}"))
        if fault is not None:
            self._raise("change_detail", fault)
        return {"booking_id": booking_id, "detail": detail}

    def detail_of(self, booking_id: str) -> str | None:
        """The detail a booking has now (for assertions)."""
        with self._lock:
            row = self._db.execute("SELECT detail FROM bookings WHERE booking_id=?",
                                   (booking_id,)).fetchone()
        return row[0] if row else None

    def search_flights(self, origin: str, dest: str) -> dict[str, Any]:
        """List flights from origin to dest (read-only)."""
        self._enter("search_flights", {"origin": origin, "dest": dest})
        return {"flights": [f"{origin}-{dest}-{n}" for n in (1, 2)]}

    def get_weather(self, city: str) -> str:
        """Weather in a city (read-only)."""
        self._enter("get_weather", {"city": city})
        return f"sunny in {city}"

    def book_flight(self, passenger: str, origin: str, dest: str) -> dict[str, Any]:
        """Book a seat for passenger on a flight from origin to dest."""
        return self._book("book_flight", passenger, dest, f"{origin}->{dest}", 420.0, locals())

    def cancel_flight(self, booking_id: str) -> dict[str, Any]:
        """Cancel a flight booking."""
        return self._cancel("cancel_flight", booking_id, ("flight",))

    def book_hotel(self, guest: str, city: str, nights: int) -> dict[str, Any]:
        """Book a hotel room in city for a number of nights."""
        return self._book("book_hotel", guest, city, f"{nights} nights", 150.0 * nights, locals())

    def cancel_hotel(self, booking_id: str) -> dict[str, Any]:
        """Cancel a hotel booking."""
        return self._cancel("cancel_hotel", booking_id, ("hotel",))

    def book_car(self, driver: str, city: str) -> dict[str, Any]:
        """Book a rental car in city."""
        return self._book("book_car", driver, city, "compact", 90.0, locals())

    def cancel_car(self, booking_id: str) -> dict[str, Any]:
        """Cancel a car booking."""
        return self._cancel("cancel_car", booking_id, ("car",))

    def rent_car(self, driver: str, city: str) -> dict[str, Any]:
        """Rent a car from the partner agency (an alternative to book_car)."""
        return self._book("rent_car", driver, city, "partner", 110.0, locals())

    def return_rental(self, booking_id: str) -> dict[str, Any]:
        """Cancel a partner-agency rental."""
        return self._cancel("return_rental", booking_id, ("car",))

    def charge_card(self, customer: str, amount: float) -> dict[str, Any]:
        """Charge the customer's card."""
        return self._book("charge_card", customer, "card", "charge", amount, locals())

    def refund_charge(self, booking_id: str) -> dict[str, Any]:
        """Refund a card charge."""
        return self._cancel("refund_charge", booking_id, ("charge",))

    def tools(self) -> list[Callable[..., Any]]:
        """Every tool of the world, as bound methods."""
        return [self.search_flights, self.get_weather, self.book_flight, self.cancel_flight,
                self.book_hotel, self.cancel_hotel, self.book_car, self.cancel_car, self.rent_car,
                self.return_rental, self.charge_card, self.refund_charge]

    def lookup_tools(self) -> list[Callable[..., Any]]:
        """The reads and the update that lookups and before-images are tested with
        (``find_bookings``, ``get_booking`` read-only; ``change_detail`` changes a booking)."""
        return [self.find_bookings, self.get_booking, self.change_detail]

    # -- inspection ------------------------------------------------------------------------------
    def live(self, kind: str | None = None) -> list[dict[str, Any]]:
        """Bookings still live (optionally of one kind: flight, hotel, car, charge)."""
        sql = "SELECT booking_id, kind, who, place, detail, amount FROM bookings WHERE status='live'"
        params: tuple[Any, ...] = ()
        if kind:
            sql += " AND kind=?"
            params = (kind,)
        with self._lock:
            rows = self._db.execute(sql + " ORDER BY booking_id", params).fetchall()
        keys = ("booking_id", "kind", "who", "place", "detail", "amount")
        return [dict(zip(keys, r, strict=True)) for r in rows]

    def bookings(self) -> list[dict[str, Any]]:
        """Every booking ever made, with its status and how often it was cancelled."""
        with self._lock:
            rows = self._db.execute("SELECT booking_id, kind, who, place, status, cancellations "
                                    "FROM bookings ORDER BY booking_id").fetchall()
        keys = ("booking_id", "kind", "who", "place", "status", "cancellations")
        return [dict(zip(keys, r, strict=True)) for r in rows]

    def ledger(self) -> list[tuple[str, str | None, str]]:
        """Every effect in order: (tool, booking_id, event)."""
        with self._lock:
            return [tuple(r) for r in self._db.execute(
                "SELECT tool, booking_id, event FROM ledger ORDER BY n").fetchall()]

    def reset(self) -> None:
        """Forget every booking and ledger entry (faults and hooks stay), so that a scenario
        can run again from an empty world (``rac.testing.prove(setup=world.reset)``)."""
        with self._lock:
            self._db.execute("DELETE FROM bookings")
            self._db.execute("DELETE FROM ledger")
            self.calls.clear()
            for faults in self.faults.values():
                for fault in faults:
                    fault.hits = fault.seen = 0

    def close(self) -> None:
        """Close the world's database."""
        self._db.close()
