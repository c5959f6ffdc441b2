"""LlamaIndex's own persistence under RAC (issue 30, promises 4 and 7).

A ``Context`` saved mid-run (``handler.ctx.to_dict()``) and resumed in a new process after the
first one was killed continues the crashed RAC run: the calls the resumed workflow makes again
get their logged results (no second booking), and a later failure undoes the crashed process's
bookings too. A context saved at a human-in-the-loop pause and resumed after its handler was
cancelled (which rolled the run back) tells the model what was undone before anything runs.

No ``from __future__ import annotations``: LlamaIndex finds the ``Context`` parameter by its
annotation object.
"""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.workflow import Context, HumanResponseEvent, InputRequiredEvent

from rac.models import RecordKind, RecordStatus, RunStatus
from rac.testing import TravelWorld, assert_compensated_once, assert_no_live_effects
from rac_llamaindex import enable_rac, rac_run_of
from rac_llamaindex.testing import ScriptedModel
from tests.adapters.llamaindex.approval import approved_charge
from tests.adapters.llamaindex.support import (
    PAR_CAR,
    PAR_FLIGHT,
    PAR_HOTEL,
    engine,
    world_tools,
)

#: Exit status of the killed child (``os._exit`` as its model is asked for the third turn).
KILLED = 86

#: The first process: books the flight and the hotel, saves the workflow's Context when the
#: hotel's result is out (what an app persisting each event does), and dies before its model
#: answers again, with its run open. A workflow resumed from that snapshot runs the hotel call
#: again (LlamaIndex's own doing: the step had not finished when the snapshot was taken).
CHILD = f"""
import asyncio, json, os, sys
from pathlib import Path
from llama_index.core.agent.workflow import FunctionAgent, ToolCallResult
from rac.testing import TravelWorld
from rac_llamaindex import enable_rac
from rac_llamaindex.testing import ScriptedModel
from tests.adapters.llamaindex.support import PAR_FLIGHT, PAR_HOTEL, engine, world_tools

log, world_path, snapshot = sys.argv[1:]
world = TravelWorld(world_path)
model = ScriptedModel([[("book_flight", PAR_FLIGHT)], [("book_hotel", PAR_HOTEL)],
                       lambda given: os._exit({KILLED})])
agent = enable_rac(FunctionAgent(name="travel", llm=model.function_calling_llm(),
                                 tools=world_tools(world)), engine(store="sqlite:///" + log))

async def main():
    handler = agent.run(user_msg="Fly ann to Paris with a hotel and a car.")
    async for event in handler.stream_events():
        if isinstance(event, ToolCallResult) and event.tool_name == "book_hotel":
            Path(snapshot).write_text(json.dumps(handler.ctx.to_dict()))
    await handler

asyncio.run(main())
sys.exit(1)  # the turn finished: the kill never happened
"""


def _killed_run(tmp_path: Path) -> tuple[str, Path, Path]:
    log, world_path, snapshot = (tmp_path / "rac.db", tmp_path / "world.db",
                                 tmp_path / "ctx.json")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    proc = subprocess.run([sys.executable, "-c", CHILD, str(log), str(world_path),
                           str(snapshot)], env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    assert proc.returncode == KILLED, proc.stderr[-4000:]
    return f"sqlite:///{log}", world_path, snapshot


async def test_a_context_resumed_after_kill_9_continues_the_crashed_run(tmp_path: Path) -> None:
    url, world_path, snapshot = _killed_run(tmp_path)
    world = TravelWorld(str(world_path))
    assert sorted(b["kind"] for b in world.live()) == ["flight", "hotel"]
    world.fail("book_car", "permanent", message="no cars")
    rac_engine = engine(store=url)
    [crashed] = rac_engine.store.list_runs()
    assert crashed.status is RunStatus.RUNNING

    model = ScriptedModel([[("book_car", PAR_CAR)], "No car: nothing is booked."])
    agent = enable_rac(FunctionAgent(name="travel", llm=model.function_calling_llm(),
                                     tools=world_tools(world)), rac_engine)
    ctx = Context.from_dict(agent, json.loads(snapshot.read_text()))
    handler = agent.run(ctx=ctx)
    assert str(await handler) == "No car: nothing is booked."

    # The resumed workflow asked for the flight and the hotel again; neither was booked twice.
    assert [b["kind"] for b in world.bookings()] == ["flight", "hotel"]
    assert "book_flight" not in world.calls and "book_hotel" not in world.calls
    assert_no_live_effects(world)  # the crashed process's bookings were undone too
    assert_compensated_once(world)
    run = rac_run_of(handler)
    assert run is not None and run.run_id == crashed.run_id  # the same run went on
    [info] = rac_engine.store.list_runs()
    assert info.status is RunStatus.COMPENSATED
    actions = [(r.tool, r.status) for r in run.records() if r.kind is RecordKind.ACTION]
    assert actions == [("book_flight", RecordStatus.COMPENSATED),
                       ("book_hotel", RecordStatus.COMPENSATED),
                       ("book_car", RecordStatus.FAILED)]
    report = model.inputs[-1].tool_results()[-1]
    assert "book_hotel HT-102 (via cancel_hotel)" in report
    assert "book_flight FL-101 (via cancel_flight)" in report
    assert "world is back" in report
    rac_engine.store.close()
    world.close()


async def test_a_pause_resumed_after_its_run_was_rolled_back_is_told_first() -> None:
    """Save at the pause, cancel the handler (RAC rolls the run back), resume later: the
    resumed step's call does not run; the model hears what was undone, and replans."""
    world = TravelWorld()

    charge = {"customer": "ann", "amount": 420.0}
    model = ScriptedModel([[("book_flight", PAR_FLIGHT)], [("charge_card", charge)],
                           lambda given: [("book_hotel", PAR_HOTEL)]
                           if "Undone" in given.text else "no notice",
                           [("book_flight", PAR_FLIGHT)], "Booked again, hotel too."])
    rac_engine = engine(compensations={"book_flight": "cancel_flight",
                                       "book_hotel": "cancel_hotel",
                                       "charge_card": "refund_charge"})
    tools = [approved_charge(world),
             *world_tools(world, ("book_flight", "cancel_flight", "book_hotel",
                                  "cancel_hotel", "refund_charge"))]
    agent = enable_rac(FunctionAgent(name="travel", llm=model.function_calling_llm(),
                                     tools=tools), rac_engine)

    handler = agent.run(user_msg="Fly ann to Paris, charge her card, book a hotel.")
    saved: dict[str, Any] | None = None
    async for event in handler.stream_events():
        if isinstance(event, InputRequiredEvent):
            saved = handler.ctx.to_dict()
            await handler.cancel_run()
            break
    paused = rac_run_of(handler)
    assert saved is not None and paused is not None
    try:
        await handler
    except BaseException:  # noqa: BLE001 - the cancelled workflow's own ending
        pass
    assert paused.status is RunStatus.COMPENSATED  # the cancel rolled the flight back
    assert world.live() == []

    resumed = agent.run(ctx=Context.from_dict(agent, saved))
    resumed.ctx.send_event(HumanResponseEvent(response="yes"))  # the person approves, late
    assert str(await resumed) == "Booked again, hotel too."

    told = model.inputs[2].tool_results()[-1]
    assert "ended compensated" in told and "book_flight FL-101" in told, told
    assert "Not run: charge_card" in told, told
    assert "charge_card" not in world.calls  # never charged after the rollback
    assert sorted(b["kind"] for b in world.live()) == ["flight", "hotel"]
    run = rac_run_of(resumed)
    assert run is not None and run.run_id != paused.run_id
    assert run.status is RunStatus.COMPLETED

