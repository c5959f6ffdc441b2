"""Prove a Semantic Kernel agent's rollback with ``rac prove``: a ``ChatCompletionAgent`` with a
scripted chat service books a flight and a hotel under ``enable_rac``; prove fails each call,
times each out after its effect, fails each compensation, and checks the world after each::

    uv run python examples/prove_semantic_kernel.py     # prints the table, exit 0
"""

from __future__ import annotations

import logging
import sys
import tempfile
from pathlib import Path
from typing import Any

from semantic_kernel import Kernel
from semantic_kernel.agents import ChatCompletionAgent
from semantic_kernel.connectors.ai.function_choice_behavior import FunctionChoiceBehavior
from semantic_kernel.functions import kernel_function

import rac
from rac.demo.crash import KEYED_COMPENSATIONS, KeyedTravelWorld
from rac_semantic_kernel import enable_rac
from rac_semantic_kernel.testing import Call, ScriptedChatCompletion

world = KeyedTravelWorld(str(Path(tempfile.mkdtemp(prefix="rac-prove-sk-")) / "world.db"))
engine = rac.RAC(compensations=KEYED_COMPENSATIONS, store="memory://", load_entrypoints=False)


class Bookings:
    """The world's booking tools as a kernel plugin; each takes RAC's idempotency key."""

    @kernel_function(description="Book a flight; returns the booking id.")
    def book_flight(self, passenger: str, origin: str, dest: str,
                    idempotency_key: str | None = None) -> dict[str, Any]:
        return world.book_flight(passenger, origin, dest, idempotency_key)

    @kernel_function(description="Book a hotel; returns the booking id.")
    def book_hotel(self, guest: str, city: str, nights: int,
                   idempotency_key: str | None = None) -> dict[str, Any]:
        return world.book_hotel(guest, city, nights, idempotency_key)

    @kernel_function(description="Cancel a flight (by id, or by the booking call's key).")
    def cancel_flight(self, booking_id: str = "", action_key: str = "") -> dict[str, Any]:
        return world.cancel_flight(booking_id, action_key)

    @kernel_function(description="Cancel a hotel (by id, or by the booking call's key).")
    def cancel_hotel(self, booking_id: str = "", action_key: str = "") -> dict[str, Any]:
        return world.cancel_hotel(booking_id, action_key)


async def trip() -> None:
    """The scenario: one agent response that books ann a flight, then a hotel."""
    service = ScriptedChatCompletion([
        [Call("travel", "book_flight", {"passenger": "ann", "origin": "SFO", "dest": "CDG"})],
        [Call("travel", "book_hotel", {"guest": "ann", "city": "Paris", "nights": 2})],
        "Booked."])
    kernel = Kernel()
    kernel.add_plugin(Bookings(), plugin_name="travel")
    agent = ChatCompletionAgent(service=service, kernel=kernel, name="planner",
                                instructions="Book trips.",
                                function_choice_behavior=FunctionChoiceBehavior.Auto())
    enable_rac(agent, rac=engine)
    await agent.get_response(messages="Book ann a flight and a hotel in Paris.")


def live() -> list[dict[str, Any]]:
    """The check: what is still booked."""
    return world.live()


def main() -> int:
    """Prove it and print the table."""
    logging.getLogger("semantic_kernel").setLevel(logging.CRITICAL)
    proof = rac.testing.prove(trip, engine=engine, check=live, setup=world.reset)
    print(proof.table())
    return proof.exit_code


if __name__ == "__main__":
    sys.exit(main())
