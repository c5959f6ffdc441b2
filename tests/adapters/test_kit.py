"""The adapter kit's own promises (rac.adapters), beyond what the conformance suite checks
through real adapters."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from pydantic import BaseModel

import rac
from rac.adapters import (
    CallRefused,
    RunRegistry,
    ToolCache,
    UnknownToolError,
    engine_for,
    offer_to_rac,
    open_or_join,
    params_from_schema,
    registry_of,
    route,
)
from rac.testing import TravelWorld, abandon_runs


def test_engine_from_an_engine_and_keywords_is_refused() -> None:
    engine = rac.RAC(store="memory://", load_entrypoints=False)
    with pytest.raises(rac.ConfigurationError, match="not both.*compensations"):
        engine_for(engine, {"compensations": {"a": "b"}})
    with pytest.raises(rac.ConfigurationError, match="must be a rac.RAC"):
        engine_for("memory://", {})  # type: ignore[arg-type]
    with pytest.raises(rac.ConfigurationError, match="not a rac.RAC keyword"):
        engine_for(None, {"store": "memory://", "compensation": {}})


def test_engine_from_keywords_gets_the_plugin_once_and_the_control_flow() -> None:
    class Plugin:
        @rac.hookimpl
        def rac_normalize_result(self, tool: str, result: Any) -> Any:
            return None

    class Stop(Exception):
        pass

    engine = engine_for(None, {"store": "memory://", "load_entrypoints": False},
                        plugin=Plugin(), plugin_name="fw", passthrough=(Stop,), agent_id="a1")
    again = engine_for(engine, {}, plugin=Plugin(), plugin_name="fw", passthrough=(Stop,))
    assert again is engine and engine.agent_id == "a1"
    assert sum(isinstance(p, Plugin) for p in engine.plugin_manager.get_plugins()) == 1
    assert Stop in engine.passthrough and CallRefused not in engine.passthrough


def test_tools_offered_to_rac_undo_without_being_the_agents(world: TravelWorld) -> None:
    """``tools=`` next to an engine (``offer_to_rac``): the compensator is callable by RAC,
    converted by the adapter's ``convert_tool``, though no agent tool is called that."""
    engine = rac.RAC(store="memory://", load_entrypoints=False,
                     compensations={"book_flight": "cancel_flight"})
    converted: list[str] = []

    def convert(fn: Any) -> Any:
        converted.append(fn.__name__)
        return fn

    assert engine_for(engine, {"tools": [world.cancel_flight]}, convert_tool=convert) is engine
    assert converted == ["cancel_flight"] and "cancel_flight" in engine.tools
    offer_to_rac(engine, [])  # nothing to offer: nothing changes
    with engine.run() as run:
        run.call(world.book_flight, passenger="ann", origin="LHR", dest="CDG")
        report = run.rollback(reason="the trip was called off")
    assert report.clean and [u.compensator for u in report.compensated] == ["cancel_flight"]
    assert world.live() == [] and world.calls["cancel_flight"] == 1


def test_registry_is_bounded_and_never_evicts_a_busy_run(world: TravelWorld) -> None:
    engine = rac.RAC(store="memory://", load_entrypoints=False, tools=world.tools(),
                     compensations={"book_flight": "cancel_flight"})
    runs: RunRegistry[str] = RunRegistry(engine, limit=2)
    release, started = threading.Event(), threading.Event()

    def slow(args: dict[str, Any]) -> None:
        started.set()
        assert release.wait(60)

    world.on_call("book_flight", slow)
    busy = runs.run_for("busy", agent_id="a")
    t = threading.Thread(target=busy.call, args=("book_flight",),
                         kwargs={"passenger": "p", "origin": "A", "dest": "B"})
    t.start()
    assert started.wait(60)
    for key in ("k1", "k2", "k3"):
        runs.run_for(key, agent_id="a")
    assert "busy" in runs and len(runs) <= 3  # the busy run stays; idle ones went
    assert "k1" not in runs
    release.set()
    t.join()
    runs.run_for("k4", agent_id="a")
    assert "busy" not in runs and len(runs) == 2
    assert busy.status is rac.RunStatus.COMPLETED  # finished as it was let go


def test_registry_of_keeps_one_per_engine() -> None:
    engine = rac.RAC(store="memory://", load_entrypoints=False)
    first = registry_of(engine, "fw.turns", RunRegistry)
    assert registry_of(engine, "fw.turns", RunRegistry) is first


def test_params_from_a_json_schema_and_a_pydantic_model() -> None:
    class Args(BaseModel):
        booking_id: str
        reason: str = "user"

    assert params_from_schema(Args) == (["booking_id", "reason"], ["booking_id"])
    assert params_from_schema({"type": "object", "properties": {"a": {}, "b": {}},
                               "required": ["b", "zzz"]}) == (["a", "b"], ["b"])
    assert params_from_schema({"type": "string"}) == (None, [])
    assert params_from_schema(None) == (None, [])


def test_tool_cache_is_bounded_by_identity() -> None:
    made: list[object] = []
    cache: ToolCache[str] = ToolCache(lambda o: made.append(o) or f"t{len(made)}", limit=2)
    a, b, c = object(), object(), object()
    assert cache(a) == "t1" and cache(a) == "t1"
    cache(b)
    cache(c)
    assert len(cache) == 2
    assert cache(a) == "t4"  # let go as the least recently used, converted again


def test_route_names_a_tool_nobody_has(world: TravelWorld) -> None:
    engine = rac.RAC(store="memory://", load_entrypoints=False)
    with engine.run() as run:
        invoke = route(run, "book_flight", lambda a: "own", hint="register it here")
        assert invoke("book_flight", {}) == "own"
        with pytest.raises(UnknownToolError, match="rent_car is neither.*register it here"):
            invoke("rent_car", {})


