"""Prove a CrewAI crew's rollback with ``rac prove``: a one-agent crew with a scripted model
books a flight and a hotel under ``enable_rac``; prove fails each call, times each out after its
effect, fails each compensation, and checks the world after each::

    uv run python examples/prove_crewai.py     # prints the table, exit 0
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

# CrewAI phones home and writes under $HOME at import: keep this example offline and tidy
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
os.environ["HOME"] = tempfile.mkdtemp(prefix="rac-prove-crewai-")

from crewai import Agent, Crew, Task  # noqa: E402

import rac  # noqa: E402
from rac.demo.crash import KEYED_COMPENSATIONS, KeyedTravelWorld  # noqa: E402
from rac.testing import TRAVEL_READ_ONLY  # noqa: E402
from rac_crewai import enable_rac  # noqa: E402
from rac_crewai.testing import ScriptedLLM, world_tools  # noqa: E402

world = KeyedTravelWorld(str(Path(tempfile.mkdtemp(prefix="rac-prove-crewai-")) / "world.db"))
engine = rac.RAC(compensations=KEYED_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                 tools=world.tools(), store="memory://", load_entrypoints=False)


def trip() -> None:
    """The scenario: one kickoff of a travel crew that books ann a flight, then a hotel."""
    llm = ScriptedLLM([[("book_flight", {"passenger": "ann", "origin": "SFO", "dest": "CDG"})],
                       [("book_hotel", {"guest": "ann", "city": "Paris", "nights": 2})],
                       "Booked."])
    agent = Agent(role="travel agent", goal="Book trips", backstory="You book trips.",
                  llm=llm, tools=world_tools(world, "book_flight", "book_hotel"), max_iter=6)
    task = Task(description="Book ann a flight and a hotel in Paris.",
                expected_output="what was booked", agent=agent)
    enable_rac(Crew(agents=[agent], tasks=[task]), engine).kickoff()


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
