"""rac-langgraph passes the adapter conformance suite (RACMiddleware on create_agent)."""

from __future__ import annotations

import pytest

import rac
from rac.models import RecordKind, RunStatus
from rac.testing import AdapterConformance, TravelWorld, assert_no_live_effects
from rac_langgraph.testing import ConformanceHarness


class TestConformance(AdapterConformance):
    @pytest.fixture
    def adapter(self) -> ConformanceHarness:
        return ConformanceHarness()

    def test_the_delegate_is_rolled_back_in_a_scope_of_its_own(
            self, adapter: ConformanceHarness, engine: rac.RAC, world: TravelWorld) -> None:
        """Promise 5 (the suite's ``test_the_parent_hears_what_its_delegate_undid``) as
        LangGraph keeps it: the agent used as a tool runs in a nested scope of the parent's
        run (issue 29), so the delegate's failure rolls back the delegate's scope, not the run.
        Everything the delegate did is undone, in the one run, and the parent's model hears it
        whatever the delegate's model said; the parent's turn then goes on and ends, and the
        run is ``completed``."""
        world.fail("book_car", "permanent", message="no cars")
        flight = ("book_flight", {"passenger": "ann1", "origin": "SFO", "dest": "CDG"})
        car = ("book_car", {"driver": "ann", "city": "Paris"})
        result = adapter.run_delegating_turn(engine, world, ["All done."],
                                             [[flight], [car], "Done."], agent_id="travel")
        assert_no_live_effects(world)
        recs = self.records(engine)
        assert len({r.run_id for r in recs}) == 1, self.actions(recs)
        assert self.compensations(recs) == ["cancel_flight"]
        assert {r.scope for r in recs if r.kind is RecordKind.ACTION and r.agent_id != "travel"} \
            == {"0.1"}
        heard = [t.content for t in result.told if "book_flight FL-101" in t.content]
        assert heard, f"the parent's model was never told the flight was undone: {result.told}"
        [info] = engine.store.list_runs()
        assert info.status is RunStatus.COMPLETED, (info.status, self.actions(recs))
