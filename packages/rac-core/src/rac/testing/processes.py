"""What a killed process leaves behind, for tests that crash a run in the test's own process."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rac.engine import RAC


def abandon_runs(engine: RAC) -> list[str]:
    """Leave ``engine``'s live runs as a killed process would: its heartbeat stops, its log is
    closed, and the leases of its runs have run out (as they would once ``lease_seconds``
    passed), so that another engine may recover them. Returns their run ids. The engine is
    not to be used afterwards."""
    held = engine.leases.held()
    engine.leases.close()
    ended = engine.clock.now() - 1.0
    for log in held:
        engine.store.update_run(log.run_id, lease_until=ended)
    engine.store.close()
    return [log.run_id for log in held]
