"""Shared pieces of the LlamaIndex adapter tests: an engine over a travel world, the world's
tools as LlamaIndex tools, and the trip every test books."""

from __future__ import annotations

from typing import Any

from llama_index.core.tools import FunctionTool

import rac
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld, VirtualClock

PAR_FLIGHT = {"passenger": "ann", "origin": "OSL", "dest": "PAR"}
PAR_HOTEL = {"guest": "ann", "city": "PAR", "nights": 2}
PAR_CAR = {"driver": "ann", "city": "PAR"}
BOOKING_TOOLS = ("book_flight", "cancel_flight", "book_hotel", "cancel_hotel", "book_car",
                 "cancel_car", "rent_car", "return_rental")


def engine(**kw: Any) -> rac.RAC:
    """An engine with the travel world's declarations, a memory log and a virtual clock."""
    kw.setdefault("compensations", TRAVEL_COMPENSATIONS)
    kw.setdefault("read_only", TRAVEL_READ_ONLY)
    kw.setdefault("store", "memory://")
    kw.setdefault("clock", VirtualClock())
    kw.setdefault("retry", rac.RetryPolicy(max_attempts=3, initial_delay=0.5, jitter=0))
    return rac.RAC(**kw)


def world_tools(world: TravelWorld, names: tuple[str, ...] = BOOKING_TOOLS) -> list[FunctionTool]:
    """The world's tools as LlamaIndex ``FunctionTool`` objects."""
    return [FunctionTool.from_defaults(fn=getattr(world, n)) for n in names]


def records_of(run: rac.Run) -> list[tuple[str, str | None, str]]:
    """(tool, agent id, status) of each record of ``run``, in seq order."""
    return [(r.tool, r.agent_id, str(r.status)) for r in run.records()]


def cancellations(world: TravelWorld) -> list[str]:
    """The cancelling tools of the world's ledger, in the order they ran."""
    return [tool for tool, _, event in world.ledger() if event == "cancel"]
