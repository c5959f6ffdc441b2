"""rac-semantic-kernel passes the adapter conformance suite: a real ChatCompletionAgent with
auto function calling, driven by the scripted chat completion service."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

import pytest
from semantic_kernel import Kernel
from semantic_kernel.agents import ChatCompletionAgent
from semantic_kernel.connectors.ai.function_choice_behavior import FunctionChoiceBehavior
from semantic_kernel.contents import FunctionResultContent
from semantic_kernel.exceptions import OperationCancelledException

from rac import RAC
from rac.testing import AdapterConformance, TravelWorld
from rac.testing.adapters import Step, Told, TurnResult
from rac_semantic_kernel import enable_rac
from rac_semantic_kernel.testing import Call, ConcurrentTravelPlugin, ScriptedChatCompletion

logging.getLogger("semantic_kernel").setLevel(logging.CRITICAL)


class SemanticKernelHarness:
    """One ``ChatCompletionAgent.get_response`` over the travel world's functions (async
    methods that run the world's calls in worker threads, so the calls of one model turn
    really overlap), logged under their function names."""

    parallel = True

    async def arun_turn(self, engine: RAC, world: TravelWorld, script: Sequence[Step], *,
                        agent_id: str) -> TurnResult:
        kernel = Kernel()
        kernel.add_plugin(ConcurrentTravelPlugin(world), plugin_name="travel")
        model = ScriptedChatCompletion([
            step if isinstance(step, str) else [Call("travel", tool, args) for tool, args in step]
            for step in script])
        agent = ChatCompletionAgent(service=model, kernel=kernel, name=agent_id,
                                    function_choice_behavior=FunctionChoiceBehavior.Auto(
                                        maximum_auto_invoke_attempts=len(script) + 1))
        enable_rac(agent, rac=engine, names="function")
        response = await agent.get_response(messages="Book the trip.")
        told = [Told(item.function_name, str(item.result))
                for message in (model.received[-1] if model.received else [])
                for item in message.items if isinstance(item, FunctionResultContent)]
        return TurnResult(told=told, final=str(response.message.content))

    def run_turn(self, engine: RAC, world: TravelWorld, script: Sequence[Step], *,
                 agent_id: str) -> TurnResult:
        return asyncio.run(self.arun_turn(engine, world, script, agent_id=agent_id))

    def control_flow(self) -> BaseException:
        return OperationCancelledException("the user cancelled the operation")


class TestSemanticKernelConformance(AdapterConformance):
    @pytest.fixture
    def adapter(self) -> SemanticKernelHarness:
        return SemanticKernelHarness()
