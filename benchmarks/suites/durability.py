"""Durability figures (issue 28): what a step costs the disk, recovery of a big crashed run, and
worker processes sharing one log.

    uv run python -m benchmarks.suites.durability     # writes benchmarks/results/durability.json
    uv run python -m benchmarks.suites.durability --quick

* SQLite: flushes to disk (``fsync`` + ``fdatasync`` system calls, counted with ``strace -f``
  in a child process) per successful call of an open run, per call of a run finished after
  every call (what the LangGraph and Semantic Kernel adapters do), and per compensation;
* PostgreSQL (when ``RAC_BENCH_POSTGRES_URL``, a database of its own, or
  ``RAC_TEST_POSTGRES_URL`` is set): the ``COMMIT`` messages the client sends per call
  (``strace`` of its socket writes), how many of them wait for the server's WAL flush (the
  others are sent with ``synchronous_commit`` off), and the server's own count
  (``pg_stat_database.xact_commit``) per call, per call of a run finished after every call and
  per compensation;
* recovery of a crashed run of 1,000 and 10,000 records on SQLite: wall and CPU seconds, the
  CPU seconds of the store's commits, and how many commits (durable ones: one flush each);
* N = 1, 2, 4, 8 worker processes, each running its own runs on one log: total calls per
  second, and every record checked afterwards (none lost, none duplicated); PostgreSQL, with
  SQLite's single-writer figure beside it.

The counts need ``strace`` (Linux); without it they are reported as skipped. Times are
wall-clock on whatever machine runs this; the load average is recorded with them.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "results" / "durability.json"
MARK_START, MARK_END = b"RAC-BENCH-START\n", b"RAC-BENCH-END\n"


# -- the engine every measurement uses --------------------------------------------------------
def act(n: int) -> dict[str, Any]:
    return {"item_id": f"I-{n}"}


def undo(item_id: str) -> dict[str, Any]:
    return {"undone": item_id}


def engine_for(url: str) -> Any:
    import rac

    return rac.RAC(compensations={"act": "undo"}, tools=[act, undo], store=url,
                   load_entrypoints=False)


def quiet() -> None:
    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))


# -- what a child process does under strace ----------------------------------------------------
def child(mode: str, url: str, n: int) -> None:
    """Warm up, then make ``n`` steps of ``mode`` between the two markers on stderr."""
    quiet()
    engine = engine_for(url)
    if url.startswith("postgresql"):
        # statements sent as text (psycopg prepares a statement after five uses, and then its
        # text, "synchronous_commit TO OFF" included, is no longer on the wire to be counted)
        engine.store._conn().prepare_threshold = None
    run = engine.run()
    run.start()
    invoke = lambda name, a: act(**a) if name == "act" else undo(**a)  # noqa: E731
    run.execute("act", {"n": -1}, invoke)
    if mode == "rollback":
        for i in range(n):
            run.execute("act", {"n": i}, invoke)
        os.write(2, MARK_START)
        run.rollback()
        os.write(2, MARK_END)
    else:
        os.write(2, MARK_START)
        for i in range(n):
            run.execute("act", {"n": i}, invoke)
            if mode == "finish":
                run.finish()
        os.write(2, MARK_END)
    engine.close()


def traced(mode: str, url: str, n: int) -> dict[str, Any]:
    """Run :func:`child` under strace; the flushes and commits between its markers."""
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "trace"
        cmd = ["strace", "-f", "-qq", "-s", "200", "-e", "trace=fsync,fdatasync,write,sendto",
               "-o", str(trace), sys.executable, "-m", "benchmarks.suites.durability", "child",
               mode, url, str(n)]
        subprocess.run(cmd, check=True, capture_output=True, timeout=900,
                       cwd=Path(__file__).resolve().parents[2])
        lines = trace.read_text(errors="replace").splitlines()
    on, flushes, commits, async_commits = False, 0, 0, 0
    for line in lines:
        if "RAC-BENCH-START" in line:
            on = True
        elif "RAC-BENCH-END" in line:
            on = False
        elif on:
            if re.search(r"\b(fsync|fdatasync)\(", line):
                flushes += 1
            elif "sendto(" in line:
                commits += line.count("COMMIT\\0")
                async_commits += line.count("synchronous_commit TO OFF")
    out: dict[str, Any] = {"mode": mode, "steps": n}
    if url.startswith("sqlite"):
        out["fsyncs_per_step"] = round(flushes / n, 3)
    else:
        out["commits_per_step"] = round(commits / n, 3)
        out["synchronous_commits_per_step"] = round((commits - async_commits) / n, 3)
    return out


# -- PostgreSQL: the server's own count of commits ---------------------------------------------
def _xact_commits(url: str) -> int:
    """``pg_stat_database.xact_commit`` of the log's database, once the server has taken in
    every ended backend's figures (polled until two reads agree)."""
    import psycopg

    from rac.stores.postgres import split_url

    dsn, _ = split_url(url)
    with psycopg.connect(dsn, autocommit=True) as conn:
        last = -1
        for _ in range(40):
            time.sleep(0.25)
            conn.execute("SELECT pg_stat_clear_snapshot()")
            row = conn.execute("SELECT xact_commit FROM pg_stat_database "
                               "WHERE datname = current_database()").fetchone()
            now = int(row[0]) if row else 0
            if now == last:
                return now
            last = now
    return last


