"""A scripted chat completion service, to drive real Semantic Kernel agents offline.

:class:`ScriptedChatCompletion` is a real ``ChatCompletionClientBase``: the kernel's own
auto-function-calling loop runs against it, streaming or not. Each request takes the next
step of its script: a string is the model's answer, a list of :class:`Call` is one turn of
(parallel) function calls. Every request's chat history is kept in :attr:`received`, so a test
can check what the model was told after a tool call::

    from rac_semantic_kernel.testing import Call, ScriptedChatCompletion

    service = ScriptedChatCompletion([
        [Call("travel", "book_flight", {"passenger": "ann", "origin": "SFO", "dest": "CDG"})],
        "Your flight is booked.",
    ])
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import PrivateAttr
from semantic_kernel.connectors.ai.chat_completion_client_base import ChatCompletionClientBase
from semantic_kernel.connectors.ai.prompt_execution_settings import PromptExecutionSettings
from semantic_kernel.contents import (
    ChatHistory,
    ChatMessageContent,
    FunctionCallContent,
    FunctionResultContent,
    StreamingChatMessageContent,
)
from semantic_kernel.contents.utils.author_role import AuthorRole
from semantic_kernel.functions import kernel_function

from rac.testing import TravelWorld


@dataclass
class Call:
    """One function call the scripted model makes: ``plugin-function`` with ``args``."""

    plugin: str
    function: str
    args: dict[str, Any] = field(default_factory=dict)
    id: str | None = None


#: One request's answer: text, a turn of calls, or a function of the chat history giving one.
Step = str | Sequence[Call] | Callable[[ChatHistory], "str | Sequence[Call]"]


class ScriptedChatCompletion(ChatCompletionClientBase):
    """A chat completion service that answers from a script (see the module docstring).

    When the script runs out it answers ``"done"``. :attr:`received` holds a copy of the
    messages of every request, in order; :meth:`tool_results` gives the function results the
    model was shown.
    """

    SUPPORTS_FUNCTION_CALLING = True  # turns on the kernel's auto-invoke loop

    _script: list[Step] = PrivateAttr(default_factory=list)
    _received: list[list[ChatMessageContent]] = PrivateAttr(default_factory=list)
    _calls: int = PrivateAttr(default=0)

    def __init__(self, script: Sequence[Step], *, ai_model_id: str = "scripted",
                 service_id: str | None = None) -> None:
        super().__init__(ai_model_id=ai_model_id, service_id=service_id or ai_model_id)
        self._script = list(script)

    @property
    def received(self) -> list[list[ChatMessageContent]]:
        """The messages of each request the model received, oldest first."""
        return self._received

    def tool_results(self, request: int = -1) -> list[str]:
        """The function results (as text) in the history of request number ``request``."""
        return [str(item.result) for m in self._received[request] for item in m.items
                if isinstance(item, FunctionResultContent)]

    def _next(self, history: ChatHistory) -> str | list[FunctionCallContent]:
        self._received.append(list(history.messages))
        step: Step = self._script.pop(0) if self._script else "done"
        if callable(step):
            step = step(history)
        if isinstance(step, str):
            return step
        self._calls += 1
        return [FunctionCallContent(
            id=c.id or f"call-{self._calls}-{i}", plugin_name=c.plugin, function_name=c.function,
            arguments=json.dumps(c.args)) for i, c in enumerate(step)]

    async def _inner_get_chat_message_contents(
            self, chat_history: ChatHistory, settings: PromptExecutionSettings
    ) -> list[ChatMessageContent]:
        answer = self._next(chat_history)
        if isinstance(answer, str):
            return [ChatMessageContent(role=AuthorRole.ASSISTANT, content=answer)]
        return [ChatMessageContent(role=AuthorRole.ASSISTANT, items=list(answer))]

    async def _inner_get_streaming_chat_message_contents(
            self, chat_history: ChatHistory, settings: PromptExecutionSettings,
            function_invoke_attempt: int = 0,
    ) -> AsyncGenerator[list[StreamingChatMessageContent], Any]:
        answer = self._next(chat_history)
        if isinstance(answer, str):
            # Two chunks, so a consumer sees a real stream.
            half = len(answer) // 2
            for part in (answer[:half], answer[half:]):
                yield [StreamingChatMessageContent(role=AuthorRole.ASSISTANT, choice_index=0,
                                                   content=part)]
            return
        yield [StreamingChatMessageContent(role=AuthorRole.ASSISTANT, choice_index=0,
                                           items=list(answer))]  # type: ignore[arg-type]


class TravelPlugin:
    """The travel world's tools as a Semantic Kernel plugin class (``@kernel_function``
    methods), for ``kernel.add_plugin(TravelPlugin(world), plugin_name="travel")``."""

    def __init__(self, world: TravelWorld) -> None:
        self.world = world

    @kernel_function(description="Search flights between two airports.")
    def search_flights(self, origin: str, dest: str) -> dict[str, Any]:
        return self.world.search_flights(origin, dest)

    @kernel_function(description="Book a flight; returns the booking id.")
    def book_flight(self, passenger: str, origin: str, dest: str) -> dict[str, Any]:
        return self.world.book_flight(passenger, origin, dest)

    @kernel_function(description="Cancel a flight booking.")
    def cancel_flight(self, booking_id: str) -> dict[str, Any]:
        return self.world.cancel_flight(booking_id)

    @kernel_function(description="Book a hotel; returns the booking id.")
    def book_hotel(self, guest: str, city: str, nights: int) -> dict[str, Any]:
        return self.world.book_hotel(guest, city, nights)

    @kernel_function(description="Cancel a hotel booking.")
    def cancel_hotel(self, booking_id: str) -> dict[str, Any]:
        return self.world.cancel_hotel(booking_id)

    @kernel_function(description="Book a car; returns the booking id.")
    def book_car(self, driver: str, city: str) -> dict[str, Any]:
        return self.world.book_car(driver, city)

    @kernel_function(description="Cancel a car booking.")
    def cancel_car(self, booking_id: str) -> dict[str, Any]:
        return self.world.cancel_car(booking_id)

    @kernel_function(description="Rent a car from the partner agency; returns the booking id.")
    def rent_car(self, driver: str, city: str) -> dict[str, Any]:
        return self.world.rent_car(driver, city)

    @kernel_function(description="Return a rental car.")
    def return_rental(self, booking_id: str) -> dict[str, Any]:
        return self.world.return_rental(booking_id)

    @kernel_function(description="Charge a customer's card.")
    def charge_card(self, customer: str, amount: float) -> dict[str, Any]:
        return self.world.charge_card(customer, amount)

    @kernel_function(description="Refund a card charge.")
    def refund_charge(self, booking_id: str) -> dict[str, Any]:
        return self.world.refund_charge(booking_id)

    @kernel_function(description="The weather in a city (changes nothing).")
    def get_weather(self, city: str) -> str:
        return self.world.get_weather(city)


class ConcurrentTravelPlugin:
    """:class:`TravelPlugin` with async functions that run the world's calls in worker threads:
    the calls of one model turn then really overlap (SK runs them with ``asyncio.gather``;
    synchronous functions would run one after another on the event loop)."""

    def __init__(self, world: TravelWorld) -> None:
        self.world = world

    @kernel_function(description="Search flights between two airports.")
    async def search_flights(self, origin: str, dest: str) -> dict[str, Any]:
        return await asyncio.to_thread(self.world.search_flights, origin, dest)

    @kernel_function(description="Book a flight; returns the booking id.")
    async def book_flight(self, passenger: str, origin: str, dest: str) -> dict[str, Any]:
        return await asyncio.to_thread(self.world.book_flight, passenger, origin, dest)

    @kernel_function(description="Cancel a flight booking.")
    async def cancel_flight(self, booking_id: str) -> dict[str, Any]:
        return await asyncio.to_thread(self.world.cancel_flight, booking_id)

    @kernel_function(description="Book a hotel; returns the booking id.")
    async def book_hotel(self, guest: str, city: str, nights: int) -> dict[str, Any]:
        return await asyncio.to_thread(self.world.book_hotel, guest, city, nights)

    @kernel_function(description="Cancel a hotel booking.")
    async def cancel_hotel(self, booking_id: str) -> dict[str, Any]:
        return await asyncio.to_thread(self.world.cancel_hotel, booking_id)

    @kernel_function(description="Book a car; returns the booking id.")
    async def book_car(self, driver: str, city: str) -> dict[str, Any]:
        return await asyncio.to_thread(self.world.book_car, driver, city)

    @kernel_function(description="Cancel a car booking.")
    async def cancel_car(self, booking_id: str) -> dict[str, Any]:
        return await asyncio.to_thread(self.world.cancel_car, booking_id)

    @kernel_function(description="Rent a car from the partner agency; returns the booking id.")
    async def rent_car(self, driver: str, city: str) -> dict[str, Any]:
        return await asyncio.to_thread(self.world.rent_car, driver, city)

    @kernel_function(description="Return a rental car.")
    async def return_rental(self, booking_id: str) -> dict[str, Any]:
        return await asyncio.to_thread(self.world.return_rental, booking_id)

    @kernel_function(description="Charge a customer's card.")
    async def charge_card(self, customer: str, amount: float) -> dict[str, Any]:
        return await asyncio.to_thread(self.world.charge_card, customer, amount)

    @kernel_function(description="Refund a card charge.")
    async def refund_charge(self, booking_id: str) -> dict[str, Any]:
        return await asyncio.to_thread(self.world.refund_charge, booking_id)

    @kernel_function(description="The weather in a city (changes nothing).")
    async def get_weather(self, city: str) -> str:
        return await asyncio.to_thread(self.world.get_weather, city)
