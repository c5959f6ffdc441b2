"""Issue 25, compensators: an error result of a compensator is retried under
``compensation_retry`` where a repeat is safe: a compensator declared idempotent, or one whose
error results are declared to come before any effect (``errors_before_effect``: nothing
happened, so another try cannot undo twice). An unsafe compensator's error result may have
come after it acted: it is not repeated, and the action is named. Checked on the travel world."""

from __future__ import annotations

from typing import Any

import pytest

import rac
from rac.testing import TravelWorld, VirtualClock


def busy_once(world: TravelWorld, seen: list[str]) -> Any:
    def cancel_flight(booking_id: str) -> dict[str, Any]:
        """Cancel a flight booking (the first call answers busy, before doing anything)."""
        seen.append(booking_id)
        if len(seen) == 1:
            return {"error": "busy, try again"}
        return world.cancel_flight(booking_id)

    return cancel_flight


@pytest.mark.parametrize("declared", ["idempotent", "before_effect", "nothing"])
def test_a_compensators_error_result_is_retried_where_a_repeat_is_safe(declared: str) -> None:
    world, seen = TravelWorld(), []
    tools = [t for t in world.tools() if t.__name__ != "cancel_flight"] + [busy_once(world, seen)]
    kw: dict[str, Any] = {
        "idempotent": {"effects": {"cancel_flight": "idempotent"}},
        "before_effect": {"errors_before_effect": {"cancel_flight": (rac.ResultError,)}},
        "nothing": {}}[declared]
    engine = rac.RAC(tools=tools, store="memory://", clock=VirtualClock(),
                     compensations={"book_flight": "cancel_flight"}, load_entrypoints=False,
                     compensation_retry=rac.RetryPolicy(max_attempts=3, initial_delay=1.0,
                                                        jitter=0), **kw)
    with engine.run() as run:
        run.call("book_flight", passenger="ann", origin="SFO", dest="CDG")
        report = run.rollback()
    if declared == "nothing":  # it may have cancelled before it answered: not repeated
        assert len(seen) == 1 and not report.clean and len(world.live("flight")) == 1
        assert "may have undone it, or not" in (report.left_live[0].error or "")
    else:
        assert len(seen) == 2 and report.clean and world.live() == []
    world.close()
