"""RAC's durable call beside its peers' durable steps, on the same SQLite disk (issue 28).

    uv run python -m benchmarks.suites.durable_peers     # writes results/durable_peers.json
    uv run python -m benchmarks.suites.durable_peers --quick

Each approach makes ``steps`` calls of the same trivial tool, each made durable before the
next, in a folder of one temporary directory (one disk):

* ``rac-sqlite``: ``run.call`` in an open run on RAC's SQLite log (WAL, ``synchronous=FULL``);
* ``dbos-sqlite-wal``: a ``@DBOS.step`` called in one ``@DBOS.workflow``, DBOS's system
  database a SQLite file switched to WAL before DBOS opens it (like-for-like with RAC);
* ``dbos-sqlite``: the same on the file DBOS creates itself (SQLite's default rollback
  journal: what a DBOS user on SQLite gets without configuring anything);
* ``agent-saga-file``: a ``COMPENSABLE`` tool in a ``saga_scope`` whose write-ahead log is
  agent-saga's ``FileWAL`` on a file (it waits for a flush and ``fsync`` before each
  compensable effect).

Figures: microseconds per call (the median of the timed blocks, each ``steps`` calls over
``steps``, from rounds run in alternating order of the approaches), flushes to disk per call (``fsync``/``fdatasync`` counted with ``strace -f``
in a child process, when strace is installed), and RAC's ratio to each peer (the issue's
targets: at most 0.3x DBOS's durable step and 0.6x agent-saga's). Wall-clock on whatever
machine runs this; the load average is recorded with the figures.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import platform
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "results" / "durable_peers.json"
MARK_START, MARK_END = b"RAC-BENCH-START\n", b"RAC-BENCH-END\n"
APPROACHES = ("rac-sqlite", "dbos-sqlite-wal", "dbos-sqlite", "agent-saga-file")


def act(n: int) -> dict[str, Any]:
    """The measured tool: returns an id, touches nothing."""
    return {"item_id": f"I-{n}"}


def undo(item_id: str) -> dict[str, Any]:
    """Its compensator."""
    return {"undone": item_id}


# -- one approach: a function that makes n durable calls -----------------------------------------
def rac_sqlite(folder: Path) -> tuple[Callable[[int], None], Callable[[], None]]:
    import structlog

    import rac

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    engine = rac.RAC(compensations={"act": "undo"}, tools=[act, undo],
                     store=f"sqlite:///{folder / 'rac.db'}", load_entrypoints=False)
    run = engine.run()
    run.start()
    counter = [0]

    def calls(n: int) -> None:
        for _ in range(n):
            counter[0] += 1
            run.call(act, n=counter[0])

    return calls, engine.close


def dbos_sqlite(folder: Path, wal: bool) -> tuple[Callable[[int], None], Callable[[], None]]:
    from dbos import DBOS, DBOSConfig

    logging.getLogger("dbos").setLevel(logging.CRITICAL)
    path = folder / ("dbos-wal.sqlite" if wal else "dbos.sqlite")
    if wal:  # WAL is a property of the file: DBOS's connections then use it
        conn = sqlite3.connect(path)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.close()
    config: DBOSConfig = {"name": "rac-bench", "system_database_url": f"sqlite:///{path}",
                          "log_level": "CRITICAL"}
    DBOS(config=config)

    @DBOS.step()
    def step(n: int) -> dict[str, Any]:
        return act(n)

    @DBOS.workflow()
    def workflow(n: int) -> int:
        for i in range(n):
            step(i)
        return n

    DBOS.launch()
    return (lambda n: workflow(n)), DBOS.destroy


def agent_saga_file(folder: Path) -> tuple[Callable[[int], None], Callable[[], None]]:
    from agent_saga import ActionSemantics, Compensation, saga_scope, tool
    from agent_saga.gate import PreFlightGate
    from agent_saga.wal import FileWAL

    logging.getLogger("agent_saga").setLevel(logging.CRITICAL)

    def compensate(result: Any) -> Any:
        return Compensation(fn=undo, kwargs={"item_id": result["item_id"]}, handler="undo",
                            description="undo")

    wrapped = tool("act", semantics=ActionSemantics.COMPENSABLE, compensate=compensate)(act)
    gate = PreFlightGate(approval_provider=lambda ctx, rule: True)
    counter = [0]

    async def batch(n: int) -> None:
        wal = FileWAL(folder / f"saga-{counter[0]}.wal")
        await wal.start()
        try:
            async with saga_scope(name="bench", gate=gate, wal=wal):
                for _ in range(n):
                    counter[0] += 1
                    await wrapped(n=counter[0])
        finally:
            await wal.close()

    return (lambda n: asyncio.run(batch(n))), (lambda: None)


def make(name: str, folder: Path) -> tuple[Callable[[int], None], Callable[[], None]]:
    if name == "rac-sqlite":
        return rac_sqlite(folder)
    if name == "dbos-sqlite-wal":
        return dbos_sqlite(folder, wal=True)
    if name == "dbos-sqlite":
        return dbos_sqlite(folder, wal=False)
    if name == "agent-saga-file":
        return agent_saga_file(folder)
    raise ValueError(name)


# -- a child process: timing, or one block between markers under strace ---------------------------
def child(name: str, folder: str, steps: int, blocks: int, traced: bool) -> None:
    calls, close = make(name, Path(folder))
    calls(5)  # warm up: imports, tables, caches
    if traced:
        os.write(2, MARK_START)
        calls(steps)
        os.write(2, MARK_END)
        close()
        return
    per_call = []
    for _ in range(blocks):
        t = time.perf_counter()
        calls(steps)
        per_call.append((time.perf_counter() - t) / steps * 1e6)
    close()
    print(json.dumps(per_call), flush=True)


def _child_cmd(name: str, folder: Path, steps: int, blocks: int, traced: bool) -> list[str]:
    return [sys.executable, "-m", "benchmarks.suites.durable_peers", "child", name, str(folder),
            str(steps), str(blocks), "1" if traced else "0"]


def timed(name: str, steps: int, blocks: int, tmp: Path) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(dir=tmp, prefix=f"{name}-"))
    done = subprocess.run(_child_cmd(name, folder, steps, blocks, False), check=True,
                          capture_output=True, text=True, timeout=1800,
                          cwd=Path(__file__).resolve().parents[2])
    per_call = json.loads(done.stdout.strip().splitlines()[-1])
    return {"us_per_call": round(statistics.median(per_call), 1),
            "us_per_call_blocks": [round(x, 1) for x in per_call],
            "load_average": round(os.getloadavg()[0], 1)}


def flushes(name: str, steps: int, tmp: Path) -> float:
    folder = Path(tempfile.mkdtemp(dir=tmp, prefix=f"{name}-traced-"))
    trace = folder / "trace"
    subprocess.run(["strace", "-f", "-qq", "-e", "trace=fsync,fdatasync,write", "-o", str(trace),
                    *_child_cmd(name, folder, steps, 1, True)], check=True,
                   capture_output=True, timeout=1800, cwd=Path(__file__).resolve().parents[2])
    on, count = False, 0
    for line in trace.read_text(errors="replace").splitlines():
        if "RAC-BENCH-START" in line:
            on = True
        elif "RAC-BENCH-END" in line:
            on = False
        elif on and re.search(r"\b(fsync|fdatasync)\(", line):
            count += 1
    return round(count / steps, 3)


def main(argv: list[str]) -> int:
    if argv[:1] == ["child"]:
        child(argv[1], argv[2], int(argv[3]), int(argv[4]), argv[5] == "1")
        return 0
    quick = "--quick" in argv
    steps, blocks, rounds = (50, 2, 2) if quick else (200, 3, 4)
    results: dict[str, Any] = {
        "python": sys.version.split()[0], "machine": platform.machine(),
        "cpus": os.cpu_count(), "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "load_average": round(os.getloadavg()[0], 1), "steps": steps,
        "blocks": blocks * rounds,
        "command": "uv run python -m benchmarks.suites.durable_peers" + (" --quick" if quick
                                                                         else ""),
        "approaches": {}}
    have_strace = shutil.which("strace") is not None
    with tempfile.TemporaryDirectory(prefix="rac-peers-") as tmp:
        results["folder_filesystem"] = _filesystem(Path(tmp))
        # rounds in alternating order (A B C D, D C B A, ...): a change in the machine's load
        # falls on every approach alike
        blocks_of: dict[str, list[float]] = {name: [] for name in APPROACHES}
        loads: dict[str, list[float]] = {name: [] for name in APPROACHES}
        for r in range(rounds):
            for name in (APPROACHES if r % 2 == 0 else tuple(reversed(APPROACHES))):
                row = timed(name, steps, blocks, Path(tmp))
                blocks_of[name] += row["us_per_call_blocks"]
                loads[name].append(row["load_average"])
        for name in APPROACHES:
            results["approaches"][name] = {
                "us_per_call": round(statistics.median(blocks_of[name]), 1),
                "us_per_call_blocks": blocks_of[name],
                "load_average": round(statistics.mean(loads[name]), 1),
                "fsyncs_per_call": (flushes(name, steps, Path(tmp)) if have_strace
                                    else "skipped: strace is not installed")}
    rac_us = results["approaches"]["rac-sqlite"]["us_per_call"]
    results["ratios"] = {f"rac-sqlite / {name}": round(rac_us / row["us_per_call"], 3)
                         for name, row in results["approaches"].items()
                         if name != "rac-sqlite"}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return 0


def _filesystem(path: Path) -> str:
    try:
        out = subprocess.run(["df", "-T", str(path)], capture_output=True, text=True,
                             timeout=10).stdout.splitlines()
        return out[-1].split()[1] if len(out) > 1 else "unknown"
    except (OSError, subprocess.SubprocessError, IndexError):
        return "unknown"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
