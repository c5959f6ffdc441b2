"""Promise 1 of issue 30: two agents whose kernels have plugins of one name (two vendors'
systems) are kept apart: a failure undoes each agent's booking through its own kernel."""

from __future__ import annotations

import logging

import rac
from rac.models import RecordKind, RunStatus
from rac.testing import (
    TRAVEL_COMPENSATIONS,
    TravelWorld,
    assert_compensated_once,
    assert_no_live_effects,
)
from rac_semantic_kernel import enable_rac
from tests.adapters.semantic_kernel.support import CAR, FLIGHT, travel_kernel, trip_agent

logging.getLogger("semantic_kernel").setLevel(logging.CRITICAL)


async def test_two_agents_plugins_of_one_name_each_undo_their_own_system() -> None:
    vendor_a, vendor_b = TravelWorld(), TravelWorld()
    vendor_b.fail("book_car", "permanent", message="no cars")
    engine = rac.RAC(compensations=TRAVEL_COMPENSATIONS, store="memory://",
                     load_entrypoints=False)
    a, _ = trip_agent(travel_kernel(vendor_a), [[FLIGHT], "Booked with A."], name="vendor_a")
    b, model_b = trip_agent(travel_kernel(vendor_b), [[FLIGHT], [CAR], "Sorry."],
                            name="vendor_b")
    for agent in (a, b):
        enable_rac(agent, rac=engine)

    async with engine.run(agent_id="trip") as run:
        await a.get_response(messages="Fly ann with vendor A.")
        await b.get_response(messages="Fly ann with vendor B, and a car.")

    for system in (vendor_a, vendor_b):  # each flight cancelled once, in its own system
        assert_no_live_effects(system)
        assert_compensated_once(system)
    assert run.status is RunStatus.COMPENSATED
    assert sorted((r.tool, r.agent_id) for r in run.records()
                  if r.kind is RecordKind.COMPENSATION) == [
        ("travel-cancel_flight", "vendor_a"), ("travel-cancel_flight", "vendor_b")]
    report = model_b.tool_results()[-1]
    assert report.count("travel-book_flight FL-101 (via travel-cancel_flight)") == 2, report
