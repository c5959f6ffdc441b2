"""A Semantic Kernel trip agent under RAC: the car fails, RAC undoes the hotel and the flight,
the agent replans to another city.

Offline (default) a scripted chat completion service plays the model, so it runs with no key
and no network::

    uv run python examples/semantic_kernel_trip.py

With ``RAC_MODEL`` set (an OpenAI chat model name, e.g. ``gpt-4o-mini``) and ``OPENAI_API_KEY``
in the environment, the same agent runs on the real model.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

from semantic_kernel import Kernel
from semantic_kernel.agents import ChatCompletionAgent
from semantic_kernel.connectors.ai.chat_completion_client_base import ChatCompletionClientBase
from semantic_kernel.connectors.ai.function_choice_behavior import FunctionChoiceBehavior
from semantic_kernel.contents import ChatHistory

import rac
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld
from rac_semantic_kernel import enable_rac
from rac_semantic_kernel.testing import Call, ScriptedChatCompletion, TravelPlugin

TRIP = "Book ann a trip from SFO: flight, 3 hotel nights and a car, in PAR if possible."
INSTRUCTIONS = ("You book trips with the travel functions. If RAC reports that it undid the "
                "bookings, choose another city (NCE) and book the whole trip again.")


def trip(city: str) -> list[Call]:
    return [Call("travel", "book_flight", {"passenger": "ann", "origin": "SFO", "dest": city}),
            Call("travel", "book_hotel", {"guest": "ann", "city": city, "nights": 3}),
            Call("travel", "book_car", {"driver": "ann", "city": city})]


def offline_model() -> ScriptedChatCompletion:
    """Books PAR; once RAC's report says everything was undone, books NCE."""

    def after_report(history: ChatHistory) -> str | list[Call]:
        last = str(history.messages[-1].items[0]) if history.messages[-1].items else ""
        if "Undone" not in last:
            return "Something unexpected happened."
        return trip("NCE")  # the three calls of one turn run in parallel

    return ScriptedChatCompletion([
        trip("PAR")[:2],
        trip("PAR")[2:],
        after_report,
        "No car was left in Paris, so I undid that trip and booked Nice instead: flight, "
        "3 nights and a car.",
    ])


def real_model(name: str) -> ChatCompletionClientBase:
    from semantic_kernel.connectors.ai.open_ai import OpenAIChatCompletion

    return OpenAIChatCompletion(ai_model_id=name)


async def main() -> dict[str, Any]:
    logging.getLogger("semantic_kernel").setLevel(logging.CRITICAL)
    world = TravelWorld()
    world.fail("book_car", "permanent", message="no cars left in PAR",
               when=lambda args: args.get("city") == "PAR")
    kernel = Kernel()
    kernel.add_plugin(TravelPlugin(world), plugin_name="travel")
    model_name = os.environ.get("RAC_MODEL")
    service = real_model(model_name) if model_name else offline_model()
    agent = ChatCompletionAgent(service=service, kernel=kernel, name="planner",
                                instructions=INSTRUCTIONS,
                                function_choice_behavior=FunctionChoiceBehavior.Auto())
    engine = rac.RAC(compensations=TRAVEL_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                     store="memory://")
    enable_rac(agent, rac=engine)

    response = await agent.get_response(messages=TRIP)

    (info,) = engine.store.list_runs()
    summary = {
        "answer": str(response.message.content),
        "live": sorted((b["kind"], b["place"]) for b in world.live()),
        "log": [(r.tool, str(r.status)) for r in engine.store.get_records(info.run_id)],
    }
    print(summary["answer"])
    print("live bookings:", summary["live"])
    for tool, status in summary["log"]:
        print(f"  {tool:24} {status}")
    return summary


if __name__ == "__main__":
    asyncio.run(main())
