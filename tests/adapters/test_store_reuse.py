"""Issue 28: one connection per engine and store. A framework that runs each turn's tools on
fresh threads (LangGraph's ToolNode, CrewAI's kickoff) used to leave one SQLite connection per
turn open, so an agent died with "unable to open database file" once the process ran out of
file descriptors. Each test runs the turns in a subprocess whose ``ulimit -n`` is 256."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

#: The file-descriptor limit the turns run under (the leak hit it at about turn 120).
FD_LIMIT = 256
ROOT = Path(__file__).resolve().parents[2]


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, FD_LIMIT))


def _turns(framework: str, turns: int, log: Path) -> str:
    """Run ``turns`` scripted turns of ``framework``'s agent on the SQLite log ``log`` under
    the fd limit; the last line of its output."""
    try:
        done = subprocess.run(
            [sys.executable, "-m", "tests.adapters.many_turns", framework, str(turns),
             str(log)],
            cwd=ROOT, preexec_fn=_limited, capture_output=True, text=True, timeout=1800,
            env={**os.environ, "PYTHONPATH": str(ROOT)})
    except subprocess.TimeoutExpired as e:  # pragma: no cover - a loaded machine's message
        pytest.fail(f"{turns} {framework} turns did not finish in {e.timeout} s on this "
                    "machine; the limit is generous, so look for a hang")
    assert done.returncode == 0, f"{framework} turns failed under ulimit -n {FD_LIMIT}:\n" \
                                 f"{done.stderr[-3000:]}"
    return done.stdout.strip().splitlines()[-1]


def _log_dir(tmp_path: Path) -> Path:
    """A folder for the log: in memory when the machine has /dev/shm (the test is about file
    descriptors, not the disk), else pytest's."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        import tempfile

        return Path(tempfile.mkdtemp(prefix="rac-fd-", dir=shm))
    return tmp_path


@pytest.mark.parametrize(("framework", "turns"), [
    ("langgraph", 2000),
    # A kickoff costs about 100x a LangGraph turn here, so 300 rather than 2,000: one leaked
    # connection per kickoff would pass the limit by kickoff 256.
    ("crewai", 300),
])
def test_turns_share_one_connection(framework: str, turns: int, tmp_path: Path) -> None:
    """More turns than the process may open files: they all run, on one connection."""
    pytest.importorskip(f"rac_{framework}")
    line = _turns(framework, turns, _log_dir(tmp_path) / "log.db")
    assert line.startswith(f"runs={turns} completed={turns} "), line
    fds = int(line.rsplit("fds=", 1)[1])
    assert fds < 32, f"the process ended with {fds} open file descriptors: {line}"
