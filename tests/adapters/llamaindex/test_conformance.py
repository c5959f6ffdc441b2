"""rac-llamaindex passes the adapter conformance suite: a real FunctionAgent, driven by a
scripted function-calling model, with RAC enabled on the suite's engine.

No ``from __future__ import annotations``: LlamaIndex finds a tool's ``Context`` parameter by
its annotation object."""

import asyncio
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.agent.workflow import FunctionAgent, ToolCallResult
from llama_index.core.tools import FunctionTool
from llama_index.core.workflow import Context, HumanResponseEvent, InputRequiredEvent
from llama_index.core.workflow.handler import WorkflowHandler

import rac
from rac.adapters import declare_control_flow
from rac.testing import AdapterConformance, TravelWorld
from rac.testing.adapters import Step, Told, TurnResult
from rac_llamaindex import enable_rac
from rac_llamaindex.testing import ScriptedModel
from tests.adapters.llamaindex.approval import approved_charge


class TurnStop(Exception):  # noqa: N818 - control flow of the harness's application
    """An application's own control flow raised by a tool (declared a pass-through below).

    LlamaIndex's one control-flow exception, a step's ``WaitingForEvent``, makes the workflow
    wait and then run the step again, which the suite's turn cannot express; it is tested for
    real in ``test_human_in_the_loop.py`` and by the suite's paused-turn check."""


async def _told(handler: WorkflowHandler, told: list[Told],
                stop: Callable[[Any], bool] | None = None) -> None:
    """Collect every tool result of ``handler``'s stream into ``told``; return early at the
    first event ``stop`` accepts."""
    async for event in handler.stream_events():
        if isinstance(event, ToolCallResult):
            out = event.tool_output
            told.append(Told(event.tool_name, out.content or "", bool(out.is_error)))
        if stop is not None and stop(event):
            return


