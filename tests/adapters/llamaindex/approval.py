"""A tool that pauses for a person's approval (LlamaIndex's human in the loop), shared by the
tests of a pause resumed after a rollback.

No ``from __future__ import annotations``: LlamaIndex finds the ``Context`` parameter by its
annotation object."""

from typing import Any

from llama_index.core.tools import FunctionTool
from llama_index.core.workflow import Context, HumanResponseEvent, InputRequiredEvent

from rac.testing import TravelWorld


def approved_charge(world: TravelWorld) -> FunctionTool:
    """``charge_card`` as a tool that waits for a person's "yes" (``ctx.wait_for_event``)
    before it charges the world's card."""

    async def charge_card(ctx: Context, customer: str, amount: float) -> dict[str, Any]:
        """Charge the customer's card once a person approved it."""
        answer = await ctx.wait_for_event(
            HumanResponseEvent, waiter_id="approve-charge",
            waiter_event=InputRequiredEvent(prefix=f"Charge {amount}?"))
        assert answer.response == "yes"
        return world.charge_card(customer, amount)

    return FunctionTool.from_defaults(async_fn=charge_card)
