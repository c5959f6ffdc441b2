"""rac-semantic-kernel passes the adapter conformance suite: a real ChatCompletionAgent with
auto function calling, driven by the scripted chat completion service."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

import pytest
from semantic_kernel import Kernel
from semantic_kernel.agents import ChatCompletionAgent
from semantic_kernel.connectors.ai.function_choice_behavior import FunctionChoiceBehavior
from semantic_kernel.contents import FunctionResultContent
from semantic_kernel.exceptions import OperationCancelledException
from semantic_kernel.filters import FilterTypes, FunctionInvocationContext
from semantic_kernel.functions import FunctionResult

from rac import RAC
from rac.testing import AdapterConformance, TravelWorld
from rac.testing.adapters import Step, Told, TurnResult
from rac_semantic_kernel import enable_rac
from rac_semantic_kernel.testing import Call, ConcurrentTravelPlugin, ScriptedChatCompletion

logging.getLogger("semantic_kernel").setLevel(logging.CRITICAL)


async def _friendly_errors(ctx: FunctionInvocationContext, next: Any) -> None:
    """A user's error-handling filter: every failure becomes a polite answer."""
    try:
        await next(ctx)
    except Exception:  # noqa: BLE001 - what such a filter does
        ctx.result = FunctionResult(function=ctx.function.metadata,
                                    value="That did not work; try something else.")


class SemanticKernelHarness:
    """One ``ChatCompletionAgent.get_response`` over the travel world's functions (async
    methods that run the world's calls in worker threads, so the calls of one model turn
    really overlap), logged under their function names."""

    parallel = True

    async def arun_turn(self, engine: RAC, world: TravelWorld, script: Sequence[Step], *,
                        agent_id: str, error_filter: bool = False) -> TurnResult:
        kernel = Kernel()
        kernel.add_plugin(ConcurrentTravelPlugin(world), plugin_name="travel")
        model = ScriptedChatCompletion([
            step if isinstance(step, str) else [Call("travel", tool, args) for tool, args in step]
            for step in script])
        agent = ChatCompletionAgent(service=model, kernel=kernel, name=agent_id,
                                    function_choice_behavior=FunctionChoiceBehavior.Auto(
                                        maximum_auto_invoke_attempts=len(script) + 1))
        enable_rac(agent, rac=engine, names="function")
        if error_filter:
            kernel.add_filter(FilterTypes.FUNCTION_INVOCATION, _friendly_errors)
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

    def run_turn_handling_errors(self, engine: RAC, world: TravelWorld,
                                 script: Sequence[Step], *, agent_id: str) -> TurnResult:
        """The turn with a user's error-handling function filter added after RAC's."""
        return asyncio.run(self.arun_turn(engine, world, script, agent_id=agent_id,
                                          error_filter=True))

    def call_around_hook(self, engine: RAC, world: TravelWorld, call: tuple[str, dict[str, Any]],
                         *, agent_id: str) -> Any:
        """``kernel.invoke`` of the function: SK's path around auto function invocation."""
        kernel = Kernel()
        kernel.add_plugin(ConcurrentTravelPlugin(world), plugin_name="travel")
        enable_rac(kernel, rac=engine, agent_id=agent_id, names="function")
        tool, args = call
        return asyncio.run(kernel.invoke(plugin_name="travel", function_name=tool, **args))


class TestSemanticKernelConformance(AdapterConformance):
    @pytest.fixture
    def adapter(self) -> SemanticKernelHarness:
        return SemanticKernelHarness()
