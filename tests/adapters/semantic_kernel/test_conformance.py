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
from semantic_kernel.functions import FunctionResult, kernel_function

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


def _steps(script: Sequence[Step], plugin: str = "travel") -> list[Any]:
    return [step if isinstance(step, str) else [Call(plugin, tool, args) for tool, args in step]
            for step in script]


class _TravelWithReads(ConcurrentTravelPlugin):
    """The travel functions and ``get_booking`` (a read of a booking as it is now)."""

    @kernel_function(description="One booking as it is now.")
    async def get_booking(self, booking_id: str) -> dict[str, Any]:
        return await asyncio.to_thread(self.world.get_booking, booking_id)


def _told(model: ScriptedChatCompletion) -> list[Told]:
    return [Told(item.function_name, str(item.result))
            for message in (model.received[-1] if model.received else [])
            for item in message.items if isinstance(item, FunctionResultContent)]


class SemanticKernelHarness:
    """One ``ChatCompletionAgent.get_response`` over the travel world's functions (async
    methods that run the world's calls in worker threads, so the calls of one model turn
    really overlap), logged under their function names."""

    parallel = True

    @staticmethod
    def _agent(engine: RAC, kernel: Kernel, model: ScriptedChatCompletion, name: str, steps: int,
               **kw: Any) -> ChatCompletionAgent:
        agent = ChatCompletionAgent(service=model, kernel=kernel, name=name,
                                    instructions="Book what you are asked for.",
                                    function_choice_behavior=FunctionChoiceBehavior.Auto(
                                        maximum_auto_invoke_attempts=steps + 1))
        return enable_rac(agent, rac=engine, names="function", **kw)

    async def arun_turn(self, engine: RAC, world: TravelWorld, script: Sequence[Step], *,
                        agent_id: str, error_filter: bool = False,
                        plugin: ConcurrentTravelPlugin | None = None) -> TurnResult:
        kernel = Kernel()
        kernel.add_plugin(plugin or ConcurrentTravelPlugin(world), plugin_name="travel")
        model = ScriptedChatCompletion(_steps(script))
        agent = self._agent(engine, kernel, model, agent_id, len(script))
        if error_filter:
            kernel.add_filter(FilterTypes.FUNCTION_INVOCATION, _friendly_errors)
        response = await agent.get_response(messages="Book the trip.")
        return TurnResult(told=_told(model), final=str(response.message.content))

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


    # Promises 4 and 7 are not run: Semantic Kernel keeps no state of its own to resume an
    # agent's invocation from, and has no human-in-the-loop pause of a function call; a
    # crashed process's runs are recovered at start-up (prepare_recovery, test_recovery.py).

    def run_delegating_turn(self, engine: RAC, world: TravelWorld, script: Sequence[Step],
                            delegate: Sequence[Step], *, agent_id: str) -> TurnResult:
        """An agent used as a tool, SK's own way: the booking agent added to the parent's
        kernel as a plugin (``kernel.add_plugin(agent)``: a function awaiting its
        ``get_response``), both enabled; RAC knows it for a delegation."""

        async def turn() -> TurnResult:
            booker_kernel = Kernel()
            booker_kernel.add_plugin(ConcurrentTravelPlugin(world), plugin_name="travel")
            booker = self._agent(engine, booker_kernel, ScriptedChatCompletion(_steps(delegate)),
                                 "booker", len(delegate))
            kernel = Kernel()
            kernel.add_plugin(ConcurrentTravelPlugin(world), plugin_name="travel")
            kernel.add_plugin(booker, plugin_name="team")
            model = ScriptedChatCompletion([
                [Call("team", "booker", {"messages": "Book ann's flight."})], *_steps(script)])
            agent = self._agent(engine, kernel, model, agent_id, len(script) + 1)
            response = await agent.get_response(messages="Book the trip.")
            return TurnResult(told=_told(model), final=str(response.message.content))

        return asyncio.run(turn())

    def run_turn_cached(self, engine: RAC, world: TravelWorld, script: Sequence[Step], *,
                        agent_id: str) -> TurnResult:
        """Semantic Kernel keeps no cache of function results: every read invokes the
        function. The turn as it is, with ``get_booking`` offered too (the check guards
        against a cache coming in through RAC itself)."""
        return asyncio.run(self.arun_turn(engine, world, script, agent_id=agent_id,
                                          plugin=_TravelWithReads(world)))


class TestSemanticKernelConformance(AdapterConformance):
    @pytest.fixture
    def adapter(self) -> SemanticKernelHarness:
        return SemanticKernelHarness()