def _commits_of(mode: str, url: str, n: int) -> int:
    """The database's commits while :func:`child` makes ``n`` steps of ``mode`` (its start,
    warm-up and close included: :func:`xact_commits` takes the difference of two runs)."""
    before = _xact_commits(url)
    subprocess.run([sys.executable, "-m", "benchmarks.suites.durability", "child", mode, url,
                    str(n)], check=True, capture_output=True, timeout=900,
                   cwd=Path(__file__).resolve().parents[2])
    return _xact_commits(url) - before


def xact_commits(url: str, n: int, shared: bool) -> dict[str, Any]:
    """Commits per successful call, per call of a run finished after every call, and per
    compensation, from ``pg_stat_database.xact_commit``: each mode run with ``n`` steps and
    with none, the median of three differences over ``n`` (what starting, warming up and closing cost cancels
    out; a compensation's figure is the rollback's minus the calls it undoes). ``shared``: the
    database is shared with other clients, whose commits are then counted too."""
    import statistics

    from rac.stores import open_store

    store: Any = open_store(url)  # the tables made, autovacuum (whose commits count) off
    with store._write() as conn:
        for table in ("rac_runs", "rac_records"):
            conn.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)".encode())
    store.close()
    steps = {m: statistics.median(_commits_of(m, url, n) - _commits_of(m, url, 0)
                                  for _ in range(3))
             for m in ("open", "finish", "rollback")}
    out: dict[str, Any] = {
        "steps": n, "source": "pg_stat_database.xact_commit",
        "commits_per_call": round(steps["open"] / n, 3),
        "commits_per_call_finishing_the_run": round(steps["finish"] / n, 3),
        "commits_per_compensation": round((steps["rollback"] - steps["open"]) / n, 3)}
    if shared:
        out["note"] = ("the database is shared with other clients (RAC_BENCH_POSTGRES_URL "
                       "unset): their commits in the same seconds are counted too")
    return out


# -- recovery of a crashed run -----------------------------------------------------------------
def recovery(records: int) -> dict[str, Any]:
    from rac.testing import abandon_runs

    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/log.db"
        engine = engine_for(url)
        run = engine.run()
        run.start()
        for i in range(records):
            run.call(act, n=i)
        abandon_runs(engine)  # the process "dies": its lease runs out
        fresh = engine_for(url)
        store, counts = fresh.store, {"durable_commits": 0, "commits": 0, "store_cpu_s": 0.0}
        commit = store.commit

        def counted(changes: Any, *, durable: bool = True) -> None:
            t = time.process_time()
            try:
                commit(changes, durable=durable)
            finally:
                counts["store_cpu_s"] += time.process_time() - t
                counts["commits"] += 1
                counts["durable_commits"] += 1 if durable else 0

        store.commit = counted
        load = os.getloadavg()[0]
        wall, cpu = time.perf_counter(), time.process_time()
        (out,) = fresh.recover()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        assert out.outcome == "compensated", out
        fresh.close()
    # On a machine busier than its cores, wall time is the CPU time stretched by the wait for
    # a core: the load average before and after is recorded so the two can be told apart.
    return {"records": records, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
            "store_commit_cpu_s": round(counts["store_cpu_s"], 3),
            "commits": counts["commits"], "durable_commits": counts["durable_commits"],
            "load_average_before": round(load, 1),
            "load_average": round(os.getloadavg()[0], 1)}


