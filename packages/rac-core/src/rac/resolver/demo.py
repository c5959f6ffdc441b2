"""``rac demo --llm``: the trip booking where the hotel's undo is found by a model.

The hotel has no declared pair, and the tool that undoes it, ``release_room``, takes a
``reservation`` (the booking's ``booking_id``): RAC can neither find the pair nor map its
argument by itself. The resolver asks the model both questions, checks the answers and stores
them in the log; the run then rolls back as usual. ``--llm scripted`` answers from a script,
offline; ``--llm model`` asks the model named by ``RAC_MODEL`` (a LangChain
``init_chat_model`` name such as ``openai:gpt-4o-mini``, with its provider package installed
and its API key in the environment).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from rac.demo.trip import DEMO_STEPS, FAIL_CHOICES, DemoResult, world_path_for, world_state
from rac.engine import RAC
from rac.errors import ConfigurationError, ToolCallFailed
from rac.models import PairRecord
from rac.resolver.book import LLM, pair_book
from rac.resolver.chat import ChatModel, PromptFn
from rac.resolver.plugin import LLMResolver
from rac.resolver.scripted import ScriptedModel
from rac.retry import RetryPolicy
from rac.stores import DEFAULT_STORE_URL, open_store
from rac.testing.world import TRAVEL_READ_ONLY, TravelWorld
from rac.tools import Tool

#: The ``--llm`` choices.
LLM_CHOICES = ("scripted", "model")
#: The scripted model's answers: the hotel's compensator, then its argument mapping.
SCRIPTED_ANSWERS = [json.dumps({"compensator": "release_room"}),
                    json.dumps({"args": {"reservation": "result.booking_id"}})]
#: API key variables of the providers RAC_MODEL commonly names (checked before asking).
PROVIDER_KEYS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY",
                 "google_genai": "GOOGLE_API_KEY", "mistralai": "MISTRAL_API_KEY",
                 "groq": "GROQ_API_KEY"}


def release_room(world: TravelWorld) -> Tool:
    """The hotel's undo, under a name and a parameter RAC cannot match by itself."""
    # Tool(params=) takes a JSON schema too, though its annotation says list[str]
    schema: Any = {"type": "object",
                   "properties": {"reservation": {"type": "string",
                                                  "description": "the hotel booking's id"}},
                   "required": ["reservation"]}
    return Tool("release_room", call=lambda a: world.cancel_hotel(booking_id=a["reservation"]),
                params=schema,
                description="Release a hotel room that was booked, given the reservation.")


def real_model() -> ChatModel:
    """The chat model ``RAC_MODEL`` names, through LangChain's ``init_chat_model`` (imported
    here, only when asked for). Raises ConfigurationError naming what is missing."""
    name = os.environ.get("RAC_MODEL")
    if not name:
        raise ConfigurationError("--llm model needs RAC_MODEL, e.g. RAC_MODEL=openai:gpt-4o-mini "
                                 "(and that provider's API key); --llm scripted runs offline")
    provider = name.partition(":")[0] if ":" in name else ""
    key = PROVIDER_KEYS.get(provider)
    if key is not None and not os.environ.get(key):
        raise ConfigurationError(f"RAC_MODEL={name} needs {key} in the environment")
    try:
        from langchain.chat_models import init_chat_model
    except ImportError as e:
        raise ConfigurationError(f"--llm model needs LangChain: pip install langchain "
                                 f"({e})") from e
    try:
        model: ChatModel = init_chat_model(name, temperature=0)
    except ImportError as e:
        raise ConfigurationError(f"RAC_MODEL={name}: the provider's package is missing ({e})"
                                 ) from e
    return model


def run_llm_demo(llm: str, fail: str = "car", store: str | None = None
                 ) -> tuple[DemoResult, list[PairRecord]]:
    """The demo's trip with the hotel's pair found by ``llm`` (``scripted`` or ``model``);
    returns the run and the pairs the model proposed."""
    if llm not in LLM_CHOICES:
        raise ValueError(f"--llm must be one of {', '.join(LLM_CHOICES)}, got {llm!r}")
    if fail not in FAIL_CHOICES:
        raise ValueError(f"--fail must be one of {', '.join(FAIL_CHOICES)}, got {fail!r}")
    model: ChatModel | PromptFn = ScriptedModel(SCRIPTED_ANSWERS) if llm == "scripted" \
        else real_model()
    store_url = store or os.environ.get("RAC_STORE") or DEFAULT_STORE_URL
    path = world_path_for(store_url)
    log = open_store(store_url)  # first: a log RAC may not write to leaves the world alone
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        Path(path + suffix).unlink(missing_ok=True)
    world = TravelWorld(path)
    if fail != "none":
        world.fail(f"book_{fail}", "permanent", message=f"no {fail} available on those dates")
    tools: list[Any] = [t for t in world.tools() if getattr(t, "__name__", "") != "cancel_hotel"]
    engine = RAC(compensations={"book_flight": "cancel_flight", "book_car": "cancel_car"},
                 read_only=TRAVEL_READ_ONLY, tools=[*tools, release_room(world)],
                 store=log, agent_id="demo-agent",
                 plugins=[LLMResolver(model, policy="auto")],
                 retry=RetryPolicy(max_attempts=3, initial_delay=0.05, max_delay=0.2, jitter=0),
                 compensation_retry=RetryPolicy(max_attempts=3, initial_delay=0.05,
                                                max_delay=0.2, jitter=0))
    agent_saw: list[str] = []
    try:
        with engine.run(agent_id="demo-agent") as run:
            for tool, args in DEMO_STEPS:
                try:
                    result = run.call(tool, **args)
                except ToolCallFailed as failed:
                    agent_saw.append(str(failed))
                    break
                agent_saw.append(f"{tool} -> {result['booking_id']}")
        pairs = [p for p in pair_book(engine.store).list_pairs() if p.source == LLM]
        return DemoResult(run.run_id, run.status, engine.store.get_records(run.run_id),
                          world_state(world), agent_saw), pairs
    finally:
        world.close()
        engine.store.close()
