"""A step whose checkpoint is not saved yet waits for it, at most 30 s, and once per invocation;
with ``durability="exit"`` (nothing is saved before the invocation ends) it does not wait. On
virtual time: the wait's clock (``rac_langgraph.runs.SAVE_CLOCK``, real time by default: the
save it waits for is LangGraph's background thread's) is a VirtualClock here, so the waits are
counted, not slept."""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent
from langgraph.checkpoint.memory import InMemorySaver

import rac
import rac_langgraph.runs
from rac.testing import TravelWorld, VirtualClock
from rac_langgraph import RACMiddleware
from rac_langgraph.runs import _SAVE_WAIT
from tests.adapters.langgraph import support as lg


class NeverSaves(InMemorySaver):
    """A checkpointer whose writes never land (a remote database that is down)."""

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        return {"configurable": {**config["configurable"], "checkpoint_id": checkpoint["id"]}}

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        return None

    async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any
                   ) -> Any:
        return self.put(config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config: Any, writes: Any, task_id: str,
                          task_path: str = "") -> None:
        return None


def _trip(world: TravelWorld, eng: rac.RAC, saver: Any) -> tuple[Any, lg.ScriptedModel]:
    m = lg.model(lg.turn(lg.call("book_flight", **lg.FLIGHT)),
                 lg.turn(lg.call("book_hotel", **lg.HOTEL)), lg.say("Booked."))
    return create_agent(m, lg.world_tools(world), middleware=[RACMiddleware(rac=eng)],
                        checkpointer=saver), m


@pytest.mark.parametrize("use_async", [False, True])
async def test_a_checkpoint_never_saved_is_waited_for_once_per_invocation(
        use_async: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    world, clock = TravelWorld(), VirtualClock()
    monkeypatch.setattr(rac_langgraph.runs, "SAVE_CLOCK", clock)
    eng = lg.engine()
    start = clock.now()
    for n in (1, 2):  # two turns of one thread, nothing of them ever saved
        agent, _ = _trip(world, eng, NeverSaves())
        config = {"configurable": {"thread_id": "down"}}
        user = {"messages": [("user", f"trip {n}")]}
        if use_async:
            await agent.ainvoke(user, config)
        else:
            agent.invoke(user, config)
        waited = clock.now() - start
        # the first tool step waited the whole 30 s; the second knew its invocation's turn
        assert n * _SAVE_WAIT <= waited < n * _SAVE_WAIT + 1.0, waited
    # each invocation is a turn of its own, completed, its bookings kept
    runs = eng.store.list_runs()
    assert [r.status for r in runs] == [rac.RunStatus.COMPLETED] * 2
    assert [len(eng.store.get_records(r.run_id)) for r in runs] == [2, 2]
    assert sorted(b["kind"] for b in world.live()) == ["flight", "flight", "hotel", "hotel"]


@pytest.mark.parametrize("saver", [InMemorySaver, NeverSaves])
def test_durability_exit_never_waits(saver: type[InMemorySaver],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    world, clock = TravelWorld(), VirtualClock()
    monkeypatch.setattr(rac_langgraph.runs, "SAVE_CLOCK", clock)
    eng = lg.engine()
    start = clock.now()
    agent, _ = _trip(world, eng, saver())
    agent.invoke({"messages": [("user", "trip")]}, {"configurable": {"thread_id": "t"}},
                 durability="exit")
    assert clock.now() - start < 1.0
    [run] = eng.store.list_runs()
    assert run.status is rac.RunStatus.COMPLETED
    assert len(eng.store.get_records(run.run_id)) == 2
