"""Testing crews under RAC without a model service: a scripted CrewAI model, the travel world
as CrewAI tools, and the harness that runs :class:`rac.testing.AdapterConformance` against
:func:`rac_crewai.enable_rac`.

CrewAI writes telemetry, traces and files under ``~``: tests set ``CREWAI_DISABLE_TELEMETRY``,
``OTEL_SDK_DISABLED``, ``CREWAI_TRACING_ENABLED=false`` and a temporary ``HOME`` before crewai
is imported.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence
from typing import Any

from crewai import Agent, Crew, Task
from crewai.hooks.dispatch import HookAborted
from crewai.llms.base_llm import BaseLLM
from crewai.tools import BaseTool, tool
from pydantic import Field

import rac
from rac.testing.turns import Step, Told, TurnResult
from rac.testing.world import TravelWorld
from rac_crewai.enable import enable_rac

Call = tuple[str, dict[str, Any]]
ScriptStep = str | list[Call] | Callable[[list[dict[str, Any]]], "str | list[Call]"]


class ScriptedLLM(BaseLLM):
    """A model that answers from a script: a list of tool-call turns or final texts.

    A step may be a function of the messages so far (to react to what the agent was told).
    Every call's messages and tool schemas are kept (``seen``, ``tool_schemas``).
    """

    llm_type: str = "scripted"
    script: list[Any] = Field(default_factory=list)
    seen: list[list[dict[str, Any]]] = Field(default_factory=list)
    tool_schemas: list[list[dict[str, Any]]] = Field(default_factory=list)
    calls: int = 0

    def __init__(self, script: Sequence[ScriptStep], **kw: Any) -> None:
        super().__init__(model="scripted", script=list(script), **kw)  # type: ignore[call-arg]

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


def told(llm: ScriptedLLM) -> list[Told]:
    """Every tool result the model was shown, in order (one per tool call)."""
    out: dict[str, Told] = {}
    for messages in llm.seen:
        for m in messages:
            if m.get("role") == "tool":
                out.setdefault(str(m.get("tool_call_id")),
                               Told(str(m.get("name")), str(m.get("content"))))
    return list(out.values())


class ConformanceHarness:
    """Runs a conformance turn as one kickoff of a one-agent crew enabled with RAC."""

    parallel = True

    def _crew(self, engine: rac.RAC, world: TravelWorld, script: Sequence[Step],
              agent_id: str) -> tuple[Crew, ScriptedLLM]:
        llm = ScriptedLLM(list(script))
        agent = Agent(role=agent_id, goal="book trips", backstory="careful", llm=llm,
                      tools=world_tools(world), max_iter=20)
        task = Task(description="Book my trip", expected_output="the bookings", agent=agent)
        crew = Crew(agents=[agent], tasks=[task])
        enable_rac(crew, engine)
        return crew, llm

    def run_turn(self, engine: rac.RAC, world: TravelWorld, script: Sequence[Step], *,
                 agent_id: str) -> TurnResult:
        crew, llm = self._crew(engine, world, script, agent_id)
        out = crew.kickoff()
        return TurnResult(told(llm), str(getattr(out, "raw", out)))

    async def arun_turn(self, engine: rac.RAC, world: TravelWorld, script: Sequence[Step], *,
                        agent_id: str) -> TurnResult:
        crew, llm = self._crew(engine, world, script, agent_id)
        out = await crew.akickoff()
        return TurnResult(told(llm), str(getattr(out, "raw", out)))

    def control_flow(self) -> BaseException:
        return HookAborted("the operator stopped the crew")