class LlamaIndexHarness:
    """Runs a conformance turn as one ``FunctionAgent.run()``."""

    parallel = True  # LlamaIndex runs the calls of one model message concurrently

    @staticmethod
    def _agent(engine: rac.RAC, model: ScriptedModel, tools: Sequence[Any], agent_id: str,
               **kw: Any) -> FunctionAgent:
        return enable_rac(FunctionAgent(name=agent_id, tools=list(tools),
                                        llm=model.function_calling_llm()), engine, **kw)

    def run_turn(self, engine: rac.RAC, world: TravelWorld, script: Sequence[Step], *,
                 agent_id: str) -> TurnResult:
        return asyncio.run(self.arun_turn(engine, world, script, agent_id=agent_id))

    async def arun_turn(self, engine: rac.RAC, world: TravelWorld, script: Sequence[Step], *,
                        agent_id: str, tools: Sequence[Any] | None = None) -> TurnResult:
        agent = self._agent(engine, ScriptedModel(list(script)),
                            world.tools() if tools is None else tools, agent_id)
        handler = agent.run(user_msg="Book ann's trip")
        told: list[Told] = []
        await _told(handler, told)
        final: Any = await handler
        return TurnResult(told, str(final))

    def control_flow(self) -> BaseException:
        return TurnStop("the application stopped this call")

    def run_turn_handling_errors(self, engine: rac.RAC, world: TravelWorld,
                                 script: Sequence[Step], *, agent_id: str) -> TurnResult:
        """LlamaIndex's own handling of tool errors is always on: its call_tool step turns
        every exception into an error ToolOutput, outside RAC's wrapper."""
        return self.run_turn(engine, world, script, agent_id=agent_id)

    def call_around_hook(self, engine: rac.RAC, world: TravelWorld,
                         call: tuple[str, dict[str, Any]], *, agent_id: str) -> Any:
        """The enabled agent's tool object called directly (``tool.call``), not by a step."""
        agent = self._agent(engine, ScriptedModel([]), world.tools(), agent_id)
        tool_name, args = call
        [tool] = [t for t in agent.tools or () if getattr(t, "metadata", None) is not None
                  and t.metadata.name == tool_name]
        return tool.call(**args)

    # -- promise 4: a saved Context resumed after a crash --------------------------------------
    def run_persisted_turn(self, engine: rac.RAC, world: TravelWorld, script: Sequence[Step],
                           *, agent_id: str, state_path: Path) -> None:
        """The turn saving the workflow's ``Context`` after each tool result (what an app
        persisting its workflows does)."""

        async def turn() -> None:
            agent = self._agent(engine, ScriptedModel(list(script)), world.tools(), agent_id)
            handler = agent.run(user_msg="Book ann's trip")
            async for event in handler.stream_events():
                if isinstance(event, ToolCallResult):
                    assert handler.ctx is not None
                    state_path.write_text(json.dumps(handler.ctx.to_dict()))
            await handler

        asyncio.run(turn())

    def resume_persisted_turn(self, engine: rac.RAC, world: TravelWorld,
                              script: Sequence[Step], *, agent_id: str,
                              state_path: Path) -> TurnResult:
        """The saved ``Context`` resumed (``agent.run(ctx=Context.from_dict(...))``)."""

        async def turn() -> TurnResult:
            agent = self._agent(engine, ScriptedModel(list(script)), world.tools(), agent_id)
            ctx = Context.from_dict(agent, json.loads(state_path.read_text()))
            handler = agent.run(ctx=ctx)
            told: list[Told] = []
            await _told(handler, told)
            return TurnResult(told, str(await handler))

        return asyncio.run(turn())

    # -- promise 5: an agent used as a tool ----------------------------------------------------
    def run_delegating_turn(self, engine: rac.RAC, world: TravelWorld, script: Sequence[Step],
                            delegate: Sequence[Step], *, agent_id: str) -> TurnResult:
        """The parent agent's first call runs another enabled agent (a tool awaiting its
        ``run()``, declared in ``delegates=``)."""
        booker = self._agent(engine, ScriptedModel(list(delegate)), world.tools(),
                             f"{agent_id}-booker")

        async def ask_booker(request: str) -> str:
            """Ask the booking agent to book something."""
            return str(await booker.run(user_msg=request))

        async def turn() -> TurnResult:
            model = ScriptedModel([[("ask_booker", {"request": "Book ann's flight."})],
                                   *script])
            parent = self._agent(engine, model, [FunctionTool.from_defaults(
                async_fn=ask_booker), *world.tools()], agent_id, delegates=["ask_booker"])
            handler = parent.run(user_msg="Book ann's trip")
            told: list[Told] = []
            await _told(handler, told)
            return TurnResult(told, str(await handler))

        return asyncio.run(turn())

    # -- promise 7: save at the pause, cancel, resume ------------------------------------------
    def run_paused_turn(self, engine: rac.RAC, world: TravelWorld, before: Sequence[Step],
                        after: Sequence[Step], *, agent_id: str) -> TurnResult:
        """``charge_card`` waits for a person (``ctx.wait_for_event``); at the pause the app
        saves the ``Context`` and cancels the handler (RAC rolls the run back), and later
        resumes the saved context with the person's approval."""

        tools = [approved_charge(world),
                 *(t for t in world.tools() if t.__name__ != "charge_card")]

        async def turn() -> TurnResult:
            agent = self._agent(engine, ScriptedModel([*before, *after]), tools, agent_id)
            handler = agent.run(user_msg="Fly ann to Paris and charge her card.")
            told: list[Told] = []
            await _told(handler, told, stop=lambda e: isinstance(e, InputRequiredEvent))
            assert handler.ctx is not None, "the workflow never paused"
            saved = handler.ctx.to_dict()
            await handler.cancel_run()
            try:
                await handler
            except BaseException:  # noqa: BLE001, S110 - the cancelled workflow's own ending
                pass
            resumed = agent.run(ctx=Context.from_dict(agent, saved))
            assert resumed.ctx is not None
            resumed.ctx.send_event(HumanResponseEvent(response="yes"))  # approved, late
            await _told(resumed, told)
            return TurnResult(told, str(await resumed))

        return asyncio.run(turn())

    # -- promise 8 -----------------------------------------------------------------------------
    def run_turn_cached(self, engine: rac.RAC, world: TravelWorld, script: Sequence[Step], *,
                        agent_id: str) -> TurnResult:
        """LlamaIndex agents keep no cache of tool results: every read asks the tool. The turn
        as it is, with ``get_booking`` offered too (the check guards against a cache coming
        in through RAC itself)."""
        return asyncio.run(self.arun_turn(engine, world, script, agent_id=agent_id,
                                          tools=[*world.tools(), world.get_booking]))


class TestConformance(AdapterConformance):
    @pytest.fixture
    def adapter(self) -> LlamaIndexHarness:
        return LlamaIndexHarness()

    def make_engine(self, log_path: Path, **kw: Any) -> rac.RAC:
        engine = super().make_engine(log_path, **kw)
        declare_control_flow(engine, TurnStop)
        return engine


@pytest.mark.parametrize("check", ["test_framework_persistence_resumes_the_crashed_run",
                                   "test_a_pause_resumed_after_a_rollback_is_told"],
                         ids=["promise-4", "promise-7"])
def test_the_resume_checks_fail_an_adapter_that_resumes_into_a_new_run(
        check: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The planted mistake: the adapter ignores the RAC run a restored ``Context`` carries (a
    resumed workflow opens a new run, as before issue 30). Promise 4's check sees the crashed
    process's booking made again, promise 7's the approved charge run after the rollback."""
    import rac_llamaindex.run_scope as run_scope

    monkeypatch.setattr(run_scope, "_resumed_run", lambda engine, ctx: None)
    suite = TestConformance()
    world = TravelWorld()
    try:
        with pytest.raises(AssertionError):
            if check.endswith("crashed_run"):
                suite.test_framework_persistence_resumes_the_crashed_run(
                    LlamaIndexHarness(), tmp_path / "rac.db", tmp_path)
            else:
                engine = suite.make_engine(tmp_path / "rac.db")
                try:
                    suite.test_a_pause_resumed_after_a_rollback_is_told(LlamaIndexHarness(),
                                                                        engine, world)
                finally:
                    engine.store.close()
    finally:
        world.close()
