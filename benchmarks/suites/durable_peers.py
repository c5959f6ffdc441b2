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
  compensable effect);
* ``floor-sqlite``: the floor of one flushed commit per step on the same disk: a bare
  ``INSERT`` of one row per step, autocommitted, in a SQLite file in WAL mode with
  ``synchronous=FULL`` (one ``fsync`` of the WAL each), nothing else;
* with ``RAC_BENCH_POSTGRES_URL`` (a database of its own) or ``RAC_TEST_POSTGRES_URL``:
  ``rac-postgres`` (RAC's PostgreSQL log) and ``dbos-postgres`` (DBOS's system database on the
  same server), each in a schema of its own, and ``floor-postgres``: a bare ``INSERT`` of one
  row per step, autocommitted (one ``COMMIT`` waiting for the server's WAL flush), on the
  same server. For each PostgreSQL row, what the server counts per step
  (``pg_stat_database.xact_commit`` of the database, ``pg_stat_wal.wal_sync``: the WAL
  flushes of the whole server), from children making ``steps`` steps and none; other sessions
  on the same server count too, so these are upper bounds.

Figures: microseconds per call (the median of the timed blocks, each ``steps`` calls over
``steps``, from rounds run in alternating order of the approaches; the ratios also round by
round, their median and range), flushes to disk per call (``fsync``/``fdatasync`` counted with ``strace -f``
in a child process, when strace is installed), and RAC's ratio to each peer (the issue's
targets: at most 0.3x DBOS's durable step, on SQLite and on PostgreSQL, and 0.6x
agent-saga's). Wall-clock on whatever
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
#: The floor rows: one flushed commit of one row per step, nothing else
FLOORS = ("floor-sqlite",)
#: Run when a PostgreSQL database is given: RAC's PostgreSQL log beside DBOS's system database
#: on the same server (a schema of its own each, dropped afterwards), and the floor there.
PG_APPROACHES = ("rac-postgres", "dbos-postgres", "floor-postgres")


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


def _dbos_workflow(config: Any) -> Callable[[int], None]:
    """Launch DBOS with ``config`` and return a workflow of ``n`` durable steps of :func:`act`
    (the one shape both DBOS rows time)."""
    from dbos import DBOS

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
    def run(n: int) -> None:
        workflow(n)

    return run


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
    return _dbos_workflow(config), DBOS.destroy


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


def pg_url() -> str | None:
    """The PostgreSQL database the PostgreSQL rows use (a database of its own, else the tests')."""
    return os.environ.get("RAC_BENCH_POSTGRES_URL") or os.environ.get("RAC_TEST_POSTGRES_URL")


def rac_postgres(base: str) -> tuple[Callable[[int], None], Callable[[], None]]:
    import uuid

    import structlog

    import rac

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    url = f"{base}{'&' if '?' in base else '?'}rac_schema=rac_peers_{uuid.uuid4().hex[:8]}"
    engine = rac.RAC(compensations={"act": "undo"}, tools=[act, undo], store=url,
                     load_entrypoints=False)
    run = engine.run()
    run.start()
    counter = [0]

    def calls(n: int) -> None:
        for _ in range(n):
            counter[0] += 1
            run.call(act, n=counter[0])

    def close() -> None:
        store: Any = engine.store
        engine.close()
        store.drop_schema()
        store.close()

    return calls, close


def dbos_postgres(base: str) -> tuple[Callable[[int], None], Callable[[], None]]:
    import uuid

    import psycopg
    from dbos import DBOS, DBOSConfig

    logging.getLogger("dbos").setLevel(logging.CRITICAL)
    schema = f"dbos_peers_{uuid.uuid4().hex[:8]}"
    config: DBOSConfig = {"name": "rac-bench", "system_database_url": base,
                          "dbos_system_schema": schema, "log_level": "CRITICAL"}
    workflow = _dbos_workflow(config)

    def close() -> None:
        DBOS.destroy()
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'.encode())

    return workflow, close


def floor_sqlite(folder: Path) -> tuple[Callable[[int], None], Callable[[], None]]:
    conn = sqlite3.connect(folder / "floor.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("CREATE TABLE steps (n INTEGER PRIMARY KEY, output TEXT)")
    counter = [0]

    def calls(n: int) -> None:
        for _ in range(n):
            counter[0] += 1
            conn.execute("INSERT INTO steps VALUES (?, ?)", (counter[0], '{"item_id": 1}'))

    return calls, conn.close


def floor_postgres(base: str) -> tuple[Callable[[int], None], Callable[[], None]]:
    import uuid

    import psycopg

    schema = f"floor_peers_{uuid.uuid4().hex[:8]}"
    conn = psycopg.connect(base, autocommit=True)
    conn.execute(f'CREATE SCHEMA "{schema}"'.encode())
    conn.execute(f'CREATE TABLE "{schema}".steps (n BIGINT PRIMARY KEY, output TEXT)'.encode())
    insert = f'INSERT INTO "{schema}".steps VALUES (%s, %s)'.encode()
    counter = [0]

    def calls(n: int) -> None:
        for _ in range(n):
            counter[0] += 1
            conn.execute(insert, (counter[0], '{"item_id": 1}'))

    def close() -> None:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'.encode())
        conn.close()

    return calls, close


def server_counts(base: str) -> tuple[int, int]:
    """The database's committed transactions (``pg_stat_database.xact_commit``) and the
    server's WAL flushes (``pg_stat_wal.wal_sync``) so far, once the server has taken in every
    ended backend's figures (polled until two reads agree)."""
    import psycopg

    with psycopg.connect(base, autocommit=True) as conn:
        last = (-1, -1)
        for _ in range(40):
            time.sleep(0.25)
            conn.execute("SELECT pg_stat_clear_snapshot()")
            commits = conn.execute("SELECT xact_commit FROM pg_stat_database "
                                   "WHERE datname = current_database()").fetchone()
            syncs = conn.execute("SELECT wal_sync FROM pg_stat_wal").fetchone()
            now = (int(commits[0]) if commits else 0, int(syncs[0]) if syncs else 0)
            if now == last:
                return now
            last = now
    return last


def server_per_call(name: str, steps: int, tmp: Path) -> dict[str, float]:
    """Commits and WAL flushes on the server per step of ``name``: a child making ``steps``
    steps and one making none (its start, warm-up and close cancel out), the median of three
    differences. Other sessions of the server count too: upper bounds."""
    base = pg_url()
    assert base is not None
    folder = Path(tempfile.mkdtemp(dir=tmp, prefix=f"{name}-counted-"))

    def counted(n: int) -> tuple[int, int]:
        before = server_counts(base)
        subprocess.run(_child_cmd(name, folder, n, 1, True), check=True, capture_output=True,
                       timeout=900, cwd=Path(__file__).resolve().parents[2])
        after = server_counts(base)
        return after[0] - before[0], after[1] - before[1]

    diffs = []
    for _ in range(3):
        (c1, s1), (c0, s0) = counted(steps), counted(0)
        diffs.append((c1 - c0, s1 - s0))
    return {"xact_commit_per_call": round(statistics.median(d[0] for d in diffs) / steps, 3),
            "wal_sync_per_call": round(statistics.median(d[1] for d in diffs) / steps, 3)}


def make(name: str, folder: Path) -> tuple[Callable[[int], None], Callable[[], None]]:
    base = pg_url()
    if name == "floor-postgres" and base:
        return floor_postgres(base)
    if name == "floor-sqlite":
        return floor_sqlite(folder)
    if name == "rac-postgres" and base:
        return rac_postgres(base)
    if name == "dbos-postgres" and base:
        return dbos_postgres(base)
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
    steps, blocks, rounds = (50, 2, 2) if quick else (100, 2, 8)
    results: dict[str, Any] = {
        "python": sys.version.split()[0], "machine": platform.machine(),
        "cpus": os.cpu_count(), "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "load_average": round(os.getloadavg()[0], 1), "steps": steps,
        "blocks": blocks * rounds,
        "command": "uv run python -m benchmarks.suites.durable_peers" + (" --quick" if quick
                                                                         else ""),
        "approaches": {}}
    have_strace = shutil.which("strace") is not None
    approaches = APPROACHES + FLOORS + (PG_APPROACHES if pg_url() else ())
    if not pg_url():
        results["postgres"] = "skipped: neither RAC_BENCH_POSTGRES_URL nor RAC_TEST_POSTGRES_URL"
    with tempfile.TemporaryDirectory(prefix="rac-peers-") as tmp:
        results["folder_filesystem"] = _filesystem(Path(tmp))
        # rounds in alternating order (A B C D, D C B A, ...): a change in the machine's load
        # falls on every approach alike
        blocks_of: dict[str, list[float]] = {name: [] for name in approaches}
        loads: dict[str, list[float]] = {name: [] for name in approaches}
        rounds_of: dict[str, list[float]] = {name: [] for name in approaches}
        for r in range(rounds):
            for name in (approaches if r % 2 == 0 else tuple(reversed(approaches))):
                row = timed(name, steps, blocks, Path(tmp))
                blocks_of[name] += row["us_per_call_blocks"]
                rounds_of[name].append(row["us_per_call"])
                loads[name].append(row["load_average"])

        for name in approaches:
            pg = name.endswith("-postgres")
            results["approaches"][name] = {
                "us_per_call": round(statistics.median(blocks_of[name]), 1),
                "us_per_call_blocks": blocks_of[name],
                "load_average": round(statistics.mean(loads[name]), 1),
                "fsyncs_per_call": ("not counted: the server flushes" if pg else
                                    flushes(name, steps, Path(tmp)) if have_strace
                                    else "skipped: strace is not installed")}
            if pg:
                results["approaches"][name]["server"] = server_per_call(name, steps, Path(tmp))
    rows = results["approaches"]
    results["ratios"] = {f"rac-sqlite / {name}": round(rows["rac-sqlite"]["us_per_call"]
                                                       / row["us_per_call"], 3)
                         for name, row in rows.items() if name in APPROACHES[1:]}
    results["ratios"]["rac-sqlite / floor-sqlite"] = round(
        rows["rac-sqlite"]["us_per_call"] / rows["floor-sqlite"]["us_per_call"], 3)
    results["ratios"]["floor-sqlite / dbos-sqlite-wal"] = round(
        rows["floor-sqlite"]["us_per_call"] / rows["dbos-sqlite-wal"]["us_per_call"], 3)
    if "rac-postgres" in rows:
        for mine, peer in (("rac-postgres", "dbos-postgres"), ("rac-postgres", "floor-postgres"),
                           ("floor-postgres", "dbos-postgres")):
            results["ratios"][f"{mine} / {peer}"] = round(
                rows[mine]["us_per_call"] / rows[peer]["us_per_call"], 3)
    # the same ratios taken round by round (RAC and the peer timed minutes apart at most),
    # then their median and range: a disk whose flush latency changes from one minute to the
    # next moves both sides of a round alike
    pairs = [("rac-sqlite", name) for name in (*APPROACHES[1:], *FLOORS)]
    if "rac-postgres" in rows:
        pairs += [("rac-postgres", "dbos-postgres"), ("rac-postgres", "floor-postgres"),
                  ("floor-postgres", "dbos-postgres")]
    results["paired_ratios"] = {}
    for mine, peer in pairs:
        each = [a / b for a, b in zip(rounds_of[mine], rounds_of[peer], strict=True)]
        results["paired_ratios"][f"{mine} / {peer}"] = {
            "median": round(statistics.median(each), 3), "min": round(min(each), 3),
            "max": round(max(each), 3), "rounds": len(each)}
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
