"""Crash at every boundary: the demo process exits hard (os._exit) at each enumerated point, then
a fresh process recovers, and the world's own ledger is checked. SQLite and PostgreSQL.

The full matrix forks its processes from the test process (a child that never touched the log
or the world, so each is a fresh process; only the imports are shared, which keeps the matrix
fast); a few points also go end to end through the ``rac`` command in new interpreters.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rac.cli.render import run_json
from rac.demo.crash import CRASH_EXIT_CODE, CRASH_POINTS, KeyedTravelWorld
from rac.demo.trip import recover_demo, run_demo, world_path_for
from tests.reliability.support import check_log_settled, check_world_after_abort, drop, store_url

_FORK = multiprocessing.get_context("fork")


def _crash_child(point: str, url: str, cwd: str) -> None:
    os.chdir(cwd)
    run_demo(store=url, crash_at=point)
    os._exit(0)  # the point was never reached


def _recover_child(url: str, cwd: str, out: str) -> None:
    os.chdir(cwd)
    try:
        result = recover_demo(url)
        obj = run_json(result.run_id, str(result.status), result.records)
        obj["world"] = result.world
    except LookupError as e:
        obj = {"error": str(e)}
    Path(out).write_text(json.dumps(obj))
    os._exit(0)


def _in_child(target: object, *args: str) -> int:
    proc = _FORK.Process(target=target, args=args)
    proc.start()
    proc.join(120)
    assert proc.exitcode is not None, "child hung"
    return proc.exitcode


_MAIN = "import sys; from rac.cli import main; sys.exit(main(sys.argv[1:]))"


def rac_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("RAC_STORE", None)
    return subprocess.run([sys.executable, "-c", _MAIN, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_crash_points_are_listed_one_per_line(tmp_path: Path) -> None:
    out = rac_cli("demo", "--crash-at", "list", cwd=tmp_path)
    assert out.returncode == 0
    assert out.stdout.split() == CRASH_POINTS
    assert len(CRASH_POINTS) == len(set(CRASH_POINTS)) >= 15


def _check(point: str, url: str, tmp_path: Path, code: int, obj: dict[str, object]) -> None:
    world = KeyedTravelWorld(str(tmp_path / world_path_for(url)))
    try:
        # After rollback:after_end the run had already finished: recovery shows it as it is.
        assert code == 0 and obj.get("status") == "compensated", obj
        assert obj["world"] == {"flights": [], "hotels": [], "cars": []}
        check_log_settled(url, str(obj["run_id"]))
        check_world_after_abort(world)
    finally:
        world.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
@pytest.mark.parametrize("point", CRASH_POINTS)
def test_crash_at_every_point_then_recover(point: str, kind: str, tmp_path: Path) -> None:
    url = store_url(kind, tmp_path)
    try:
        code = _in_child(_crash_child, point, url, str(tmp_path))
        assert code == CRASH_EXIT_CODE, f"the demo never reached {point} (exit {code})"
        out = tmp_path / "recovered.json"
        code = _in_child(_recover_child, url, str(tmp_path), str(out))
        assert code == 0
        _check(point, url, tmp_path, 0, json.loads(out.read_text()))
    finally:
        drop(url)


@pytest.mark.parametrize(("kind", "point"), [
    ("sqlite", "book_hotel:after_effect"), ("sqlite", "cancel_flight:after_intent"),
    ("postgres", "cancel_hotel:after_effect")])
def test_crash_and_recover_through_the_cli(point: str, kind: str, tmp_path: Path) -> None:
    url = store_url(kind, tmp_path)
    try:
        crashed = rac_cli("demo", "--crash-at", point, "--store", url, cwd=tmp_path)
        assert crashed.returncode == CRASH_EXIT_CODE, (crashed.stdout, crashed.stderr)
        recovered = rac_cli("demo", "--recover", "--json", "--store", url, cwd=tmp_path)
        assert recovered.returncode == 0, recovered.stderr
        _check(point, url, tmp_path, 0, json.loads(recovered.stdout))
    finally:
        drop(url)