def test_open_or_join_joins_the_open_run_sync_and_async() -> None:
    engine = rac.RAC(store="memory://", load_entrypoints=False)
    with open_or_join(engine, agent_id="outer") as outer, \
            open_or_join(engine, agent_id="inner") as inner:
        assert inner is outer

    async def nested() -> tuple[rac.Run, rac.Run]:
        async with open_or_join(engine) as a:
            async with open_or_join(engine) as b:
                return a, b

    a, b = asyncio.run(nested())
    assert a is b and a.status is rac.RunStatus.COMPLETED


def test_a_batch_call_not_started_when_the_rollback_began_is_refused(world: TravelWorld) -> None:
    """The calls of one model message are one batch: after a sibling's failure rolled the run
    back, a call of that batch that had not started is refused and never runs."""
    from rac.adapters import Batch, supports_batches

    if not supports_batches():  # pragma: no cover - a core without batch=
        pytest.skip("this core's Run.execute takes no batch=")
    world.fail("book_car", "permanent", message="no cars")
    engine = rac.RAC(store="memory://", load_entrypoints=False, tools=world.tools(),
                     compensations={"book_flight": "cancel_flight", "book_car": "cancel_car",
                                    "book_hotel": "cancel_hotel"})
    with engine.run() as run:
        batch = Batch(run, "message-1")

        def invoke(name: str, args: dict[str, Any]) -> Any:
            return run.tool(name).invoke(args)  # type: ignore[union-attr]

        assert batch.execute("book_flight", {"passenger": "p", "origin": "A", "dest": "B"},
                             invoke).ok
        assert not batch.execute("book_car", {"driver": "p", "city": "B"}, invoke).ok
        late = batch.execute("book_hotel", {"guest": "p", "city": "B", "nights": 1}, invoke)
        later = Batch(run, "message-2").execute(
            "book_hotel", {"guest": "p", "city": "B", "nights": 1}, invoke)
    assert late.refused and "same model turn" in (late.message or "")
    assert later.ok  # the replan's message is a batch of its own
    assert world.calls.get("book_hotel") == 1


FLIGHT = {"passenger": "ann", "origin": "SFO", "dest": "CDG"}


def _through(run: rac.Run, agent: str) -> Any:
    """An ``invoke`` calling ``agent``'s tools of ``run``."""

    def invoke(name: str, args: dict[str, Any]) -> Any:
        tool = run.tool(name, agent)
        assert tool is not None
        return tool.invoke(args)

    return invoke


def _two_vendors(engine: rac.RAC, a: TravelWorld, b: TravelWorld) -> rac.Run:
    """A run in which vendors a and b each book a flight through their own ``book_flight``
    (tools of one name, two systems), then b's car fails for good."""
    b.fail("book_car", "permanent", message="no cars")
    with engine.run() as run:
        run.add_tools(a.tools(), agent_id="vendor-a")
        run.add_tools(b.tools(), agent_id="vendor-b")

        def through(agent: str) -> Any:
            return _through(run, agent)

        assert run.execute("book_flight", FLIGHT, through("vendor-a"), agent_id="vendor-a").ok
        assert run.execute("book_flight", FLIGHT, through("vendor-b"), agent_id="vendor-b").ok
        assert not run.execute("book_car", {"driver": "ann", "city": "Paris"},
                               through("vendor-b"), agent_id="vendor-b").ok
    return run


def test_tools_of_one_name_offered_by_two_agents_each_undo_their_own() -> None:
    """Promise 1 of the adapter kit: two agents' tools of one name are two tools; a rollback
    undoes each agent's call through that agent's compensator, never the other's."""
    a, b = TravelWorld(), TravelWorld()
    engine = rac.RAC(store="memory://", load_entrypoints=False,
                     compensations={"book_flight": "cancel_flight", "book_car": "cancel_car"})
    run = _two_vendors(engine, a, b)
    assert run.status is rac.RunStatus.COMPENSATED
    for world in (a, b):
        [flight] = world.bookings()
        assert (flight["status"], flight["cancellations"]) == ("cancelled", 1)
    comps = [(r.tool, r.agent_id) for r in run.records() if r.kind is rac.RecordKind.COMPENSATION]
    assert comps == [("cancel_flight", "vendor-b"), ("cancel_flight", "vendor-a")]


def test_recovery_undoes_each_agents_call_through_its_own_tools(tmp_path: Any) -> None:
    """The tools an engine is given per agent (``register_tools(..., agent_id=...)``, what a
    start-up recovery needs) reach each agent's system when a crashed run is recovered."""
    a, b = TravelWorld(), TravelWorld()
    pairs = {"book_flight": "cancel_flight"}
    url = f"sqlite:///{tmp_path / 'rac.db'}"
    crashed = rac.RAC(store=url, load_entrypoints=False, compensations=pairs)
    run = crashed.run()
    run.__enter__()  # never left: the process "dies" with the run open
    for agent, world in (("vendor-a", a), ("vendor-b", b)):
        run.add_tools(world.tools(), agent_id=agent)
        assert run.execute("book_flight", FLIGHT, _through(run, agent), agent_id=agent).ok
    abandon_runs(crashed)  # killed: its heartbeat stops, its lease runs out
    fresh = rac.RAC(store=url, load_entrypoints=False, compensations=pairs)
    fresh.register_tools(a.tools(), agent_id="vendor-a")
    fresh.register_tools(b.tools(), agent_id="vendor-b")
    [recovered] = fresh.recover(stale_after=0.0)
    assert recovered.outcome == "compensated", recovered
    for world in (a, b):
        [flight] = world.bookings()
        assert (flight["status"], flight["cancellations"]) == ("cancelled", 1)
    fresh.store.close()
