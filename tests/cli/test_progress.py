"""Long operations show progress (issue 31): ``engine.recover(progress=...)`` reports each run
as it is done, and ``rac recover`` draws it on a terminal only (never into a pipe)."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path
from typing import Any

import rac
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld, abandon_runs
from tests.cli.support import TIMEOUT

APP = '''
import os
import rac
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld
world = TravelWorld(os.path.join(os.path.dirname(os.path.abspath(__file__)), "world.db"))
engine = rac.RAC(compensations=TRAVEL_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                 tools=world.tools(), store=os.environ["OPS_LOG"], load_entrypoints=False)
'''


def crashed_runs(tmp_path: Path, n: int) -> tuple[str, TravelWorld]:
    """``n`` runs a killed process left running, each with a live flight."""
    url = f"sqlite:///{tmp_path / 'log.db'}"
    world = TravelWorld(str(tmp_path / "world.db"))
    engine = rac.RAC(compensations=TRAVEL_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                     tools=world.tools(), store=url, load_entrypoints=False)
    for i in range(n):
        run = engine.run()
        run.__enter__()
        run.call("book_flight", passenger=f"p{i}", origin="SFO", dest="CDG")
    assert len(abandon_runs(engine)) == n
    return url, world


def test_recover_reports_each_run_as_it_is_done(tmp_path: Path) -> None:
    url, world = crashed_runs(tmp_path, 3)
    engine = rac.RAC(compensations=TRAVEL_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                     tools=world.tools(), store=url, load_entrypoints=False)
    seen: list[tuple[int, int, str]] = []
    out = engine.recover(progress=lambda done, total, what: seen.append((done, total, what)))
    assert [o.outcome for o in out] == ["compensated"] * 3 and world.live() == []
    assert [(d, t) for d, t, _ in seen] == [(1, 3), (2, 3), (3, 3)]
    assert [w for _, _, w in seen] == [f"{o.run_id}: compensated" for o in out]
    engine.close()
    world.close()


def _rac_recover(cwd: Path, url: str, *, tty: bool) -> tuple[int, str, str]:
    (cwd / "opsapp.py").write_text(APP)
    env: dict[str, Any] = {**os.environ, "OPS_LOG": url, "COLUMNS": "100"}
    rac_bin = str(Path(sys.executable).with_name("rac"))
    cmd = [rac_bin, "recover", "--app", "opsapp:engine", "--store", url]
    if not tty:
        done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=TIMEOUT)
        return done.returncode, done.stdout, done.stderr
    leader, follower = pty.openpty()
    # a terminal of 24 rows and 100 columns (a bare pty has none: nothing would be drawn)
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=follower,
                            text=True)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 4096)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    stdout, _ = proc.communicate(timeout=TIMEOUT)
    os.close(leader)
    return proc.returncode, stdout, b"".join(chunks).decode(errors="replace")


def test_rac_recover_draws_progress_on_a_terminal_only(tmp_path: Path) -> None:
    url, world = crashed_runs(tmp_path / "a", 2) if (tmp_path / "a").mkdir() is None else ("", None)
    code, stdout, stderr = _rac_recover(tmp_path / "a", url, tty=True)
    assert code == 0, stderr
    assert "rac recover" in stderr and "1/2" in stderr and "2/2" in stderr, (stdout, stderr)
    assert stdout.count(": compensated") == 2
    world.close()

    url2, world2 = crashed_runs(tmp_path / "b", 2) if (tmp_path / "b").mkdir() is None \
        else ("", None)
    code, stdout, stderr = _rac_recover(tmp_path / "b", url2, tty=False)
    assert code == 0 and stdout.count(": compensated") == 2
    assert "rac recover" not in stderr and "2/2" not in stderr
    world2.close()
