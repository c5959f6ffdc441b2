"""rac-semantic-kernel passes the adapter conformance suite: a real ChatCompletionAgent with
auto function calling, driven by the scripted chat completion service."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from semantic_kernel import Kernel
from semantic_kernel.agents import ChatCompletionAgent, ChatHistoryAgentThread
from semantic_kernel.connectors.ai.function_choice_behavior import FunctionChoiceBehavior
from semantic_kernel.contents import ChatHistory, ChatMessageContent, FunctionResultContent
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


    # -- promise 4: a chat history saved during the invocation, restored after a crash -------
    def run_persisted_turn(self, engine: RAC, world: TravelWorld, script: Sequence[Step], *,
                           agent_id: str, state_path: Path) -> None:
        """The turn streamed (``invoke_stream``), the app saving the thread's history after
        each intermediate message (each function call and result), as SK's samples persist a
        conversation (``ChatHistory.serialize``)."""

        async def turn() -> None:
            kernel = Kernel()
            kernel.add_plugin(ConcurrentTravelPlugin(world), plugin_name="travel")
            agent = self._agent(engine, kernel, ScriptedChatCompletion(_steps(script)),
                                agent_id, len(script))
            saved = ChatHistory()
            saved.add_user_message("Book the trip.")

            async def save(message: ChatMessageContent) -> None:
                saved.add_message(message)
                state_path.write_text(saved.serialize())

            async for _ in agent.invoke_stream(messages="Book the trip.",
                                               on_intermediate_message=save):
                pass

        asyncio.run(turn())

    def resume_persisted_turn(self, engine: RAC, world: TravelWorld, script: Sequence[Step], *,
                              agent_id: str, state_path: Path) -> TurnResult:
        """The saved history restored (``ChatHistory.restore_chat_history``) into a
        ``ChatHistoryAgentThread`` and the invocation resumed on it."""

        async def turn() -> TurnResult:
            kernel = Kernel()
            kernel.add_plugin(ConcurrentTravelPlugin(world), plugin_name="travel")
            model = ScriptedChatCompletion(_steps(script))
            agent = self._agent(engine, kernel, model, agent_id, len(script))
            thread = ChatHistoryAgentThread(
                chat_history=ChatHistory.restore_chat_history(state_path.read_text()))
            response = await agent.get_response(thread=thread)
            return TurnResult(told=_told(model), final=str(response.message.content))

        return asyncio.run(turn())

    #: Promise 7 needs a pause that outlives the invocation; Semantic Kernel has none.
    not_applicable = {"run_paused_turn": (
        "Semantic Kernel has no human-in-the-loop pause that outlives an invocation: an "
        "approval (a function-invocation filter awaiting a person, an orchestration's "
        "human_response_function) is awaited inside the invocation with its run open, and "
        "nothing is saved, cancelled and resumed, so no rollback of another run can come "
        "between the pause and the approved call (a sibling's rollback refuses it as a batch, "
        "promise 6); a saved chat history resumed after its run was rolled back is promise 4's "
        "path (the resumed turn's first call is refused with what was undone)")}

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
