"""Crash points for ``rac demo --crash-at`` and the crash tests, and a travel world whose tools
take idempotency keys, so that recovery can undo even a call whose outcome was never logged.

A crash point is ``"<tool>:<phase>"`` or ``"rollback:<phase>"``. When the demo reaches it the
process ends at once with :data:`CRASH_EXIT_CODE` through ``os._exit``: no ``finally`` blocks,
no rollback, no flushing; exactly what a killed process leaves behind.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from rac.hookspecs import hookimpl
from rac.models import Record, RecordKind, RecordStatus, RunStatus
from rac.registry import Compensation
from rac.serialize import as_fields
from rac.testing.world import TRAVEL_COMPENSATIONS, TravelWorld

#: The exit status of a process stopped at a crash point.
CRASH_EXIT_CODE = 86

#: The crash points the default demo (the car fails) passes through, in order.
CRASH_POINTS: list[str] = [
    "book_flight:after_intent", "book_flight:after_effect", "book_flight:after_outcome",
    "book_hotel:after_intent", "book_hotel:after_effect", "book_hotel:after_outcome",
    "book_car:after_intent",
    "rollback:after_status",
    "cancel_hotel:before_intent", "cancel_hotel:after_intent", "cancel_hotel:after_effect",
    "cancel_hotel:after_outcome", "cancel_hotel:after_compensated",
    "cancel_flight:before_intent", "cancel_flight:after_intent", "cancel_flight:after_effect",
    "cancel_flight:after_outcome", "cancel_flight:after_compensated",
    "rollback:after_end",
]


def _undo_args(args: Mapping[str, Any], result: Any) -> dict[str, Any]:
    """Cancel by booking id when the outcome is known, else by the action's idempotency key
    (an in-doubt call being recovered: the booking may or may not exist)."""
    fields = as_fields(result)
    if isinstance(fields, Mapping) and fields.get("booking_id"):
        return {"booking_id": fields["booking_id"]}
    return {"action_key": str(args.get("idempotency_key") or "")}


#: Compensations for :class:`KeyedTravelWorld`: by booking id, or by key for an in-doubt call.
KEYED_COMPENSATIONS: dict[str, Compensation] = {
    tool: Compensation(tool=undo, args=_undo_args) for tool, undo in TRAVEL_COMPENSATIONS.items()
}


class KeyedTravelWorld(TravelWorld):
    """A :class:`TravelWorld` whose booking tools accept an ``idempotency_key`` (a repeated
    call with the same key returns the first booking) and whose cancelling tools are
    idempotent and tolerant: cancelling twice changes nothing the second time, and cancelling
    by the key of a booking that never happened is a logged no-op."""

    def __init__(self, path: str = ":memory:") -> None:
        super().__init__(path)
        self._db.execute("CREATE TABLE IF NOT EXISTS booking_keys (key TEXT PRIMARY KEY, "
                         "booking_id TEXT NOT NULL)")
        # the runs `rac demo` made in this world: the only runs the demo's engine may undo
        self._db.execute("CREATE TABLE IF NOT EXISTS demo_runs (run_id TEXT PRIMARY KEY)")
        #: Called with the tool name right after an effect, before the tool returns.
        self.after_effect: Callable[[str], None] | None = None

    def _effect_done(self, tool: str) -> None:
        if self.after_effect is not None:
            self.after_effect(tool)

    def mark_demo_run(self, run_id: str) -> None:
        """Remember that ``rac demo`` made run ``run_id`` in this world (see
        :func:`rac.demo.trip.demo_runs`)."""
        with self._lock:
            self._db.execute("INSERT OR IGNORE INTO demo_runs VALUES (?)", (run_id,))

    def booking_for_key(self, key: str) -> str | None:
        """The booking made by the call with this idempotency key, if any."""
        with self._lock:
            row = self._db.execute("SELECT booking_id FROM booking_keys WHERE key=?",
                                   (key,)).fetchone()
        return str(row[0]) if row else None

    def _book(self, tool: str, who: str, place: str, detail: str, amount: float,
              args: dict[str, Any]) -> dict[str, Any]:
        key = args.get("idempotency_key")
        if key:
            existing = self.booking_for_key(key)
            if existing is not None:
                kind = self._db.execute("SELECT kind FROM bookings WHERE booking_id=?",
                                        (existing,)).fetchone()[0]
                return {"booking_id": existing, "kind": kind, "who": who, "place": place,
                        "detail": detail, "amount": amount, "status": "confirmed"}
        plain = {k: v for k, v in args.items() if k not in ("self", "idempotency_key")}
        newest = self._newest_booking()
        try:
            result = super()._book(tool, who, place, detail, amount, plain)
        except Exception:
            # A fault after the effect: the booking committed, and a keyed API records its
            # key with it, so a retry with the same key finds it instead of booking again.
            made = self._newest_booking()
            if key and made is not None and made != newest:
                with self._lock:
                    self._db.execute("INSERT OR IGNORE INTO booking_keys VALUES (?, ?)",
                                     (key, made))
            raise
        if key:
            with self._lock:
                self._db.execute("INSERT INTO booking_keys VALUES (?, ?)",
                                 (key, result["booking_id"]))
        self._effect_done(tool)
        return result

    def _newest_booking(self) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT booking_id FROM bookings ORDER BY rowid DESC "
                                   "LIMIT 1").fetchone()
        return str(row[0]) if row else None

    def _cancel_keyed(self, tool: str, booking_id: str, action_key: str,
                      kinds: tuple[str, ...]) -> dict[str, Any]:
        if not booking_id and action_key:
            booking_id = self.booking_for_key(action_key) or ""
        if not booking_id:
            with self._lock:
                self._db.execute("INSERT INTO ledger(tool, booking_id, event) VALUES "
                                 "(?, NULL, 'cancel_missing')", (tool,))
            self._effect_done(tool)
            return {"booking_id": None, "cancelled": False,
                    "reason": "no booking was made under that key"}
        with self._lock:
            row = self._db.execute("SELECT status FROM bookings WHERE booking_id=?",
                                   (booking_id,)).fetchone()
        if row is not None and row[0] == "cancelled":
            self._effect_done(tool)
            return {"booking_id": booking_id, "cancelled": True, "already": True}
        result = super()._cancel(tool, booking_id, kinds)
        self._effect_done(tool)
        return result

    def book_flight(self, passenger: str, origin: str, dest: str,
                    idempotency_key: str | None = None) -> dict[str, Any]:
        """Book a seat for passenger on a flight from origin to dest."""
        return self._book("book_flight", passenger, dest, f"{origin}->{dest}", 420.0, locals())

    def book_hotel(self, guest: str, city: str, nights: int,
                   idempotency_key: str | None = None) -> dict[str, Any]:
        """Book a hotel room in city for a number of nights."""
        return self._book("book_hotel", guest, city, f"{nights} nights", 150.0 * nights, locals())

    def book_car(self, driver: str, city: str,
                 idempotency_key: str | None = None) -> dict[str, Any]:
        """Book a rental car in city."""
        return self._book("book_car", driver, city, "compact", 90.0, locals())

    def rent_car(self, driver: str, city: str,
                 idempotency_key: str | None = None) -> dict[str, Any]:
        """Rent a car from the partner agency (an alternative to book_car)."""
        return self._book("rent_car", driver, city, "partner", 110.0, locals())

    def charge_card(self, customer: str, amount: float,
                    idempotency_key: str | None = None) -> dict[str, Any]:
        """Charge the customer's card."""
        return self._book("charge_card", customer, "card", "charge", amount, locals())

    def cancel_flight(self, booking_id: str = "", action_key: str = "",
                      idempotency_key: str | None = None) -> dict[str, Any]:
        """Cancel a flight booking (by id, or by the key of the booking call)."""
        return self._cancel_keyed("cancel_flight", booking_id, action_key, ("flight",))

    def cancel_hotel(self, booking_id: str = "", action_key: str = "",
                     idempotency_key: str | None = None) -> dict[str, Any]:
        """Cancel a hotel booking (by id, or by the key of the booking call)."""
        return self._cancel_keyed("cancel_hotel", booking_id, action_key, ("hotel",))

    def cancel_car(self, booking_id: str = "", action_key: str = "",
                   idempotency_key: str | None = None) -> dict[str, Any]:
        """Cancel a car booking (by id, or by the key of the booking call)."""
        return self._cancel_keyed("cancel_car", booking_id, action_key, ("car",))

    def return_rental(self, booking_id: str = "", action_key: str = "",
                      idempotency_key: str | None = None) -> dict[str, Any]:
        """Cancel a partner-agency rental (by id, or by the key of the booking call)."""
        return self._cancel_keyed("return_rental", booking_id, action_key, ("car",))

    def refund_charge(self, booking_id: str = "", action_key: str = "",
                      idempotency_key: str | None = None) -> dict[str, Any]:
        """Refund a card charge (by id, or by the key of the charging call)."""
        return self._cancel_keyed("refund_charge", booking_id, action_key, ("charge",))


