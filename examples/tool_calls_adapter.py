"""A complete RAC adapter for a hand-rolled, OpenAI-style ``tool_calls`` loop (no framework).

It is the worked example of docs/writing-an-adapter.md and uses only RAC's public API and the
adapter kit (:mod:`rac.adapters`):

* one agent invocation is one run (``open_or_join``: a run already open is joined);
* the calls of one model message run together (a thread pool, or ``asyncio.gather``) as one
  batch, keyed by the message, each through ``Batch.execute`` with an ``invoke`` that calls the
  tool the way the loop always did, so retries and alternatives re-invoke it;
* a small plugin (``rac_normalize_result``) tells RAC how to read this loop's tool output;
* on an unrecoverable failure the model gets the rendered report as the tool message, and the
  loop goes on so the model can replan.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import rac
from rac.adapters import Batch, batch_key, engine_for, failure_text, open_or_join

Message = dict[str, Any]
Model = Callable[[list[Message]], Message]
Execute = Callable[[str, dict[str, Any], Message], Message]
AsyncExecute = Callable[[str, dict[str, Any], Message], Awaitable[Message]]


# -- the loop as it was before RAC -------------------------------------------------------------
def call_tool(tools: dict[str, Callable[..., Any]], name: str, args: dict[str, Any]) -> str:
    """How this loop runs a tool: call it, JSON-encode the result."""
    return json.dumps(tools[name](**args))


def _parse(call: Message) -> tuple[str, dict[str, Any]]:
    return call["function"]["name"], json.loads(call["function"]["arguments"] or "{}")


def agent_loop(model: Model, tools: dict[str, Callable[..., Any]], user: str,
               execute: Execute | None = None, max_turns: int = 10,
               workers: int | None = None) -> list[Message]:
    """Ask the model, run the tool calls it asks for (those of one reply together, in a thread
    pool of ``workers`` threads, default one per call; 1: one after another), feed the results
    back, until it answers."""
    messages: list[Message] = [{"role": "user", "content": user}]
    for _ in range(max_turns):
        reply = model(messages)
        messages.append(reply)
        calls = reply.get("tool_calls") or []
        if not calls:
            break

        def one(call: Message, reply: Message = reply) -> Message:
            name, args = _parse(call)
            if execute is None:
                return {"role": "tool", "content": call_tool(tools, name, args)}
            return execute(name, args, reply)

        with ThreadPoolExecutor(max_workers=workers or max(1, len(calls))) as pool:
            results = list(pool.map(one, calls))
        for call, result in zip(calls, results, strict=True):
            messages.append({"tool_call_id": call["id"], "name": call["function"]["name"],
                             **result})
    return messages


async def aagent_loop(model: Model, tools: dict[str, Callable[..., Any]], user: str,
                      execute: AsyncExecute, max_turns: int = 10) -> list[Message]:
    """Async :func:`agent_loop`: the calls of one reply run in ``asyncio.gather``."""
    messages: list[Message] = [{"role": "user", "content": user}]
    for _ in range(max_turns):
        reply = model(messages)
        messages.append(reply)
        calls = reply.get("tool_calls") or []
        if not calls:
            break
        results = await asyncio.gather(*(execute(*_parse(c), reply) for c in calls))
        for call, result in zip(calls, results, strict=True):
            messages.append({"tool_call_id": call["id"], "name": call["function"]["name"],
                             **result})
    return messages


# -- the adapter -------------------------------------------------------------------------------
class JSONToolOutput:
    """Tells RAC how to read this loop's tool output: JSON text becomes structured data."""

    @rac.hookimpl
    def rac_normalize_result(self, tool: str, result: Any) -> Any:
        if isinstance(result, str):
            try:
                return json.loads(result)
            except ValueError:
                return None
        return None


def _reply(outcome: rac.CallOutcome) -> Message:
    if outcome.ok:
        return {"role": "tool", "content": outcome.result}
    return {"role": "tool", "content": failure_text(outcome), "is_error": True}


def rac_agent_loop(engine: rac.RAC, model: Model, tools: dict[str, Callable[..., Any]],
                   user: str, *, agent_id: str = "assistant",
                   workers: int | None = None) -> tuple[rac.Run, list[Message]]:
    """Run :func:`agent_loop` with every tool call under RAC; one invocation is one run."""
    engine = engine_for(engine, {}, plugin=JSONToolOutput(), plugin_name="tool_calls.json")
    with open_or_join(engine, agent_id=agent_id, tools=list(tools.values())) as run:

        def execute(name: str, args: dict[str, Any], reply: Message) -> Message:
            batch = Batch(run, batch_key(id(reply)))  # the calls of one model message
            return _reply(batch.execute(name, args, lambda n, a: call_tool(tools, n, a),
                                        agent_id=agent_id))

        messages = agent_loop(model, tools, user, execute=execute, workers=workers)
    return run, messages


async def arac_agent_loop(engine: rac.RAC, model: Model, tools: dict[str, Callable[..., Any]],
                          user: str, *, agent_id: str = "assistant"
                          ) -> tuple[rac.Run, list[Message]]:
    """Async :func:`rac_agent_loop`."""
    engine = engine_for(engine, {}, plugin=JSONToolOutput(), plugin_name="tool_calls.json")
    async with open_or_join(engine, agent_id=agent_id, tools=list(tools.values())) as run:

        async def ainvoke(name: str, args: dict[str, Any]) -> str:
            return await asyncio.to_thread(call_tool, tools, name, args)

        async def execute(name: str, args: dict[str, Any], reply: Message) -> Message:
            batch = Batch(run, batch_key(id(reply)))
            return _reply(await batch.aexecute(name, args, ainvoke, agent_id=agent_id))

        messages = await aagent_loop(model, tools, user, execute)
    return run, messages
