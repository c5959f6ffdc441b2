"""A LlamaIndex trip agent under RAC: the car fails, RAC undoes the hotel and the flight, the
model reads RAC's report and replans with the partner rental agency.

Offline (default) a scripted model drives the agent, so it runs with no key and no network::

    uv run python examples/llamaindex_trip.py

With ``RAC_MODEL`` set to an OpenAI model name (``gpt-4o-mini``; needs
``llama-index-llms-openai`` and ``OPENAI_API_KEY``) or an Anthropic one (``claude-...``; needs
``llama-index-llms-anthropic`` and ``ANTHROPIC_API_KEY``), the same agent runs on that model.
"""

from __future__ import annotations

import asyncio
import importlib
import os
from typing import Any

from llama_index.core.agent.workflow import FunctionAgent

import rac
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld
from rac_llamaindex import enable_rac, rac_run_of
from rac_llamaindex.testing import ModelInput, ScriptedModel

TRIP = ("Book ann a trip from OSL to PAR: a flight, 2 hotel nights and a car. If a booking "
        "fails, read the tool's message: RAC tells you what it undid. Then replan (the partner "
        "agency's rent_car is an option for cars) and book the whole trip again.")
FLIGHT = {"passenger": "ann", "origin": "OSL", "dest": "PAR"}
HOTEL = {"guest": "ann", "city": "PAR", "nights": 2}
CAR = {"driver": "ann", "city": "PAR"}


def replan(seen: ModelInput) -> list[tuple[str, dict[str, Any]]]:
    """The scripted model's fourth turn: it has read RAC's report and books again."""
    if "Undone" not in seen.tool_results()[-1]:
        raise RuntimeError(f"expected RAC's recovery report, got {seen.tool_results()[-1]!r}")
    return [("book_flight", FLIGHT)]


def offline_model() -> ScriptedModel:
    """A planner that books PAR, reads the report after the car fails, and replans."""
    return ScriptedModel([
        [("book_flight", FLIGHT)], [("book_hotel", HOTEL)], [("book_car", CAR)],
        replan, [("book_hotel", HOTEL)], [("rent_car", CAR)],
        "Booked ann's trip to PAR with a partner rental car (RAC undid the first bookings)."])


def real_model(name: str) -> Any:
    """The LlamaIndex model named by ``RAC_MODEL``, from its provider package."""
    module, cls = (("llama_index.llms.anthropic", "Anthropic") if name.startswith("claude")
                   else ("llama_index.llms.openai", "OpenAI"))
    try:
        provider = importlib.import_module(module)
    except ImportError as e:
        package = module.replace(".", "-").replace("_", "-")
        raise SystemExit(f"RAC_MODEL={name!r} needs the {package} package: {e}") from e
    return getattr(provider, cls)(model=name)


async def main() -> None:
    """Run the agent once and show the world, what the model was told, and the log."""
    world = TravelWorld()
    world.fail("book_car", "permanent", message="no cars left in PAR")
    model_name = os.environ.get("RAC_MODEL")
    script = None if model_name else offline_model()
    llm = real_model(model_name) if model_name else script.function_calling_llm()  # type: ignore[union-attr]
    agent = FunctionAgent(name="travel", llm=llm, tools=world.tools(),
                          system_prompt="You book complete trips with your tools.")
    enable_rac(agent, rac.RAC(compensations=TRAVEL_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                              store="memory://"))

    handler = agent.run(user_msg=TRIP)
    answer = await handler

    if script is not None:
        print("The model was told, as book_car's result:\n" + script.inputs[3].tool_results()[-1])
    print("\nAgent answer:", answer)
    print("Live bookings:", [(b["kind"], b["place"], b["detail"]) for b in world.live()])
    run = rac_run_of(handler)
    assert run is not None
    print(f"Run {run.run_id}: {run.status}")
    for r in run.records():
        print(f"  #{r.seq} {r.kind:<12} {r.tool:<14} {r.status:<12} by {r.agent_id}")


if __name__ == "__main__":
    asyncio.run(main())