def end_process(point: str) -> None:
    """End the process at once, as a crash would (exit :data:`CRASH_EXIT_CODE`)."""
    os._exit(CRASH_EXIT_CODE)


class CrashPlugin:
    """Ends the process hard when the run reaches ``point`` (see :data:`CRASH_POINTS`).

    ``action`` is what happens at the point (default: ``os._exit``); tests may pass a function
    that raises instead. ``hits`` counts how often the point was reached.
    """

    def __init__(self, point: str, *, undo: Mapping[str, str] | None = None,
                 action: Callable[[str], None] = end_process) -> None:
        self.point = point
        self.undo = dict(undo if undo is not None else TRAVEL_COMPENSATIONS)
        self.action = action
        self.hits = 0

    def reached(self, point: str) -> None:
        """Called at every point the run passes; acts at the chosen one."""
        if point == self.point:
            self.hits += 1
            self.action(point)

    def watch(self, world: KeyedTravelWorld) -> None:
        """Also stop after a world's effects (``<tool>:after_effect``)."""
        world.after_effect = lambda tool: self.reached(f"{tool}:after_effect")

    @hookimpl
    def rac_record_written(self, record: Record, previous: str | None) -> None:
        if record.kind is RecordKind.COMPENSATION:
            if previous is None:
                self.reached(f"{record.tool}:after_intent")
            elif record.status is RecordStatus.COMPLETED:
                self.reached(f"{record.tool}:after_outcome")
            return
        undo = self.undo.get(record.tool, record.tool)
        if previous is None and record.status is RecordStatus.PENDING:
            self.reached(f"{record.tool}:after_intent")
        elif record.status is RecordStatus.COMPLETED:
            self.reached(f"{record.tool}:after_outcome")
        elif record.status is RecordStatus.COMPENSATING:
            self.reached(f"{undo}:before_intent")
        elif record.status is RecordStatus.COMPENSATED:
            self.reached(f"{undo}:after_compensated")

    @hookimpl
    def rac_run_status_changed(self, run_id: str, status: RunStatus,
                               previous: RunStatus | None) -> None:
        if status is RunStatus.COMPENSATING:
            self.reached("rollback:after_status")
        elif status in (RunStatus.COMPENSATED, RunStatus.NEEDS_ATTENTION):
            self.reached("rollback:after_end")

