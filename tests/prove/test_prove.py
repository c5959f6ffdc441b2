"""``rac.testing.prove`` on worlds with planted defects (it must find each, name the injection
point and fail) and on correct setups (it must pass), under real engines and a real world."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import rac
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld, VirtualClock
from rac.testing.proof import CLEAN, COMPLETED, FALSE_CLEAN, NAMED, ProveError, Prover, prove

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def world() -> Iterator[TravelWorld]:
    w = TravelWorld()
    yield w
    w.close()


def engine_for(world: TravelWorld, **kw: Any) -> rac.RAC:
    kw.setdefault("compensations", TRAVEL_COMPENSATIONS)
    return rac.RAC(read_only=TRAVEL_READ_ONLY, tools=world.tools(), store="memory://",
                   clock=VirtualClock(), load_entrypoints=False, **kw)


def trip_of(world: TravelWorld, engine: rac.RAC, *, car: bool = True) -> Callable[[], None]:
    def trip() -> None:
        with engine.run() as run:
            run.call(world.book_flight, passenger="ann", origin="SFO", dest="CDG")
            run.call(world.book_hotel, guest="ann", city="Paris", nights=2)
            if car:
                run.call(world.book_car, driver="ann", city="Paris")
    return trip


def verdicts(proof: Any) -> dict[str, str]:
    return {r.point.name: r.verdict for r in proof.results}


def test_a_compensator_that_does_nothing_is_a_false_clean(world: TravelWorld) -> None:
    def cancel_hotel(booking_id: str) -> dict[str, Any]:
        """Cancel a hotel booking (planted defect: it answers yes and cancels nothing)."""
        return {"booking_id": booking_id, "cancelled": True}

    engine = engine_for(world)
    engine.register_tools([cancel_hotel])
    proof = prove(trip_of(world, engine), engine=engine, check=world.live, setup=world.reset)
    v = verdicts(proof)
    assert v["fail book_car#1"] == FALSE_CLEAN  # the hotel stays, RAC says the world is back
    assert v["fail book_hotel#1"] == CLEAN  # only the flight was undone there: it works
    assert [d.split(" reported")[0] for d in proof.did_nothing] == [
        f"the undo of {r.undone[0][0]} {r.undone[0][1]}" for r in proof.results
        if r.point.name == "fail book_car#1"]
    assert "book_hotel HT-" in proof.did_nothing[0]
    assert proof.exit_code == 1 and not proof.ok
    table = proof.table()
    assert "FALSE CLEAN" in table and "COMPENSATOR DID NOTHING" in table


def test_a_mapping_to_the_wrong_field_is_a_false_clean(world: TravelWorld) -> None:
    pairs = {**TRAVEL_COMPENSATIONS,
             "book_flight": rac.Compensation(tool="cancel_flight",
                                             args={"booking_id": "args.dest"})}
    engine = engine_for(world, compensations=pairs)
    proof = prove(trip_of(world, engine), engine=engine, check=world.live, setup=world.reset)
    v = verdicts(proof)
    assert v["fail book_hotel#1"] == FALSE_CLEAN and v["fail book_car#1"] == FALSE_CLEAN
    assert len(proof.did_nothing) == 1 and "book_flight" in proof.did_nothing[0]
    assert "fail book_hotel#1" in proof.did_nothing[0]  # where it was first seen
    assert proof.exit_code == 1


def test_a_missing_pair_is_named_and_fails_the_proof(world: TravelWorld) -> None:
    pairs = {k: v for k, v in TRAVEL_COMPENSATIONS.items() if k != "book_hotel"}
    engine = engine_for(world, compensations=pairs)
    proof = prove(trip_of(world, engine), engine=engine, check=world.live, setup=world.reset)
    v = verdicts(proof)
    assert v["fail book_car#1"] == NAMED
    (car,) = [r for r in proof.results if r.point.name == "fail book_car#1"]
    assert any("book_hotel" in n for n in car.named) and "HT-" in str(car.found)
    assert not proof.false_clean and proof.exit_code == 3


def test_a_tool_without_a_key_that_times_out_after_commit_is_named(world: TravelWorld) -> None:
    engine = engine_for(world)
    proof = prove(trip_of(world, engine, car=False), engine=engine, check=world.live,
                  setup=world.reset)
    (hotel,) = [r for r in proof.results if r.point.name == "timeout_after book_hotel#1"]
    assert hotel.verdict == NAMED and hotel.gap
    assert "book_hotel" in hotel.named[0] and "HT-" in str(hotel.found)
    assert "times out after it took effect" in hotel.point.describe()
    assert proof.exit_code == 3
    assert "timeout_after book_hotel#1" in proof.table()


def test_an_alternative_that_takes_over_is_completed(world: TravelWorld) -> None:
    engine = engine_for(world, alternatives={"book_car": ["rent_car"]})
    proof = prove(trip_of(world, engine), engine=engine, check=world.live, setup=world.reset,
                  points=["fail book_car"])
    (car,) = proof.results
    assert car.verdict == COMPLETED and "no rollback" in car.did
    assert proof.exit_code == 0


def test_a_correct_setup_passes_every_point(tmp_path: Path) -> None:
    from rac.demo.crash import KEYED_COMPENSATIONS, KeyedTravelWorld

    keyed = KeyedTravelWorld(str(tmp_path / "w.db"))
    engine = rac.RAC(compensations=KEYED_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                     tools=keyed.tools(), store="memory://", load_entrypoints=False)
    proof = prove(trip_of(keyed, engine), engine=engine, check=keyed.live, setup=keyed.reset)  # type: ignore[arg-type]
    assert proof.ok and proof.exit_code == 0, proof.table()
    kinds = {r.point.kind for r in proof.results}
    assert kinds == {"fail", "timeout_after", "undo_fails", "undo_timeout_after"}
    # a compensation made to fail leaves its effect named: the expected, honest outcome
    assert all(r.verdict in (CLEAN, NAMED) for r in proof.results if r.point.faults_an_undo)
    assert all(r.verdict == CLEAN for r in proof.results if not r.point.faults_an_undo)
    keyed.close()


async def test_an_async_scenario_is_proved(world: TravelWorld) -> None:
    engine = engine_for(world)

    async def trip() -> None:
        async with engine.run() as run:
            await run.acall(world.book_flight, passenger="ann", origin="SFO", dest="CDG")
            await run.acall(world.book_hotel, guest="ann", city="Paris", nights=2)

    proof = prove(trip, engine=engine, check=world.live, setup=world.reset,
                  points=["fail ", "undo_fails"])
    assert {r.point.name: r.verdict for r in proof.results} == {
        "fail book_flight#1": CLEAN, "fail book_hotel#1": CLEAN,
        "undo_fails cancel_flight of book_flight#1": NAMED}


def test_snapshot_and_compare_judge_worlds_where_as_before_is_a_diff(world: TravelWorld) -> None:
    world.book_flight("bob", "LHR", "JFK")  # someone else's booking, there before the runs
    engine = engine_for(world)

    def snapshot() -> dict[str, str]:
        return {b["booking_id"]: b["status"] for b in world.bookings()}

    def compare(before: dict[str, str], after: dict[str, str]) -> list[str]:
        return [f"{k}: {before.get(k)} -> {after.get(k)}" for k in sorted(set(after) | set(before))
                if after.get(k) != before.get(k) and after.get(k) != "cancelled"]

    proof = prove(trip_of(world, engine, car=False), engine=engine, snapshot=snapshot,
                  compare=compare, points=["fail ", "timeout_after book_hotel"])
    v = verdicts(proof)
    assert v == {"fail book_flight#1": CLEAN, "fail book_hotel#1": CLEAN,
                 "timeout_after book_hotel#1": NAMED}
    assert [b["status"] for b in world.bookings() if b["who"] == "bob"] == ["live"]


def test_a_check_that_cannot_fail_is_refused(world: TravelWorld) -> None:
    engine = engine_for(world)
    with pytest.raises(ProveError, match="cannot tell a rollback from no rollback"):
        prove(trip_of(world, engine), engine=engine, check=lambda: [], setup=world.reset)


def test_a_scenario_that_calls_nothing_through_rac_is_refused(world: TravelWorld) -> None:
    engine = engine_for(world)

    def bypass() -> None:
        world.book_flight("ann", "SFO", "CDG")  # not through RAC

    with pytest.raises(ProveError, match="made no call with side effects"):
        prove(bypass, engine=engine, check=world.live, setup=world.reset)


def test_a_proof_needs_a_way_to_start_each_run_from_the_same_world(world: TravelWorld) -> None:
    engine = engine_for(world)
    with pytest.raises(ProveError, match="setup="):
        prove(trip_of(world, engine), engine=engine, check=world.live)
    with pytest.raises(ProveError, match="not MODULE:NAME"):
        prove("no_colon", engine=engine, check=world.live, setup=world.reset)


def test_crash_points_need_a_durable_log(world: TravelWorld) -> None:
    engine = engine_for(world)
    prover = Prover(trip_of(world, engine), engine=engine, check=world.live, setup=world.reset,
                    crash=True)
    assert not [p for p in prover.points() if p.kind == "crash"]
    assert "log is in memory" in prover.skipped[0]


# -- crash points: real processes, killed with os._exit, recovered in fresh ones ------------------
@pytest.fixture
def keyed_trip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    monkeypatch.setenv("RAC_PROVE_DIR", str(tmp_path))
    sys.modules.pop("tests.prove.keyed_trip", None)
    module = importlib.import_module("tests.prove.keyed_trip")
    yield module
    module.world.close()
    module.engine.store.close()
    sys.modules.pop("tests.prove.keyed_trip", None)


def test_a_crash_really_kills_the_process_and_a_fresh_one_recovers(
        keyed_trip: ModuleType) -> None:
    prover = Prover("tests.prove.keyed_trip:trip", engine="tests.prove.keyed_trip:engine",
                    check="tests.prove.keyed_trip:live", setup="tests.prove.keyed_trip:reset",
                    crash=True)
    points = {p.name: p for p in prover.points()}
    assert not prover.skipped
    assert {"crash book_hotel#1 after_effect", "crash book_flight#1 after_outcome",
            "crash cancel_flight of book_flight#1 after_intent"} <= set(points)
    for name in ("crash book_hotel#1 after_effect",
                 "crash cancel_flight of book_flight#1 after_intent"):
        result = prover.run_point(points[name])
        # killed: the scenario's finally never ran; recovery in a new process undid it all
        assert not keyed_trip.FINISHED.exists(), name
        assert result.verdict == CLEAN and result.said_clean, result.explain()
        assert "recovered in a new process" in result.did
        assert keyed_trip.world.live() == []
        assert set(result.statuses.values()) == {"compensated"}


def test_crash_points_need_a_world_that_outlives_the_process(
        keyed_trip: ModuleType, tmp_path: Path) -> None:
    # the engine logs to a file, but the check looks at a world the child cannot reach
    other = TravelWorld()
    prover = Prover("tests.prove.keyed_trip:trip", engine="tests.prove.keyed_trip:engine",
                    check=other.live, setup="tests.prove.keyed_trip:reset", crash=True)
    with pytest.raises(ProveError, match="cannot tell a rollback"):
        prover.points()  # in this process too, the check sees nothing: refused outright
    other.close()


# -- the command and the pytest helper -------------------------------------------------------------
def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    paths = [*env.get("PYTHONPATH", "").split(os.pathsep), str(ROOT), *sys.path]
    full = {**os.environ, **env, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    return subprocess.run(args, cwd=cwd, env=full, capture_output=True, text=True,
                          timeout=600, check=False)


def test_rac_prove_prints_the_table_and_exits_with_the_verdict(tmp_path: Path) -> None:
    (tmp_path / "bad_undo.py").write_text(
        "import rac\n"
        "from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld\n"
        f"world = TravelWorld({str(tmp_path / 'w.db')!r})\n"
        "def cancel_car(booking_id: str) -> dict:\n"
        "    '''Cancel a car (planted defect: does nothing).'''\n"
        "    return {'booking_id': booking_id, 'cancelled': True}\n"
        "tools = [t for t in world.tools() if t.__name__ != 'cancel_car'] + [cancel_car]\n"
        "engine = rac.RAC(compensations=TRAVEL_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,\n"
        "                 tools=tools, store='memory://', load_entrypoints=False)\n"
        "def trip():\n"
        "    with engine.run() as run:\n"
        "        run.call(world.book_car, driver='ann', city='Paris')\n"
        "        run.call(world.book_hotel, guest='ann', city='Paris', nights=1)\n")
    base = [str(Path(sys.executable).parent / "rac"), "prove", "--app", "bad_undo:engine",
            "--scenario", "bad_undo:trip", "--check", "bad_undo:world.live",
            "--setup", "bad_undo:world.reset"]
    env: dict[str, str] = {}  # the module is found in the current folder, as with python -m
    out = _run(base, tmp_path, env)
    assert out.returncode == 1, out.stderr
    assert "fail book_hotel#1" in out.stdout and "FALSE CLEAN" in out.stdout
    assert "COMPENSATOR DID NOTHING" in out.stdout and "book_car CR-" in out.stdout
    js = _run([*base, "--json", "--point", "fail book_hotel"], tmp_path, env)
    assert js.returncode == 1
    data = json.loads(js.stdout)
    assert data["false_clean"] == ["fail book_hotel#1"] and data["exit_code"] == 1
    bad = _run([*base[:3], "bad_undo:nope", *base[4:]], tmp_path, env)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "nope" in bad.stderr


def test_proof_test_makes_one_test_per_injection_point(tmp_path: Path) -> None:
    (tmp_path / "test_user_trip.py").write_text(
        "import rac\n"
        "from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld\n"
        "from rac.testing.pytest_plugin import proof_test\n"
        "world = TravelWorld()\n"
        "engine = rac.RAC(compensations=TRAVEL_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,\n"
        "                 tools=world.tools(), store='memory://', load_entrypoints=False)\n"
        "def trip():\n"
        "    with engine.run() as run:\n"
        "        run.call(world.book_flight, passenger='ann', origin='SFO', dest='CDG')\n"
        "        run.call(world.book_hotel, guest='ann', city='Paris', nights=2)\n"
        "test_trip = proof_test(trip, engine=engine, check=world.live, setup=world.reset)\n"
        "def test_fixtures(rac_engine, rac_clock, rac_log, rac_travel_world):\n"
        "    engine = rac_engine(compensations=TRAVEL_COMPENSATIONS,\n"
        "                        tools=rac_travel_world.tools())\n"
        "    assert engine.store.url == rac_log and engine.clock is rac_clock\n"
        "    with engine.run() as run:\n"
        "        run.call(rac_travel_world.book_flight, passenger='a', origin='X', dest='Y')\n"
        "    assert len(rac_travel_world.live()) == 1\n")
    out = _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA",
                str(tmp_path / "test_user_trip.py")], tmp_path, {})
    assert "PASSED test_user_trip.py::test_trip[fail book_flight#1]" in out.stdout
    assert "PASSED test_user_trip.py::test_trip[undo_fails cancel_flight of book_flight#1]" \
        in out.stdout
    assert "FAILED test_user_trip.py::test_trip[timeout_after book_hotel#1]" in out.stdout
    assert "RAC did:" in out.stdout  # the failing point explains itself
    assert "PASSED test_user_trip.py::test_fixtures" in out.stdout
    assert out.returncode == 1
