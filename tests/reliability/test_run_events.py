"""Issue 28 ("one owner for a run's state"): a run's status is decided by one table keyed by
(status, event), ``rac.lifecycle.RUN_EVENTS``, and the rollback's computed outcome; every
change the table makes is a legal change of ``RUN_TRANSITIONS``, and the status sets the
other modules use are derived from it."""

from __future__ import annotations

import pytest

import rac
from rac import recovery
from rac.lifecycle import IDLE, RUN_EVENTS, RUN_TRANSITIONS, UNFINISHED, RunEvent, run_after
from rac.models import RunStatus
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld

S = RunStatus


def test_every_change_of_the_event_table_is_a_legal_transition() -> None:
    for (status, event), new in RUN_EVENTS.items():
        assert new is status or new in RUN_TRANSITIONS[status], (status, event, new)


@pytest.mark.parametrize("status", list(S))
def test_a_call_reopens_only_an_idle_run_and_a_rollback_starts_from_anywhere(
        status: RunStatus) -> None:
    assert run_after(status, RunEvent.CALL_BEGAN) is (S.RUNNING if status in IDLE else status)
    assert run_after(status, RunEvent.ROLLBACK_BEGAN) is S.COMPENSATING
    assert run_after(status, RunEvent.STEP_DONE) is (S.COMPLETED if status is S.RUNNING
                                                      else status)
    assert run_after(status, RunEvent.RESOLVED) is (S.RESOLVED if status is S.NEEDS_ATTENTION
                                                     else status)


def test_the_status_sets_come_from_the_lifecycle_module() -> None:
    assert IDLE == {S.COMPLETED, S.COMPENSATED, S.RESOLVED}
    assert set(recovery.UNFINISHED) == UNFINISHED == {S.RUNNING, S.COMPENSATING}


def test_a_run_finished_after_every_call_follows_the_table() -> None:
    world = TravelWorld()
    engine = rac.RAC(compensations=TRAVEL_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                     tools=world.tools(), load_entrypoints=False)
    run = engine.run()
    seen: list[RunStatus] = []
    for city in ("Paris", "Rome"):
        run.call("book_hotel", guest="ann", city=city, nights=1)
        seen.append(run.status)
        run.finish()
        seen.append(run.status)
    run.rollback()
    seen.append(run.status)
    assert seen == [S.RUNNING, S.COMPLETED, S.RUNNING, S.COMPLETED, S.COMPENSATED]
    assert world.live() == []
