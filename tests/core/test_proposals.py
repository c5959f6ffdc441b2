"""Opt-in proposals of compensation pairs (an LLM stand-in) are validated before use."""

from __future__ import annotations

from typing import Any

import pytest

import rac
from rac.proposals import ProposedCompensations
from rac.testing import TravelWorld, assert_no_live_effects


def test_a_valid_proposal_is_used_and_asked_once(make_engine: Any, world: TravelWorld) -> None:
    asked: list[str] = []

    def propose(tool: str, description: str, candidates: dict[str, str]) -> Any:
        asked.append(tool)
        assert "Cancel a hotel booking." in candidates.values()
        return {"book_hotel": "cancel_hotel"}.get(tool)

    engine = make_engine(compensations={"book_flight": "cancel_flight"},
                         plugins=[ProposedCompensations(propose)])
    world.fail("book_car", "permanent")
    with engine.run() as run, pytest.raises(rac.ToolCallFailed) as failed:
        run.call("book_flight", passenger="a", origin="X", dest="Y")
        run.call("book_hotel", guest="a", city="R", nights=1)
        run.call("book_hotel", guest="b", city="R", nights=1)
        run.call("book_car", driver="a", city="R")
    assert asked.count("book_hotel") == 1
    assert [u.compensator for u in failed.value.report.compensated] == [
        "cancel_hotel", "cancel_hotel", "cancel_flight"]
    assert_no_live_effects(world)


@pytest.mark.parametrize("proposal", ["drop_database", "book_hotel", {"tool": 5},
                                      {"tool": "cancel_hotel", "args": {"x": "nowhere.y"}}])
def test_bad_proposals_are_rejected(make_engine: Any, world: TravelWorld, proposal: Any) -> None:
    engine = make_engine(compensations={}, plugins=[ProposedCompensations(
        lambda tool, d, c: proposal)])
    with engine.run() as run:
        run.call("book_hotel", guest="a", city="R", nights=1)
        report = run.rollback()
    assert [u.tool for u in report.not_undoable] == ["book_hotel"]
    assert len(world.live()) == 1
