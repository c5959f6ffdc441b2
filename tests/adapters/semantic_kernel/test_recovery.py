"""Crash recovery of a Semantic Kernel agent's run (issue 30): the process dies during a call;
a start-up engine given the kernel's functions (``prepare_recovery``) undoes what the run did
(before, the recovering engine did not know the compensators: nothing was undone)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import rac
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld
from rac_semantic_kernel import prepare_recovery
from tests.adapters.semantic_kernel.support import travel_kernel

KILLED = 86
CHILD = f"""
import asyncio, logging, os, sys
import rac
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld
from rac_semantic_kernel import enable_rac
from tests.adapters.semantic_kernel.support import FLIGHT, HOTEL, travel_kernel, trip_agent

logging.getLogger("semantic_kernel").setLevel(logging.CRITICAL)
log, world_path = sys.argv[1:]
world = TravelWorld(world_path)
world.on_call("book_hotel", lambda args: os._exit({KILLED}))
engine = rac.RAC(store="sqlite:///" + log, compensations=TRAVEL_COMPENSATIONS,
                 read_only=TRAVEL_READ_ONLY, load_entrypoints=False)
agent, _ = trip_agent(travel_kernel(world), [[FLIGHT], [HOTEL], "Booked."])
enable_rac(agent, rac=engine)
asyncio.run(agent.get_response(messages="Flight and hotel."))
sys.exit(1)
"""


def test_a_start_up_recover_undoes_a_crashed_agent_run(tmp_path: Path) -> None:
    log, world_path = tmp_path / "rac.db", tmp_path / "world.db"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    proc = subprocess.run([sys.executable, "-c", CHILD, str(log), str(world_path)], env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == KILLED, proc.stderr[-4000:]
    world = TravelWorld(str(world_path))
    assert [b["kind"] for b in world.live()] == ["flight"]

    startup = rac.RAC(store=f"sqlite:///{log}", compensations=TRAVEL_COMPENSATIONS,
                      read_only=TRAVEL_READ_ONLY, load_entrypoints=False)
    prepare_recovery(startup, travel_kernel(world), agent_id="planner")
    [recovered] = startup.recover()

    assert world.live() == []  # the crashed run's flight is cancelled through the kernel
    recs = {r.tool: r for r in startup.store.get_records(recovered.run_id)
            if r.kind is rac.RecordKind.ACTION}
    assert recs["travel-book_flight"].status is rac.RecordStatus.COMPENSATED
    # The hotel call was under way: with no lookup declared RAC cannot tell whether it
    # happened, and says so (the run needs a person), never "compensated".
    assert recs["travel-book_hotel"].status is not rac.RecordStatus.COMPENSATED
    assert recovered.status is rac.RunStatus.NEEDS_ATTENTION, recovered
    startup.store.close()
    world.close()
