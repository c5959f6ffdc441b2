"""Prove a LangGraph agent's rollback with ``rac prove``: a ``create_agent`` agent with a
scripted model books a flight and a hotel under ``RACMiddleware``; prove fails each call, times
each out after its effect, fails each compensation, and checks the world after each::

    uv run python examples/prove_langgraph.py     # prints the table, exit 0
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from langchain.agents import create_agent

import rac
from rac.demo.crash import KEYED_COMPENSATIONS, KeyedTravelWorld
from rac.testing import TRAVEL_READ_ONLY
from rac_langgraph import RACMiddleware
from rac_langgraph.testing import call, say, scripted_model, turn, world_tools

world = KeyedTravelWorld(str(Path(tempfile.mkdtemp(prefix="rac-prove-lg-")) / "world.db"))
engine = rac.RAC(compensations=KEYED_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                 tools=world.tools(), store="memory://", load_entrypoints=False)
OFFERED = ("book_flight", "book_hotel")


def trip() -> None:
    """The scenario: one agent turn that books ann a flight, then a hotel."""
    model = scripted_model(
        turn(call("book_flight", passenger="ann", origin="SFO", dest="CDG")),
        turn(call("book_hotel", guest="ann", city="Paris", nights=2)),
        say("Booked."))
    agent = create_agent(model, world_tools(world, OFFERED),
                         middleware=[RACMiddleware(rac=engine)])
    agent.invoke({"messages": [("user", "flight and hotel to Paris")]})


def live() -> list[dict[str, Any]]:
    """The check: what is still booked."""
    return world.live()


def main() -> int:
    """Prove it and print the table."""
    proof = rac.testing.prove(trip, engine=engine, check=live, setup=world.reset)
    print(proof.table())
    return proof.exit_code


if __name__ == "__main__":
    sys.exit(main())
