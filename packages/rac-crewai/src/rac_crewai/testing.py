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
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

from crewai import Agent, Crew, Task
from crewai.flow.async_feedback import HumanFeedbackPending, HumanFeedbackProvider
from crewai.flow.flow import Flow, listen, start
from crewai.flow.human_feedback import human_feedback
from crewai.flow.persistence import SQLiteFlowPersistence, persist
from crewai.hooks.dispatch import HookAborted
from crewai.hooks.tool_hooks import (
    ToolCallHookContext,
    register_after_tool_call_hook,
    register_before_tool_call_hook,
    unregister_after_tool_call_hook,
    unregister_before_tool_call_hook,
)
from crewai.llms.base_llm import BaseLLM
from crewai.tools import BaseTool, tool
from crewai.tools.tool_failure import ToolFailurePolicy
from pydantic import Field

import rac
from rac.testing.turns import Step, Told, TurnResult
from rac.testing.world import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld
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


#: The state id of the harness's ``@persist`` Flow.
PERSISTED_STATE = "conformance-turn"
#: The state id of the harness's Flow paused for a person's approval.
PAUSED_STATE = "conformance-pause"
#: What the person answers, late, to the paused Flow.
APPROVED = "approve"
#: How CrewAI's executor starts the text it gives the model for a tool that raised.
CREWAI_ERROR_TEXT = "Error executing tool"
#: What :func:`handle_tool_errors` answers for a tool that raised.
HANDLED = "The tool is unavailable right now; carry on without it."


def handle_tool_errors(context: ToolCallHookContext) -> str | None:
    """A user's error handler as CrewAI offers one: an ``after_tool_call`` hook that answers
    with a text of its own for a tool that raised (CrewAI's executor caught the exception and
    hands the hook its text, "Error executing tool: ..."). A tool whose failure reached CrewAI
    as an exception would be hidden behind it; a failure RAC handled is not."""
    result = context.tool_result
    if isinstance(result, str) and result.startswith(CREWAI_ERROR_TEXT):
        return HANDLED
    return None


class WaitForApproval(HumanFeedbackProvider):
    """CrewAI's asynchronous human feedback as its users set it up: the request goes out (a
    ticket, a chat message) and the Flow pauses, its state saved, until someone answers."""

    def request_feedback(self, context: Any, flow: Any) -> str:
        raise HumanFeedbackPending(context=context)


class ApprovalGate:
    """A user's ``before_tool_call`` hook holding back one tool until a person approved it
    (CrewAI's human-in-the-loop for a tool call: a hook that blocks the call)."""

    def __init__(self, tool_name: str) -> None:
        self.tool_name = tool_name
        self.approved = False

    def __call__(self, context: ToolCallHookContext) -> bool | None:
        if context.tool_name == self.tool_name and not self.approved:
            return False
        return None


