"""Running the real ``rac`` console script in a subprocess, against real SQLite files and a real
PostgreSQL server, as a person on call would."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rac.models import Record, RunStatus
from rac.stores import open_store
from rac.testing import TravelWorld
from tests.reliability.support import store_url
from tests.stores.support import drop_schema

#: The console script installed with rac-core, beside this interpreter.
RAC = str(Path(sys.executable).with_name("rac"))
STORE_KINDS = ["sqlite", "postgres"]
#: Bound on one command; generous for a loaded 2-core machine.
TIMEOUT = 180


def rac(*args: str, cwd: Path, env: dict[str, str] | None = None,
        timeout: float = TIMEOUT) -> subprocess.CompletedProcess[str]:
    """``rac ARGS...`` in ``cwd``; ``env`` adds to (or, with a None value, removes from) the
    environment."""
    full = {k: v for k, v in os.environ.items() if k not in ("RAC_STORE", "RAC_APP")}
    full.update(env or {})
    try:
        return subprocess.run([RAC, *args], cwd=cwd, capture_output=True, text=True,
                              timeout=timeout, env=full)
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"`rac {' '.join(args)}` did not finish in {timeout} s") from e


def one_line_error(out: subprocess.CompletedProcess[str], code: int = 2) -> str:
    """The one stderr line of a failed command (asserting that it is one line, with the exit
    code and nothing on stdout)."""
    assert out.returncode == code, (out.returncode, out.stdout, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rac: "), out.stderr
    assert "Traceback" not in out.stderr
    return lines[0]


def files(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` with a hash of its bytes (SQLite's -shm index and an empty
    -wal, which SQLite makes to read a WAL database, left out)."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()
            and not p.name.endswith("-shm") and not (p.name.endswith("-wal")
                                                     and p.stat().st_size == 0)
            and "__pycache__" not in p.parts}


@pytest.fixture(params=STORE_KINDS)
def log_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, not yet created log: a SQLite file, or a PostgreSQL schema of its own."""
    url = store_url(request.param, tmp_path)
    yield url
    drop_quietly(url)


def drop_quietly(url: str) -> None:
    if url.startswith("postgresql"):
        drop_schema(url)


def demo_log(url: str, cwd: Path, *args: str) -> dict[str, Any]:
    """Run ``rac demo --json`` into ``url``; the run it printed."""
    import json

    out = rac("demo", "--store", url, "--json", *args, cwd=cwd)
    assert out.returncode == 0, out.stderr
    data: dict[str, Any] = json.loads(out.stdout)
    return data


def live(cwd: Path, world: type[TravelWorld] = TravelWorld) -> list[str]:
    """The ids of the bookings live in the operator's world (``world.db`` in ``cwd``)."""
    opened = world(str(cwd / "world.db"))
    try:
        return sorted(b["booking_id"] for b in opened.live())
    finally:
        opened.close()


def records(url: str, run_id: str) -> list[Record]:
    """The run's records, read from the log as an operator's tool reads it (read-only)."""
    store = open_store(url, read_only=True)
    try:
        return store.get_records(run_id)
    finally:
        store.close()


def run_status(url: str, run_id: str) -> RunStatus:
    """The run's status in the log (read-only)."""
    store = open_store(url, read_only=True)
    try:
        info = store.get_run(run_id)
        assert info is not None
        return info.status
    finally:
        store.close()
