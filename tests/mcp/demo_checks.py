"""What every `rac demo` variant's JSON says after the trip failed at the car and was undone."""

from __future__ import annotations

from typing import Any


def assert_trip_undone(data: dict[str, Any], *, hotel_undo: str) -> None:
    """The run is compensated, the world empty, and the log holds the three bookings and the
    two undos, the hotel's by ``hotel_undo``, newest first."""
    assert data["status"] == "compensated"
    assert data["world"] == {"flights": [], "hotels": [], "cars": []}
    assert [(r["tool"], r["kind"], r["status"], r["compensates"]) for r in data["records"]] == [
        ("book_flight", "action", "compensated", None),
        ("book_hotel", "action", "compensated", None),
        ("book_car", "action", "failed", None),
        (hotel_undo, "compensation", "completed", 2),
        ("cancel_flight", "compensation", "completed", 1)]