class ConformanceHarness:
    """Runs a conformance turn as one kickoff of a one-agent crew enabled with RAC."""

    parallel = True

    def _crew(self, engine: rac.RAC, world: TravelWorld, script: Sequence[Step],
              agent_id: str, *, extra: Sequence[BaseTool] = (), **crew_kw: Any
              ) -> tuple[Crew, ScriptedLLM]:
        llm = ScriptedLLM(list(script))
        agent = Agent(role=agent_id, goal="book trips", backstory="careful", llm=llm,
                      tools=[*world_tools(world), *extra], max_iter=20)
        task = Task(description="Book my trip", expected_output="the bookings", agent=agent)
        crew = Crew(agents=[agent], tasks=[task], **crew_kw)
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

    def run_turn_handling_errors(self, engine: rac.RAC, world: TravelWorld,
                                 script: Sequence[Step], *, agent_id: str) -> TurnResult:
        """The turn with CrewAI's own handling of tool errors at its most forgiving, all of it
        set up after RAC was enabled: CrewAI's executor turns a tool's exception into text
        (always on), the crew's ``tool_failure_policy`` is ``ignore`` (a failure is not acted
        on), and a user's global ``after_tool_call`` hook answers for every tool that raised
        (:func:`handle_tool_errors`)."""
        crew, llm = self._crew(engine, world, script, agent_id)
        crew.tool_failure_policy = ToolFailurePolicy.IGNORE
        for agent in crew.agents:
            agent.tool_failure_policy = ToolFailurePolicy.IGNORE
        register_after_tool_call_hook(handle_tool_errors)
        try:
            out = crew.kickoff()
        finally:
            unregister_after_tool_call_hook(handle_tool_errors)
        return TurnResult(told(llm), str(getattr(out, "raw", out)))

    def run_turn_cached(self, engine: rac.RAC, world: TravelWorld, script: Sequence[Step], *,
                        agent_id: str) -> TurnResult:
        """The turn with CrewAI's tool cache on (``Crew(cache=True)``) and the world's
        ``get_booking`` among the agent's tools."""
        crew, llm = self._crew(engine, world, script, agent_id, cache=True,
                               extra=[tool("get_booking")(world.get_booking)])
        out = crew.kickoff()
        return TurnResult(told(llm), str(getattr(out, "raw", out)))

    def _persisted(self, engine: rac.RAC, world: TravelWorld, script: Sequence[Step],
                   agent_id: str, state_path: Path) -> TurnResult:
        crew, llm = self._crew(engine, world, script, agent_id)

        @persist(SQLiteFlowPersistence(str(state_path)))
        class TurnFlow(Flow):  # type: ignore[type-arg]
            @start()
            def turn(self) -> str:
                out = crew.kickoff()
                return str(getattr(out, "raw", out))

        flow = enable_rac(TurnFlow(), engine)
        out = flow.kickoff(inputs={"id": PERSISTED_STATE})
        return TurnResult(told(llm), str(out))

    def run_persisted_turn(self, engine: rac.RAC, world: TravelWorld, script: Sequence[Step],
                           *, agent_id: str, state_path: Path) -> TurnResult:
        """The turn as the one method of a ``@persist`` Flow (``SQLiteFlowPersistence`` at
        ``state_path``), kicked off on the state :data:`PERSISTED_STATE`."""
        return self._persisted(engine, world, script, agent_id, state_path)

    def resume_persisted_turn(self, engine: rac.RAC, world: TravelWorld,
                              script: Sequence[Step], *, agent_id: str,
                              state_path: Path) -> TurnResult:
        """The same Flow kicked off again on the same state, as its users resume it after a
        crash: it carries on the crashed run (:mod:`rac_crewai.persisted`)."""
        return self._persisted(engine, world, script, agent_id, state_path)

    def run_paused_turn(self, engine: rac.RAC, world: TravelWorld, before: Sequence[Step],
                        after: Sequence[Step], *, agent_id: str) -> TurnResult:
        """A ``@persist`` Flow whose first method kicks off the crew (``before``) and then asks
        a person, through ``@human_feedback`` with a provider that pauses the Flow, to approve
        the charge a user's ``before_tool_call`` hook held back (:class:`ApprovalGate`). At
        the pause an operator undoes the kickoff's run (``rac undo --unchecked``, from an
        engine of its own on the same log, given the world's tools); later the app restores
        the Flow (``Flow.from_pending``), enables it and resumes it with the approval: the
        next method kicks off a crew whose model asks for the approved charge again, then
        plays ``after``."""
        [*_, approved_call] = before
        gate = ApprovalGate("charge_card")
        first = ScriptedLLM([*before, "The charge waits for approval."])
        later = ScriptedLLM([approved_call, *after])
        workdir = tempfile.TemporaryDirectory(prefix="rac-crewai-pause-")

        def crew_of(llm: ScriptedLLM) -> Crew:  # not enabled: the Flow's run adopts it
            agent = Agent(role=agent_id, goal="book trips", backstory="careful", llm=llm,
                          tools=world_tools(world), max_iter=20)
            return Crew(agents=[agent], tasks=[Task(description="Book my trip and charge me",
                                                    expected_output="the bookings",
                                                    agent=agent)])

        persistence = SQLiteFlowPersistence(str(Path(workdir.name) / "flows.db"))

        @persist(persistence)
        class PausedFlow(Flow):  # type: ignore[type-arg]
            @start()
            @human_feedback(message="Approve the charge?", provider=WaitForApproval())
            def book(self) -> str:
                out = crew_of(first).kickoff()
                return str(getattr(out, "raw", out))

            @listen(book)
            def carry_on(self) -> str:
                feedback = self.last_human_feedback
                gate.approved = feedback is not None and feedback.feedback == APPROVED
                out = crew_of(later).kickoff()
                return str(getattr(out, "raw", out))

        register_before_tool_call_hook(gate)
        try:
            paused = enable_rac(PausedFlow(), engine).kickoff(inputs={"id": PAUSED_STATE})
            if not isinstance(paused, HumanFeedbackPending):
                raise AssertionError(f"the Flow never paused for the approval: {paused!r}")
            operator = rac.RAC(store=engine.store, compensations=TRAVEL_COMPENSATIONS,
                               read_only=TRAVEL_READ_ONLY, tools=world.tools(),
                               clock=engine.clock, load_entrypoints=False)
            for info in engine.store.list_runs():
                if info.status is rac.RunStatus.COMPLETED:
                    operator.undo(info.run_id, why="the trip was called off at the pause",
                                  by="operator", unchecked=True)
            restored = cast(Flow[Any], PausedFlow.from_pending(PAUSED_STATE, persistence))
            resumed = enable_rac(restored, engine)
            out = resumed.resume(APPROVED)
        finally:
            unregister_before_tool_call_hook(gate)
            workdir.cleanup()
        return TurnResult([*told(first), *told(later)], str(out))

    def run_delegating_turn(self, engine: rac.RAC, world: TravelWorld, script: Sequence[Step],
                            delegate: Sequence[Step], *, agent_id: str) -> TurnResult:
        """The agent (``allow_delegation=True``) first hands the flight to a coworker of its
        crew with CrewAI's "Delegate work to coworker"; the coworker's model plays
        ``delegate`` with the world's tools, then the agent's plays ``script``."""
        llm = ScriptedLLM([[("delegate_work_to_coworker", {
            "task": "Book ann's flight SFO-CDG.", "context": "ann flies SFO to CDG",
            "coworker": "booker"})], *script])
        agent = Agent(role=agent_id, goal="book trips", backstory="careful", llm=llm,
                      tools=world_tools(world), allow_delegation=True, max_iter=20)
        booker = Agent(role="booker", goal="book what is asked", backstory="careful",
                       llm=ScriptedLLM(list(delegate)), tools=world_tools(world), max_iter=20)
        task = Task(description="Book my trip", expected_output="the bookings", agent=agent)
        crew = enable_rac(Crew(agents=[agent, booker], tasks=[task]), engine)
        out = crew.kickoff()
        return TurnResult(told(llm), str(getattr(out, "raw", out)))

    def call_around_hook(self, engine: rac.RAC, world: TravelWorld,
                         call: tuple[str, dict[str, Any]], *, agent_id: str) -> Any:
        """A tool of an enabled crew called directly (``tool.run(...)``), as application code
        or another framework may call it: no model turn, no CrewAI hook, no kickoff."""
        crew, _ = self._crew(engine, world, [], agent_id)
        name, args = call
        [found] = [t for t in crew.agents[0].tools or [] if t.name == name]
        return found.run(**args)
