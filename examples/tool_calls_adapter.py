"""A complete RAC adapter for a hand-rolled, OpenAI-style ``tool_calls`` loop (no framework).

It is the worked example of docs/writing-an-adapter.md and uses only RAC's public API:

* one agent invocation is one run (``engine.run``);
* each tool call goes through ``run.execute`` with an ``invoke`` that calls the tool the way the
  loop always did, so retries and alternatives re-invoke it;
* a small plugin (``rac_normalize_result``) tells RAC how to read this loop's tool output;
* on an unrecoverable failure the model gets the rendered report as the tool message, and the
  loop goes on so the model can replan.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import rac

Message = dict[str, Any]
Model = Callable[[list[Message]], Message]


# -- the loop as it was before RAC -------------------------------------------------------------
def call_tool(tools: dict[str, Callable[..., Any]], name: str, args: dict[str, Any]) -> str:
    """How this loop runs a tool: call it, JSON-encode the result."""
    return json.dumps(tools[name](**args))


def agent_loop(model: Model, tools: dict[str, Callable[..., Any]], user: str,
               execute: Callable[[str, dict[str, Any]], Message] | None = None,
               max_turns: int = 10) -> list[Message]:
    """Ask the model, run the tool calls it asks for, feed the results back, until it answers."""
    messages: list[Message] = [{"role": "user", "content": user}]
    for _ in range(max_turns):
        reply = model(messages)
        messages.append(reply)
        calls = reply.get("tool_calls") or []
        if not calls:
            break
        for call in calls:
            name = call["function"]["name"]
            args = json.loads(call["function"]["arguments"] or "{}")
            if execute is None:
                content = call_tool(tools, name, args)
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": content})
            else:
                messages.append({"tool_call_id": call["id"], **execute(name, args)})
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


def rac_agent_loop(engine: rac.RAC, model: Model, tools: dict[str, Callable[..., Any]],
                   user: str, *, agent_id: str = "assistant") -> tuple[rac.Run, list[Message]]:
    """Run :func:`agent_loop` with every tool call under RAC; one invocation is one run."""
    if not any(isinstance(p, JSONToolOutput) for p in engine.plugin_manager.get_plugins()):
        engine.register_plugin(JSONToolOutput())
    with engine.run(agent_id=agent_id, tools=list(tools.values())) as run:

        def execute(name: str, args: dict[str, Any]) -> Message:
            outcome = run.execute(name, args, lambda n, a: call_tool(tools, n, a))
            if outcome.ok:
                return {"role": "tool", "content": outcome.result}
            return {"role": "tool", "content": outcome.message or "error", "is_error": True}

        messages = agent_loop(model, tools, user, execute=execute)
    return run, messages
