"""`rac resume`, `rac recover` and `rac resolve` never make things worse, run as the person on
call runs them: the real `rac` binary against real SQLite and PostgreSQL logs, with the
application's own process alive (or dead) beside it.

Reproductions of issue #27:
- `rac resume RUN --store sqlite:///ops.db` without `--app` silently used the demo's engine on
  the operator's log: it created a `demo-world.db` beside the log, "cancelled" the real booking
  there, and marked the run `compensated`;
- `rac resume` on a `needs_attention` run whose process was alive and still working rolled back
  the whole run, cancelling bookings the live agent made after the dead letter;
- `rac resolve RUN SEQ` accepted a record of a crashed run that no rollback ever touched; the
  next `rac recover` then reported the run compensated with that booking live.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rac.demo.crash import KeyedTravelWorld
from rac.demo.trip import world_path_for
from rac.models import RecordKind, RecordStatus, RunStatus
from tests.cli.support import (
    RAC,
    TIMEOUT,
    files,
    live,
    log_url,
    one_line_error,
    rac,
    records,
    run_status,
)

__all__ = ["log_url"]

#: The operator's own application: an engine over the travel world in ``world.db``.
APP = '''
import os
import rac
from rac.demo.crash import KEYED_COMPENSATIONS, KeyedTravelWorld
from rac.testing import TRAVEL_READ_ONLY

world = KeyedTravelWorld(os.path.join(os.path.dirname(os.path.abspath(__file__)), "world.db"))
engine = rac.RAC(compensations=KEYED_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                 tools=world.tools(), store=os.environ.get("OPS_LOG", "memory://"),
                 load_entrypoints=False,
                 retry=rac.RetryPolicy(max_attempts=1),
                 compensation_retry=rac.RetryPolicy(max_attempts=1))
'''

#: The application's agent: a dead letter (the hotel's undo fails), then newer work (a second
#: flight) while the process stays alive; it prints the run id and waits for a line on stdin.
OWNER = '''
import json, os, sys
import rac
from opsapp import engine, world

world.fail("book_car", "permanent")
world.fail("cancel_hotel", "permanent", message="hotel system down")
with engine.run() as run:
    run.call("book_flight", passenger="ann", origin="SFO", dest="CDG")
    run.call("book_hotel", guest="ann", city="Paris", nights=2)
    try:
        run.call("book_car", driver="ann", city="Paris")
    except rac.ToolCallFailed:
        pass
    world.faults.clear()
    second = run.call("book_flight", passenger="ann", origin="CDG", dest="NCE")
    print(json.dumps({"run_id": run.run_id, "status": str(run.status),
                      "second": second["booking_id"]}), flush=True)
    if sys.stdin.readline().strip() == "die":
        os._exit(9)
'''


@pytest.fixture
def app(tmp_path: Path, log_url: str) -> Iterator[tuple[Path, str]]:
    (tmp_path / "opsapp.py").write_text(APP)
    (tmp_path / "owner.py").write_text(OWNER)
    yield tmp_path, log_url


def start_owner(cwd: Path, url: str) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    proc = subprocess.Popen([sys.executable, "owner.py"], cwd=cwd, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, "OPS_LOG": url})
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        raise AssertionError(f"the owner process failed: {proc.communicate()[1]}")
    return proc, json.loads(line)


def test_resume_without_app_refuses_on_a_log_the_demo_did_not_write(
        app: tuple[Path, str]) -> None:
    cwd, url = app
    owner, started = start_owner(cwd, url)
    owner.communicate("die\n", timeout=TIMEOUT)
    hotel = [r for r in records(url, started["run_id"]) if r.tool == "book_hotel"][0]
    assert hotel.status is RecordStatus.COMPENSATION_FAILED
    before_live, before_files = live(cwd, KeyedTravelWorld), files(cwd)
    line = one_line_error(rac("resume", started["run_id"], "--store", url, cwd=cwd))
    assert "--app MODULE:ATTR" in line and "$RAC_APP" in line and "rac.RAC engine" in line
    line = one_line_error(rac("recover", "--store", url, cwd=cwd))
    assert "--app MODULE:ATTR" in line
    assert files(cwd) == before_files and not (cwd / "demo-world.db").exists()
    assert live(cwd, KeyedTravelWorld) == before_live
    assert run_status(url, started["run_id"]) is RunStatus.NEEDS_ATTENTION
    # with the engine named (here through RAC_APP), the owner being gone, resume finishes it
    done = rac("resume", started["run_id"], "--store", url, cwd=cwd,
               env={"RAC_APP": "opsapp:engine"})
    assert done.returncode == 0, done.stderr
    assert live(cwd, KeyedTravelWorld) == [] and run_status(url, started["run_id"]) is RunStatus.COMPENSATED


def test_resume_on_a_live_owners_run_retries_only_the_dead_letters(
        app: tuple[Path, str]) -> None:
    cwd, url = app
    owner, started = start_owner(cwd, url)
    try:
        assert started["status"] == "needs_attention"
        hotel = [b for b in live(cwd, KeyedTravelWorld) if b.startswith("HT")]
        assert live(cwd, KeyedTravelWorld) == sorted([started["second"], *hotel]) and len(hotel) == 1
        out = rac("resume", started["run_id"], "--app", "opsapp:engine", "--store", url,
                  "--json", cwd=cwd)
        assert out.returncode == 0, out.stderr
        (outcome,) = json.loads(out.stdout)
        assert outcome["outcome"] == "retried" and "alive" in outcome["reason"]
        # the dead letter is undone; the live agent's newer flight is not touched
        assert live(cwd, KeyedTravelWorld) == [started["second"]]
        assert run_status(url, started["run_id"]) is RunStatus.NEEDS_ATTENTION
        recs = records(url, started["run_id"])
        assert [r.status for r in recs if r.tool == "book_flight"] == [
            RecordStatus.COMPENSATED, RecordStatus.COMPLETED]
    finally:
        owner.communicate("end\n", timeout=TIMEOUT)
    assert owner.returncode == 0, owner.stderr


def test_two_operators_racing_on_a_live_owners_run_end_with_one_claim(
        app: tuple[Path, str]) -> None:
    cwd, url = app
    owner, started = start_owner(cwd, url)
    try:
        command = [RAC, "resume", started["run_id"], "--app", "opsapp:engine", "--store", url,
                   "--json"]
        procs = [subprocess.Popen(command, cwd=cwd, text=True, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE) for _ in range(2)]
        outs = [p.communicate(timeout=TIMEOUT) for p in procs]
        outcomes = [json.loads(o[0])[0]["outcome"] if o[0] else o[1] for o in outs]
        assert sorted(outcomes) == ["retried", "skipped"], outs
        recs = records(url, started["run_id"])
        hotel = next(r for r in recs if r.tool == "book_hotel")
        cancels = [r for r in recs if r.kind is RecordKind.COMPENSATION
                   and r.compensates == hotel.seq]
        assert [c.status for c in cancels] == [RecordStatus.FAILED, RecordStatus.COMPLETED]
        assert hotel.status is RecordStatus.COMPENSATED
        assert live(cwd, KeyedTravelWorld) == [started["second"]]
    finally:
        owner.communicate("end\n", timeout=TIMEOUT)


def test_resume_on_a_run_whose_owner_is_gone_finishes_the_rollback(
        app: tuple[Path, str]) -> None:
    cwd, url = app
    owner, started = start_owner(cwd, url)
    owner.communicate("die\n", timeout=TIMEOUT)
    out = rac("resume", started["run_id"], "--app", "opsapp:engine", "--store", url, cwd=cwd)
    assert out.returncode == 0, out.stderr
    assert f"{started['run_id']}: compensated" in out.stdout
    assert live(cwd, KeyedTravelWorld) == []


def test_recover_never_takes_a_run_from_a_live_owner(app: tuple[Path, str]) -> None:
    cwd, url = app
    script = textwrap.dedent('''
        import sys
        from opsapp import engine
        with engine.run() as run:
            run.call("book_flight", passenger="bo", origin="SFO", dest="LAX")
            print(run.run_id, flush=True)
            sys.stdin.readline()
    ''')
    (cwd / "busy.py").write_text(script)
    proc = subprocess.Popen([sys.executable, "busy.py"], cwd=cwd, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env={**os.environ, "OPS_LOG": url})
    assert proc.stdout is not None
    run_id = proc.stdout.readline().strip()
    try:
        out = rac("recover", "--app", "opsapp:engine", "--store", url, "--run", run_id,
                  "--json", cwd=cwd)
        (outcome,) = json.loads(out.stdout)
        assert outcome["outcome"] == "skipped" and "alive" in outcome["reason"]
        assert len(live(cwd, KeyedTravelWorld)) == 1 and run_status(url, run_id) is RunStatus.RUNNING
    finally:
        proc.communicate("\n", timeout=TIMEOUT)
    assert run_status(url, run_id) is RunStatus.COMPLETED


def test_resolve_refuses_a_record_no_rollback_touched(tmp_path: Path, log_url: str) -> None:
    crashed = rac("demo", "--crash-at", "book_hotel:after_outcome", "--store", log_url,
                  cwd=tmp_path)
    assert crashed.returncode == 86, crashed.stderr
    run_id = json.loads(rac("runs", "--store", log_url, "--json", cwd=tmp_path).stdout)[0][
        "run_id"]
    # the flight's outcome is written; the hotel's may be (SQLite) or may have been held in
    # the process that crashed (PostgreSQL: then the hotel may have happened)
    before = [r.status for r in records(log_url, run_id)]
    assert before[0] is RecordStatus.COMPLETED
    assert before[1] in (RecordStatus.COMPLETED, RecordStatus.PENDING)
    line = one_line_error(rac("resolve", run_id, "2", "--note", "cancelled it by phone",
                              "--store", log_url, cwd=tmp_path))
    assert "running" in line and "rac recover" in line
    assert [r.status for r in records(log_url, run_id)] == before  # nothing changed
    recovered = rac("recover", "--store", log_url, "--json", cwd=tmp_path)
    assert recovered.returncode == 0, recovered.stderr
    assert json.loads(recovered.stdout)[0]["outcome"] == "compensated"
    keyed = KeyedTravelWorld(str(tmp_path / world_path_for(log_url)))
    assert keyed.live() == []
    keyed.close()


def test_resolve_settles_only_what_a_rollback_left_live(app: tuple[Path, str]) -> None:
    cwd, url = app
    owner, started = start_owner(cwd, url)
    owner.communicate("end\n", timeout=TIMEOUT)
    run_id = started["run_id"]
    recs = records(url, run_id)
    hotel = next(r for r in recs if r.tool == "book_hotel")
    second = [r for r in recs if r.tool == "book_flight"][1]
    # the newer flight: no rollback touched it, so there is nothing of it to resolve
    line = one_line_error(rac("resolve", run_id, str(second.seq), "--note", "kept",
                              "--store", url, cwd=cwd))
    assert "no rollback left it live" in line
    out = rac("resolve", run_id, str(hotel.seq), "--note", "cancelled by phone, ref 88",
              "--by", "dana", "--store", url, "--json", cwd=cwd)
    assert out.returncode == 0, out.stderr
    settled = next(r for r in records(url, run_id) if r.seq == hotel.seq)
    assert settled.status is RecordStatus.RESOLVED
    assert settled.note is not None and settled.note.startswith("resolved by dana at ")
    assert settled.note.endswith(": cancelled by phone, ref 88")
    # the newer flight is still live: the run still needs a person
    assert run_status(url, run_id) is RunStatus.NEEDS_ATTENTION
    line = one_line_error(rac("resolve", run_id, str(hotel.seq), "--note", "again",
                              "--store", url, cwd=cwd))
    assert "resolved" in line
