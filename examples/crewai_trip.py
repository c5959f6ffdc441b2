"""A CrewAI trip crew under RAC: the car fails, RAC undoes the hotel and the flight, the agent
replans to another city.

Offline (default) a scripted model drives the crew, so it runs with no key and no network::

    uv run python examples/crewai_trip.py

With ``RAC_MODEL`` set (any model name CrewAI's ``LLM`` accepts, e.g. ``gpt-4o-mini``) and that
provider's API key in the environment, the same crew runs on a real model.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

# CrewAI reads these at import: no telemetry, no tracing, and its files go to a scratch HOME.
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
if not os.environ.get("RAC_MODEL"):
    os.environ["HOME"] = tempfile.mkdtemp(prefix="rac-crewai-example-")

from crewai import LLM, Agent, Crew, Task  # noqa: E402
from crewai.llms.base_llm import BaseLLM  # noqa: E402
from crewai.tools import tool  # noqa: E402

import rac  # noqa: E402
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld  # noqa: E402
from rac_crewai import enable_rac  # noqa: E402

TRIP = "Book ann a trip from SFO: flight, 3 hotel nights and a car, in PAR if possible."


class OfflineModel(BaseLLM):
    """Plays a planner that books PAR, reads RAC's report after the car fails, and books NCE."""

    llm_type: str = "offline"
    turn: int = 0
    report: str = ""

    def supports_function_calling(self) -> bool:
        return True

    def supports_stop_words(self) -> bool:
        return False

    def get_context_window_size(self) -> int:
        return 100_000

    def call(self, messages: Any, tools: Any = None, callbacks: Any = None,
             available_functions: Any = None, from_task: Any = None, from_agent: Any = None,
             response_model: Any = None) -> Any:
        last = str(messages[-1].get("content", ""))
        self.turn += 1
        city = "NCE" if self.turn > 3 else "PAR"
        if self.turn == 4:
            self.report = last
            if "Undone" not in last:
                return f"Stopped: expected a recovery report, got {last!r}"
        plan = {1: "book_flight", 2: "book_hotel", 3: "book_car",
                4: "book_flight", 5: "book_hotel", 6: "book_car"}
        name = plan.get(self.turn)
        if name is None:
            return "Booked ann's trip to NCE (PAR had no cars; RAC undid the PAR bookings)."
        args = {"book_flight": {"passenger": "ann", "origin": "SFO", "dest": city},
                "book_hotel": {"guest": "ann", "city": city, "nights": 3},
                "book_car": {"driver": "ann", "city": city}}[name]
        return [{"id": f"t{self.turn}", "type": "function",
                 "function": {"name": name, "arguments": json.dumps(args)}}]


def build_crew(world: TravelWorld) -> Crew:
    """A one-agent travel crew with the travel world's tools."""
    model_name = os.environ.get("RAC_MODEL")
    model: BaseLLM | LLM = LLM(model=model_name) if model_name else OfflineModel(model="offline")
    tools = [tool(fn.__name__)(fn) for fn in world.tools()]
    agent = Agent(role="travel agent", goal="Book complete trips; replan when a step fails.",
                  backstory="You book flights, hotels and cars with the tools you have.",
                  llm=model, tools=tools, max_iter=12)
    task = Task(description=TRIP, expected_output="What was booked", agent=agent)
    return Crew(agents=[agent], tasks=[task])


def main() -> None:
    """Run the crew once and show the world, what the agent was told, and the log."""
    world = TravelWorld()
    world.fail("book_car", "permanent", message="no cars left in PAR",
               when=lambda args: args["city"] == "PAR")
    engine = rac.RAC(compensations=TRAVEL_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                     store="memory://")
    crew = enable_rac(build_crew(world), engine)

    out = crew.kickoff()

    model = crew.agents[0].llm
    if isinstance(model, OfflineModel):
        print("The agent was told, as book_car's result:\n" + model.report + "\n")
    print("Crew answer:", out.raw)
    print("Live bookings:", [(b["kind"], b["place"]) for b in world.live()])
    for run in engine.store.list_runs():
        print(f"Run {run.run_id}: {run.status}")
        for r in engine.store.get_records(run.run_id):
            print(f"  #{r.seq} {r.kind:<12} {r.tool:<14} {r.status:<12} by {r.agent_id}")


if __name__ == "__main__":
    main()
