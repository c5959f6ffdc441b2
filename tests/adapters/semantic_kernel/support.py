"""Building blocks of the Semantic Kernel tests: a travel kernel and a trip agent."""

from __future__ import annotations

from collections.abc import Sequence

from semantic_kernel import Kernel
from semantic_kernel.agents import ChatCompletionAgent
from semantic_kernel.connectors.ai.function_choice_behavior import FunctionChoiceBehavior

from rac.testing import TravelWorld
from rac_semantic_kernel.testing import Call, ScriptedChatCompletion, Step, TravelPlugin

FLIGHT = Call("travel", "book_flight", {"passenger": "ann", "origin": "SFO", "dest": "CDG"})
HOTEL = Call("travel", "book_hotel", {"guest": "ann", "city": "Paris", "nights": 2})
CAR = Call("travel", "book_car", {"driver": "ann", "city": "Paris"})


def travel_kernel(world: TravelWorld) -> Kernel:
    kernel = Kernel()
    kernel.add_plugin(TravelPlugin(world), plugin_name="travel")
    return kernel


def trip_agent(kernel: Kernel, script: Sequence[Step], name: str = "planner"
               ) -> tuple[ChatCompletionAgent, ScriptedChatCompletion]:
    service = ScriptedChatCompletion(script)
    agent = ChatCompletionAgent(service=service, kernel=kernel, name=name,
                                description=f"The {name} agent: books travel.",
                                instructions="Book what the user asks for.",
                                function_choice_behavior=FunctionChoiceBehavior.Auto())
    return agent, service