# -- worker processes on one log ---------------------------------------------------------------
def _worker(url: str, runs: int, calls: int, start: Any, out: Any) -> None:
    quiet()
    engine = engine_for(url)
    ids = []
    start.wait()
    t = time.perf_counter()
    for _ in range(runs):
        with engine.run() as run:
            for i in range(calls):
                run.call(act, n=i)
        ids.append(run.run_id)
    out.put((time.perf_counter() - t, ids))
    engine.close()


def workers(url: str, n: int, runs: int = 5, calls: int = 20) -> dict[str, Any]:
    """``n`` processes, each ``runs`` runs of ``calls`` calls on one log; total calls/s."""
    from rac.models import RecordStatus, RunStatus
    from rac.stores import open_store

    ctx = multiprocessing.get_context("spawn")
    start, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(url, runs, calls, start, out)) for _ in range(n)]
    for p in procs:
        p.start()
    time.sleep(1.0)  # every process imported RAC and opened the log
    t = time.perf_counter()
    start.set()
    results = [out.get(timeout=900) for _ in procs]
    elapsed = time.perf_counter() - t
    for p in procs:
        p.join(60)
    store = open_store(url)
    lost = 0
    for _, ids in results:
        for run_id in ids:
            recs = store.get_records(run_id)
            info = store.get_run(run_id)
            good = (info is not None and info.status is RunStatus.COMPLETED
                    and [r.seq for r in recs] == list(range(1, calls + 1))
                    and all(r.status is RecordStatus.COMPLETED for r in recs))
            lost += 0 if good else 1
    store.close()
    total = n * runs * calls
    return {"workers": n, "calls": total, "calls_per_second": round(total / elapsed, 1),
            "runs_not_intact": lost}


def _pg_url(base: str) -> str:
    return f"{base}{'&' if '?' in base else '?'}rac_schema=rac_bench_{uuid.uuid4().hex[:8]}"


def _drop(url: str) -> None:
    from rac.stores import open_store

    store = open_store(url)
    store.drop_schema()  # type: ignore[attr-defined]
    store.close()


def main(argv: list[str]) -> int:
    if argv[:1] == ["child"]:
        child(argv[1], argv[2], int(argv[3]))
        return 0
    quick = "--quick" in argv
    quiet()
    steps = 50 if quick else 200
    results: dict[str, Any] = {
        "python": sys.version.split()[0], "machine": platform.machine(),
        "cpus": os.cpu_count(), "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "load_average": round(os.getloadavg()[0], 1),
        "command": "uv run python -m benchmarks.suites.durability" + (" --quick" if quick
                                                                      else "")}
    # a database of its own (RAC_BENCH_POSTGRES_URL) keeps other clients' commits out of the
    # server's count; the tests' database otherwise
    pg = os.environ.get("RAC_BENCH_POSTGRES_URL") or os.environ.get("RAC_TEST_POSTGRES_URL")
    have_strace = shutil.which("strace") is not None
    with tempfile.TemporaryDirectory() as tmp:
        if have_strace:
            results["sqlite_flushes"] = [traced(m, f"sqlite:///{tmp}/{m}.db", steps)
                                         for m in ("open", "finish", "rollback")]
        else:
            results["sqlite_flushes"] = "skipped: strace is not installed"
        if pg and have_strace:
            commits = []
            for m in ("open", "finish", "rollback"):
                url = _pg_url(pg)
                try:
                    commits.append(traced(m, url, steps))
                finally:
                    _drop(url)
            results["postgres_commits"] = commits
        else:
            results["postgres_commits"] = "skipped: needs RAC_TEST_POSTGRES_URL and strace"
        if pg:
            url = _pg_url(pg)
            try:
                results["postgres_xact_commits"] = xact_commits(
                    url, steps, shared=not os.environ.get("RAC_BENCH_POSTGRES_URL"))
            finally:
                _drop(url)
        else:
            results["postgres_xact_commits"] = "skipped: RAC_TEST_POSTGRES_URL is not set"
        results["recovery_sqlite"] = [recovery(n) for n in ((1000,) if quick
                                                            else (1000, 10_000))]
        counts = (1, 2) if quick else (1, 2, 4, 8)
        results["workers_sqlite"] = [workers(f"sqlite:///{tmp}/w{n}.db", n) for n in counts]
        if pg:
            rows = []
            for n in counts:
                url = _pg_url(pg)
                try:
                    rows.append(workers(url, n))
                finally:
                    _drop(url)
            results["workers_postgres"] = rows
        else:
            results["workers_postgres"] = "skipped: RAC_TEST_POSTGRES_URL is not set"
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
