"""A step whose checkpoint is not saved yet waits for it, at most 30 s, and once per invocation;
with ``durability="exit"`` (nothing is saved before the invocation ends) it does not wait, nor
when the running loop named the new turn's ``input`` checkpoint at its first node's step (the
model hook of ``tell_model``, the default), so nothing need be read. On
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


class CountsReads(InMemorySaver):
    """An in-memory checkpointer that counts the searches made of it."""

    def __init__(self) -> None:
        super().__init__()
        self.searches = 0

    def list(self, *args: Any, **kwargs: Any) -> Any:
        self.searches += 1
        return super().list(*args, **kwargs)

    async def alist(self, *args: Any, **kwargs: Any) -> Any:
        self.searches += 1
        async for c in super().alist(*args, **kwargs):
            yield c


def _trip(world: TravelWorld, eng: rac.RAC, saver: Any, *, tell_model: bool = True
          ) -> tuple[Any, lg.ScriptedModel]:
    m = lg.model(lg.turn(lg.call("book_flight", **lg.FLIGHT)),
                 lg.turn(lg.call("book_hotel", **lg.HOTEL)), lg.say("Booked."))
    return create_agent(m, lg.world_tools(world),
                        middleware=[RACMiddleware(rac=eng, tell_model=tell_model)],
                        checkpointer=saver), m


@pytest.fixture
def on_save_clock(monkeypatch: pytest.MonkeyPatch) -> tuple[TravelWorld, VirtualClock, rac.RAC]:
    """A world, the virtual clock the adapter's wait for a save runs on, and an engine."""
    clock = VirtualClock()
    monkeypatch.setattr(rac_langgraph.runs, "SAVE_CLOCK", clock)
    return TravelWorld(), clock, lg.engine()


async def _invoke(agent: Any, user: Any, config: Any, use_async: bool) -> None:
    if use_async:
        await agent.ainvoke(user, config)
    else:
        agent.invoke(user, config)


@pytest.mark.parametrize("use_async", [False, True])
async def test_a_checkpoint_never_saved_is_waited_for_once_per_invocation(
        use_async: bool, on_save_clock: tuple[TravelWorld, VirtualClock, rac.RAC]) -> None:
    world, clock, eng = on_save_clock
    start = clock.now()
    for n in (1, 2):  # two turns of one thread, nothing of them ever saved
        # no model hook: the first tool step must find its turn in the checkpointer
        agent, _ = _trip(world, eng, NeverSaves(), tell_model=False)
        config = {"configurable": {"thread_id": "down"}}
        await _invoke(agent, {"messages": [("user", f"trip {n}")]}, config, use_async)
        waited = clock.now() - start
        # the first tool step waited the whole 30 s; the second knew its invocation's turn
        assert n * _SAVE_WAIT <= waited < n * _SAVE_WAIT + 1.0, waited
    # each invocation is a turn of its own, completed, its bookings kept
    runs = eng.store.list_runs()
    assert [r.status for r in runs] == [rac.RunStatus.COMPLETED] * 2
    assert [len(eng.store.get_records(r.run_id)) for r in runs] == [2, 2]
    assert sorted(b["kind"] for b in world.live()) == ["flight", "flight", "hotel", "hotel"]


@pytest.mark.parametrize("use_async", [False, True])
async def test_a_new_turn_named_by_the_running_loop_reads_and_waits_for_nothing(
        use_async: bool, on_save_clock: tuple[TravelWorld, VirtualClock, rac.RAC]) -> None:
    world, clock, eng = on_save_clock
    start = clock.now()
    for saver in (NeverSaves(), CountsReads()):
        agent, _ = _trip(world, eng, saver)
        config = {"configurable": {"thread_id": f"new-{type(saver).__name__}"}}
        await _invoke(agent, {"messages": [("user", "trip")]}, config, use_async)
    assert clock.now() == start  # no save was waited for
    assert saver.searches == 0  # the first turn of a thread: nothing was read to find it
    # the turn's run is the one a resume finds from the saved lineage: its input checkpoint's
    [own] = [c for c in saver.list(config) if c.metadata["source"] == "input"]
    run_id = rac_langgraph.runs.turn_run_id("new-CountsReads",
                                            own.config["configurable"]["checkpoint_id"])
    runs = {r.run_id: r for r in eng.store.list_runs()}
    assert runs[run_id].status is rac.RunStatus.COMPLETED
    assert len(eng.store.get_records(run_id)) == 2
    assert [r.status for r in runs.values()] == [rac.RunStatus.COMPLETED] * 2
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
