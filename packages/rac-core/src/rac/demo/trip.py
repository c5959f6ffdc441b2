"""The demo's world, engine and scripted agent."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rac.demo.crash import (
    CRASH_POINTS,
    KEYED_COMPENSATIONS,
    CrashPlugin,
    KeyedTravelWorld,
    end_process,
)
from rac.engine import RAC
from rac.errors import ToolCallFailed
from rac.models import Record, RunStatus
from rac.retry import RetryPolicy
from rac.stores import DEFAULT_STORE_URL, Store, open_store
from rac.stores.sqlite import path_from_url
from rac.testing.world import TRAVEL_READ_ONLY, TravelWorld

#: The scripted agent's plan: (tool, arguments).
DEMO_STEPS: list[tuple[str, dict[str, Any]]] = [
    ("book_flight", {"passenger": "Ada Lovelace", "origin": "LHR", "dest": "CDG"}),
    ("book_hotel", {"guest": "Ada Lovelace", "city": "Paris", "nights": 3}),
    ("book_car", {"driver": "Ada Lovelace", "city": "Paris"}),
]
FAIL_CHOICES = ("none", "flight", "hotel", "car")


def world_path_for(store_url: str) -> str:
    """Where the demo keeps its world: a SQLite file beside a SQLite log, else under .rac/."""
    if store_url.startswith("sqlite://"):
        return str(Path(path_from_url(store_url)).with_name("demo-world.db"))
    return str(Path(".rac") / "demo-world.db")


def build_engine(world: TravelWorld, store: Store | str | None = None) -> RAC:
    """The demo's engine: the travel world's compensation pairs (by booking id, or by the
    booking call's idempotency key when recovering an in-doubt call), a short retry policy, and
    the world's tools, so it can compensate (and recover) on its own."""
    return RAC(compensations=KEYED_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
               tools=world.tools(), store=store,
               retry=RetryPolicy(max_attempts=3, initial_delay=0.05, max_delay=0.2, jitter=0),
               compensation_retry=RetryPolicy(max_attempts=3, initial_delay=0.05, max_delay=0.2,
                                              jitter=0),
               agent_id="demo-agent")


@dataclass
class DemoResult:
    """What a demo run left behind: the run, its records, the world, and what the agent saw."""

    run_id: str
    status: RunStatus
    records: list[Record]
    world: dict[str, list[dict[str, Any]]]
    agent_saw: list[str] = field(default_factory=list)
    #: What RAC read from the MCP server's metadata (``rac demo --mcp``): one line per tool.
    learned: list[str] = field(default_factory=list)


def world_state(world: TravelWorld) -> dict[str, list[dict[str, Any]]]:
    """The bookings still live, by kind."""
    return {"flights": world.live("flight"), "hotels": world.live("hotel"),
            "cars": world.live("car")}


def demo_runs(store_url: str, world_path: str | None = None) -> set[str]:
    """The runs ``rac demo`` wrote into the log at ``store_url``, as its world beside the log
    remembers them (empty when there is no demo world). Read-only."""
    path = Path(world_path or world_path_for(store_url))
    if not path.is_file():
        return set()
    try:
        conn = sqlite3.connect(f"file:{path.absolute()}?mode=ro", uri=True)
        try:
            rows = conn.execute("SELECT run_id FROM demo_runs").fetchall()
        finally:
            conn.close()
    except sqlite3.Error:
        return set()
    return {str(r[0]) for r in rows}


def run_demo(fail: str = "car", store: str | None = None, *, fresh_world: bool = True,
             world_path: str | None = None, crash_at: str | None = None,
             on_crash: Callable[[str, str], None] | None = None) -> DemoResult:
    """Run the scripted trip booking once, with ``fail`` naming the booking that fails for good.

    ``crash_at`` names a crash point (:data:`rac.demo.crash.CRASH_POINTS`): the process ends
    there at once, leaving the run for :func:`recover_demo`; ``on_crash(point, run_id)`` is
    called just before (the CLI says what it does).
    """
    if fail not in FAIL_CHOICES:
        raise ValueError(f"--fail must be one of {', '.join(FAIL_CHOICES)}, got {fail!r}")
    if crash_at is not None and crash_at not in CRASH_POINTS and ":" not in crash_at:
        raise ValueError(f"unknown crash point {crash_at!r}; `rac demo --crash-at list` "
                         "prints them")
    store_url = store or os.environ.get("RAC_STORE") or DEFAULT_STORE_URL
    path = world_path or world_path_for(store_url)
    log = open_store(store_url)  # first: a log RAC may not write to leaves the world alone
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    if fresh_world:
        for suffix in ("", "-wal", "-shm"):
            Path(path + suffix).unlink(missing_ok=True)
    world = KeyedTravelWorld(path)
    if fail != "none":
        world.fail(f"book_{fail}", "permanent", message=f"no {fail} available on those dates")
    engine = build_engine(world, log)
    run = engine.run(agent_id="demo-agent")
    if crash_at is not None:
        def crash_now(point: str) -> None:
            if on_crash is not None:
                on_crash(point, run.run_id)
            end_process(point)

        crash = CrashPlugin(crash_at, action=crash_now)
        crash.watch(world)
        engine.register_plugin(crash, name="rac-demo-crash")
    world.mark_demo_run(run.run_id)
    agent_saw: list[str] = []
    with run:
        for tool, args in DEMO_STEPS:
            try:
                result = run.call(tool, **args)
            except ToolCallFailed as failed:
                agent_saw.append(str(failed))
                break
            agent_saw.append(f"{tool} -> {result['booking_id']}")
    result = DemoResult(run.run_id, run.status, engine.store.get_records(run.run_id),
                        world_state(world), agent_saw)
    world.close()
    engine.store.close()
    return result


def _demo_engine(store_url: str, world_path: str | None = None
                 ) -> tuple[RAC, KeyedTravelWorld, set[str]]:
    """The demo's engine and world for the log at ``store_url``, and the runs the demo wrote
    there. Raises LookupError when there is no demo world beside the log."""
    path = world_path or world_path_for(store_url)
    if not Path(path).exists():
        raise LookupError(f"no demo world at {path}: run `rac demo --crash-at POINT` first")
    mine = demo_runs(store_url, path)
    log = open_store(store_url)  # first: a log RAC may not write to leaves the world alone
    world = KeyedTravelWorld(path)
    return build_engine(world, log), world, mine


def _recover_mine(engine: RAC, mine: Iterable[str]) -> list[Any]:
    """Recover the abandoned runs among the demo's own runs ``mine`` (never another run of
    the log: the demo's engine would undo them in the demo's world)."""
    from rac.recovery import find_unfinished

    wanted = set(mine)
    return engine.recover([r.run_id for r in find_unfinished(engine) if r.run_id in wanted])


def recover_demo_runs(store: str, mine: Iterable[str], *,
                      world_path: str | None = None) -> list[Any]:
    """``rac recover`` without ``--app`` on a demo log: recover the abandoned demo runs."""
    engine, world, known = _demo_engine(store, world_path)
    try:
        return _recover_mine(engine, set(mine) & known)
    finally:
        world.close()
        engine.store.close()


def resume_demo(run_id: str, store: str, *, world_path: str | None = None) -> Any:
    """``rac resume`` without ``--app`` of a run the demo wrote, with the demo's engine."""
    engine, world, known = _demo_engine(store, world_path)
    try:
        if run_id not in known:
            raise LookupError(f"run {run_id} was not written by `rac demo`")
        return engine.resume(run_id)
    finally:
        world.close()
        engine.store.close()


def recover_demo(store: str | None = None, *, world_path: str | None = None) -> DemoResult:
    """Recover the demo runs a crash left unfinished, with the demo's engine and world; the
    result describes the newest run recovered. Raises LookupError if there was none. Only the
    runs the demo wrote are touched."""
    store_url = store or os.environ.get("RAC_STORE") or DEFAULT_STORE_URL
    engine, world, mine = _demo_engine(store_url, world_path)
    try:
        tried = _recover_mine(engine, mine)
        recovered = [r for r in tried if r.outcome not in ("skipped", "error")]
        errors = [r for r in tried if r.outcome == "error"]
        if not recovered and not errors:
            newest = [r for r in engine.store.list_runs() if r.run_id in mine][:1]
            if newest:  # the crash came after the run had finished: say so, show it
                info = newest[0]
                return DemoResult(info.run_id, info.status,
                                  engine.store.get_records(info.run_id), world_state(world),
                                  [f"nothing left to recover: run {info.run_id} had already "
                                   f"finished ({info.status}) before the process stopped"])
        if not recovered:
            detail = f" ({errors[0].reason})" if errors else ""
            raise LookupError(f"no unfinished run to recover in {store_url}{detail}")
        last = recovered[-1]
        return DemoResult(last.run_id, last.status, engine.store.get_records(last.run_id),
                          world_state(world),
                          [last.report.render()] if last.report is not None else [])
    finally:
        world.close()
        engine.store.close()
