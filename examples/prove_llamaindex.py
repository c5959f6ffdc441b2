"""Prove a LlamaIndex agent's rollback with ``rac prove``: a ``FunctionAgent`` with a scripted
model books a flight and a hotel under ``enable_rac``; prove fails each call, times each out
after its effect, fails each compensation, and checks the world after each::

    uv run python examples/prove_llamaindex.py     # prints the table, exit 0
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.tools import FunctionTool

import rac
from rac.demo.crash import KEYED_COMPENSATIONS, KeyedTravelWorld
from rac.testing import TRAVEL_READ_ONLY
from rac_llamaindex import enable_rac
from rac_llamaindex.testing import ScriptedModel

world = KeyedTravelWorld(str(Path(tempfile.mkdtemp(prefix="rac-prove-li-")) / "world.db"))
engine = rac.RAC(compensations=KEYED_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                 tools=world.tools(), store="memory://", load_entrypoints=False)


async def trip() -> None:
    """The scenario: one agent run that books ann a flight, then a hotel."""
    model = ScriptedModel([[("book_flight", {"passenger": "ann", "origin": "SFO",
                                             "dest": "CDG"})],
                           [("book_hotel", {"guest": "ann", "city": "Paris", "nights": 2})],
                           "Booked."])
    agent = FunctionAgent(tools=[FunctionTool.from_defaults(world.book_flight),
                                 FunctionTool.from_defaults(world.book_hotel)],
                          llm=model.function_calling_llm(), system_prompt="Book trips.")
    await enable_rac(agent, engine).run("Book ann a flight and a hotel in Paris.")


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
