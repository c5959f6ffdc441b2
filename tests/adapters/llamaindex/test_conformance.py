"""rac-llamaindex passes the adapter conformance suite: a real FunctionAgent, driven by a
scripted function-calling model, with RAC enabled on the suite's engine."""

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.agent.workflow import FunctionAgent, ToolCallResult

import rac
from rac.adapters import declare_control_flow
from rac.testing import AdapterConformance, TravelWorld
from rac.testing.adapters import Step, Told, TurnResult
from rac_llamaindex import enable_rac
from rac_llamaindex.testing import ScriptedModel


class TurnStop(Exception):  # noqa: N818 - control flow of the harness's application
    """An application's own control flow raised by a tool (declared a pass-through below).

    LlamaIndex's one control-flow exception, a step's ``WaitingForEvent``, makes the workflow
    wait and then run the step again, which the suite's turn cannot express; it is tested for
    real in ``test_human_in_the_loop.py``."""


class LlamaIndexHarness:
    """Runs a conformance turn as one ``FunctionAgent.run()``."""

    parallel = True  # LlamaIndex runs the calls of one model message concurrently

    def run_turn(self, engine: rac.RAC, world: TravelWorld, script: Sequence[Step], *,
                 agent_id: str) -> TurnResult:
        return asyncio.run(self.arun_turn(engine, world, script, agent_id=agent_id))

    async def arun_turn(self, engine: rac.RAC, world: TravelWorld, script: Sequence[Step], *,
                        agent_id: str) -> TurnResult:
        model = ScriptedModel(list(script))
        agent = enable_rac(FunctionAgent(name=agent_id, tools=world.tools(),
                                         llm=model.function_calling_llm()), engine)
        handler = agent.run(user_msg="Book ann's trip")
        told: list[Told] = []
        async for event in handler.stream_events():
            if isinstance(event, ToolCallResult):
                out = event.tool_output
                told.append(Told(event.tool_name, out.content or "", bool(out.is_error)))
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
        agent = enable_rac(FunctionAgent(name=agent_id, tools=world.tools(),
                                         llm=ScriptedModel([]).function_calling_llm()), engine)
        tool_name, args = call
        [tool] = [t for t in agent.tools or () if getattr(t, "metadata", None) is not None
                  and t.metadata.name == tool_name]
        return tool.call(**args)


class TestConformance(AdapterConformance):
    @pytest.fixture
    def adapter(self) -> LlamaIndexHarness:
        return LlamaIndexHarness()

    def make_engine(self, log_path: Path, **kw: Any) -> rac.RAC:
        engine = super().make_engine(log_path, **kw)
        declare_control_flow(engine, TurnStop)
        return engine
