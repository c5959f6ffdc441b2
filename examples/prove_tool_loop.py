"""Prove a bare tool loop's rollback with ``rac prove``, crash points included.

The world books with idempotency keys and its cancels find a booking by its key, so RAC can
undo even a call whose outcome was never logged (a crash after the effect). The log and the
world live in files, so they outlive a killed process::

    uv run python examples/prove_tool_loop.py            # prints the table, exit 0
    uv run rac prove --app prove_tool_loop:engine --scenario prove_tool_loop:trip \
        --check prove_tool_loop:live --setup prove_tool_loop:reset --crash   # from examples/
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import rac
from rac.demo.crash import KEYED_COMPENSATIONS, KeyedTravelWorld
from rac.testing import TRAVEL_READ_ONLY

HERE = Path(os.environ.get("RAC_PROVE_EXAMPLE_DIR") or tempfile.gettempdir()) / "rac-prove-loop"
HERE.mkdir(parents=True, exist_ok=True)
world = KeyedTravelWorld(str(HERE / "world.db"))
engine = rac.RAC(compensations=KEYED_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                 tools=world.tools(), store=f"sqlite:///{HERE / 'rac.db'}",
                 load_entrypoints=False)


def trip() -> None:
    """The scenario: book ann a flight, then a hotel, under one run."""
    with engine.run() as run:
        run.call(world.book_flight, passenger="ann", origin="SFO", dest="CDG")
        run.call(world.book_hotel, guest="ann", city="Paris", nights=2)


def live() -> list[dict[str, Any]]:
    """The check: what is still booked (nothing, after a rollback)."""
    return world.live()


def reset() -> None:
    """Start each run of the scenario from an empty world."""
    world.reset()


def main() -> int:
    """Prove it (crash points included) and print the table."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import prove_tool_loop as me  # by name, so crash points can import it in new processes

    proof = rac.testing.prove(me.trip, engine="prove_tool_loop:engine", check=me.live,
                              setup="prove_tool_loop:reset", crash=True)
    print(proof.table())
    return proof.exit_code


if __name__ == "__main__":
    sys.exit(main())
