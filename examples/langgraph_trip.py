"""A LangChain agent books a trip under RAC; the car fails, RAC undoes the rest, the agent replans.

Offline (default), a scripted model drives the agent, so the run is the same every time:

    uv run python examples/langgraph_trip.py

With ``RAC_MODEL`` set (e.g. ``openai:gpt-4o-mini``) and that provider's package and API key
installed, the same agent runs on a real model through ``init_chat_model``:

    RAC_MODEL=openai:gpt-4o-mini uv run python examples/langgraph_trip.py
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import Any

import structlog
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import StructuredTool

import rac
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld
from rac_langgraph import RACMiddleware

PROMPT = ("Book ann a flight LHR->CDG, a hotel in Paris for 2 nights and a car in Paris. "
          "If a step fails, read the tool's report and replan, e.g. rent a car from the "
          "partner agency instead.")
OFFERED = ("book_flight", "book_hotel", "book_car", "rent_car", "get_weather")


class ScriptedModel(GenericFakeChatModel):
    """A stand-in for a real model: answers with scripted messages."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedModel:
        return self


def _call(name: str, n: int, **args: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call-{n}",
                                              "type": "tool_call"}])


def scripted_model() -> BaseChatModel:
    """Books flight, hotel and car; after RAC's report, books again with a partner car."""
    flight = {"passenger": "ann", "origin": "LHR", "dest": "CDG"}
    hotel = {"guest": "ann", "city": "Paris", "nights": 2}
    car = {"driver": "ann", "city": "Paris"}
    return ScriptedModel(messages=iter([
        _call("book_flight", 1, **flight), _call("book_hotel", 2, **hotel),
        _call("book_car", 3, **car),
        _call("book_flight", 4, **flight), _call("book_hotel", 5, **hotel),
        _call("rent_car", 6, **car),
        AIMessage(content="Done: flight, hotel and a partner-agency car are booked."),
    ]))


def chosen_model() -> BaseChatModel:
    """The model named by ``RAC_MODEL``, else the scripted one."""
    name = os.environ.get("RAC_MODEL")
    if not name:
        return scripted_model()
    from langchain.chat_models import init_chat_model

    return init_chat_model(name, temperature=0)


def main() -> None:
    """Run the agent once and show what the model saw and what the world holds."""
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    world = TravelWorld()
    world.fail("book_car", "permanent", message="no cars left at CDG", times=1)
    tools = [StructuredTool.from_function(fn) for fn in world.tools()]
    offered = [t for t in tools if t.name in OFFERED]
    hidden = [t for t in tools if t.name not in OFFERED]  # compensators: RAC calls them
    middleware = RACMiddleware(compensations=TRAVEL_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                               tools=hidden, store="memory://", agent_id="travel")
    agent = create_agent(chosen_model(), offered, middleware=[middleware],
                         system_prompt="You are a travel agent. Use the tools.")

    out = agent.invoke({"messages": [("user", PROMPT)]})

    for msg in out["messages"]:
        status = getattr(msg, "status", "")
        label = f"{msg.type}{'/' + status if status == 'error' else ''}"
        text = msg.content if msg.content else ", ".join(
            f"{c['name']}({c['args']})" for c in getattr(msg, "tool_calls", []))
        print(f"[{label}] {text}")
    print("\nlive bookings:", [(b["booking_id"], b["kind"], b["detail"]) for b in world.live()])
    engine = middleware.engine
    for info in engine.store.list_runs():
        print(f"\nrun {info.run_id}: {info.status}")
        for r in engine.store.get_records(info.run_id):
            print(f"  #{r.seq} {r.kind:<12} {r.tool:<14} {r.status}")
    kinds = sorted(b["kind"] for b in world.live())
    if not os.environ.get("RAC_MODEL"):
        assert kinds == ["car", "flight", "hotel"], kinds
        assert any(r.status is rac.RecordStatus.COMPENSATED
                   for r in engine.store.get_records(engine.store.list_runs()[0].run_id))


if __name__ == "__main__":
    main()
