"""Test helpers: a scripted CrewAI model, the travel world as CrewAI tools, and readers of
what the agent was told."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from crewai.llms.base_llm import BaseLLM
from crewai.tools import BaseTool, tool
from pydantic import Field

import rac
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld, VirtualClock

Call = tuple[str, dict[str, Any]]
Step = str | list[Call] | Callable[[list[dict[str, Any]]], "str | list[Call]"]


class ScriptedLLM(BaseLLM):
    """A model that answers from a script: a list of tool-call turns or final texts.

    A step may be a function of the messages so far (to react to what the agent was told).
    Every call's messages and tool schemas are kept for assertions.
    """

    llm_type: str = "scripted"
    script: list[Any] = Field(default_factory=list)
    seen: list[list[dict[str, Any]]] = Field(default_factory=list)
    tool_schemas: list[list[dict[str, Any]]] = Field(default_factory=list)
    calls: int = 0

    def __init__(self, script: list[Step], **kw: Any) -> None:
        super().__init__(model="scripted", script=list(script), **kw)

    def supports_function_calling(self) -> bool:
        return True

    def supports_stop_words(self) -> bool:
        return False

    def get_context_window_size(self) -> int:
        return 100_000

    def call(self, messages: Any, tools: Any = None, callbacks: Any = None,
             available_functions: Any = None, from_task: Any = None, from_agent: Any = None,
             response_model: Any = None) -> Any:
        self.seen.append(copy.deepcopy(list(messages)))
        self.tool_schemas.append(copy.deepcopy(list(tools or [])))
        step = self.script.pop(0) if self.script else "done"
        if callable(step):
            step = step(messages)
        if isinstance(step, str):
            return step
        self.calls += 1
        return [{"id": f"call-{self.calls}-{i}", "type": "function",
                 "function": {"name": name, "arguments": json.dumps(args)}}
                for i, (name, args) in enumerate(step)]

    async def acall(self, *args: Any, **kwargs: Any) -> Any:
        return self.call(*args, **kwargs)


def world_tools(world: TravelWorld, *names: str) -> list[BaseTool]:
    """The named tools of the travel world as CrewAI tools (all of them by default)."""
    fns = {fn.__name__: fn for fn in world.tools()}
    return [tool(n)(fns[n]) for n in (names or fns)]


def engine(**kw: Any) -> rac.RAC:
    """An in-memory engine for the travel world, on a virtual clock."""
    kw.setdefault("compensations", TRAVEL_COMPENSATIONS)
    kw.setdefault("read_only", TRAVEL_READ_ONLY)
    kw.setdefault("retry", rac.RetryPolicy(max_attempts=3, initial_delay=1.0, jitter=0.0))
    return rac.RAC(store="memory://", clock=VirtualClock(), load_entrypoints=False, **kw)


def told(llm: ScriptedLLM, tool_name: str) -> list[str]:
    """Every result of ``tool_name`` the model was shown, in order (one per call)."""
    out: dict[str, str] = {}
    for messages in llm.seen:
        for m in messages:
            if m.get("role") == "tool" and m.get("name") == tool_name:
                out.setdefault(m["tool_call_id"], str(m.get("content")))
    return list(out.values())


def last_tool_result(messages: list[dict[str, Any]]) -> str:
    """The content of the newest tool message."""
    return next(str(m["content"]) for m in reversed(messages) if m.get("role") == "tool")


def runs_of(eng: rac.RAC) -> list[rac.RunInfo]:
    """Every run in the engine's log."""
    return eng.store.list_runs()
