"""A correct setup for ``rac prove``'s crash points: a travel world whose booking tools take
idempotency keys, compensations that find a booking by its key when the outcome was never
logged, the world and the log in files of ``$RAC_PROVE_DIR`` (so they outlive a process).
Imported by name in the crash points' child processes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import rac
from rac.demo.crash import KEYED_COMPENSATIONS, KeyedTravelWorld
from rac.testing import TRAVEL_READ_ONLY

HERE = Path(os.environ["RAC_PROVE_DIR"])
world = KeyedTravelWorld(str(HERE / "world.db"))
engine = rac.RAC(compensations=KEYED_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                 tools=world.tools(), store=f"sqlite:///{HERE / 'rac.db'}",
                 load_entrypoints=False)
#: set by a child that got past the scenario: a crash must never get here
FINISHED = HERE / "finished"


def trip() -> None:
    try:
        with engine.run() as run:
            run.call(world.book_flight, passenger="ann", origin="SFO", dest="CDG")
            run.call(world.book_hotel, guest="ann", city="Paris", nights=2)
    finally:
        FINISHED.write_text("the scenario's cleanup ran")


def live() -> list[dict[str, Any]]:
    return world.live()


def reset() -> None:
    world.reset()
    FINISHED.unlink(missing_ok=True)
