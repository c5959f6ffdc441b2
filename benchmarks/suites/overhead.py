"""Per-call overhead and rollback time of RAC (memory, SQLite) and the reference, measured in
one process on the same trivial tool.

Overhead per call = wall time of a call through the mechanism minus the median time of the
bare call, keyed by how many records the run already holds. Rollback time = wall time to
compensate a run of N completed records.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import rac
from benchmarks.harness.clock import VirtualClock
from benchmarks.harness.stats import percentile

SIZES = (0, 10, 100, 1000)


def book(passenger: str) -> dict[str, Any]:
    """The measured tool: returns a booking id, touches nothing."""
    return {"booking_id": f"BK-{passenger}", "status": "confirmed"}


def cancel(booking_id: str) -> dict[str, Any]:
    """Its compensator."""
    return {"cancelled": booking_id}


@contextmanager
def _tmpdir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="rac-overhead-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _engine(store: str) -> rac.RAC:
    # The engine's default (system) clock, as applications run it: nothing here waits, so a
    # virtual clock would only add its own cost to every timestamp.
    return rac.RAC(compensations={"book": rac.Compensation(
        tool="cancel", args={"booking_id": "result.booking_id"})},
        store=store, load_entrypoints=False, tools=[book, cancel], read_only=[])


def _bare_ns(samples: int) -> float:
    times = []
    for i in range(samples):
        t0 = time.perf_counter_ns()
        book(passenger=f"b{i:06d}")
        times.append(time.perf_counter_ns() - t0)
    return percentile(times, 50)


class _RACHarness:
    """A run that already holds ``n`` records; ``call`` times one more call."""

    def __init__(self, store: str, n: int) -> None:
        self.engine = _engine(store)
        self.run = self.engine.run()
        self.run.__enter__()
        self.tool = self.engine.tools["book"]
        for i in range(n):
            self._call(f"p{i:06d}")

    def _call(self, who: str) -> Any:
        return self.run.execute("book", {"passenger": who}, lambda _n, a: book(**a))

    def call(self, who: str) -> int:
        t0 = time.perf_counter_ns()
        self._call(who)
        return time.perf_counter_ns() - t0

    def close(self) -> None:
        self.run.__exit__(None, None, None)
        close = getattr(self.engine.store, "close", None)
        if close:
            close()


class _ReferenceHarness:
    """The reference's wrapped tool with ``n`` completed records in its log."""

    def __init__(self, n: int) -> None:
        from benchmarks.approaches.reference import build_middleware
        from benchmarks.worlds.base import World

        class _W(World):
            compensations: Any = {}

        from benchmarks.worlds.base import CompSpec
        _W.compensations = {"book": CompSpec("cancel", {"booking_id": "result.booking_id"})}
        self.middleware, wrapped = build_middleware(_W(VirtualClock()),
                                                    {"book": book, "cancel": cancel})
        self.fn = wrapped["book"].func
        fill_reference_log(self.middleware, n)

    def call(self, who: str) -> int:
        t0 = time.perf_counter_ns()
        self.fn(passenger=who)
        return time.perf_counter_ns() - t0

    def close(self) -> None:
        pass


def per_call_overhead(quick: bool, progress: Callable[[], None] | None = None
                      ) -> dict[str, dict[str, dict[str, float]]]:
    """``{name: {"0"|"10"|"100"|"1000": {"median", "p99", "samples"}}}`` in microseconds."""
    bare = _bare_ns(2000)
    out: dict[str, dict[str, dict[str, float]]] = {}
    with _tmpdir() as tmp:
        makers: dict[str, Callable[[int], Any]] = {
            "rac-memory": lambda n: _RACHarness("memory://", n),
            "rac-sqlite": lambda n: _RACHarness(f"sqlite:///{tmp / f'o{time.time_ns()}.db'}", n),
            "reference": _ReferenceHarness,
        }
        for name, make in makers.items():
            out[name] = {}
            for n in SIZES:
                # several runs holding n records, a few timed calls in each
                if quick:
                    blocks, per_block = (10, 10) if n <= 10 else (1, 15)
                else:
                    blocks, per_block = (40, 25) if n <= 100 else (6, 50)
                times: list[int] = []
                for b in range(blocks):
                    h = make(n)
                    times += [h.call(f"t{b}-{i:04d}") for i in range(per_block)]
                    h.close()
                over = [max(t - bare, 0) / 1000 for t in times]
                out[name][str(n)] = {"median": round(percentile(over, 50), 1),
                                     "p99": round(percentile(over, 99), 1),
                                     "samples": len(over)}
                if progress:
                    progress()
    return out


def rollback_times(quick: bool, progress: Callable[[], None] | None = None
                   ) -> dict[str, dict[str, float]]:
    """Seconds to roll back a run of N completed records: ``{name: {N: seconds}}``, the median
    of several rollbacks (each of a fresh run) for the memory store, where one timing of a
    small run is at the mercy of the scheduler; one rollback per size for SQLite."""
    sizes = (10, 100) if quick else (10, 100, 1000, 10_000)
    out: dict[str, dict[str, float]] = {"rac-memory": {}, "rac-sqlite": {}, "reference": {}}
    with _tmpdir() as tmp:
        for n in sizes:
            for name, store in (("rac-memory", "memory://"),
                                ("rac-sqlite", f"sqlite:///{tmp / f'r{n}'}")):
                repeats = (7 if n <= 1000 else 3) if name == "rac-memory" else 1
                took = []
                for i in range(repeats):
                    h = _RACHarness(f"{store}-{i}.db" if name == "rac-sqlite" else store, n)
                    t0 = time.perf_counter()
                    report = h.run.rollback()
                    took.append(time.perf_counter() - t0)
                    assert len(report.compensated) == n
                    h.close()
                out[name][str(n)] = round(percentile(took, 50), 4)
                if progress:
                    progress()
            out["reference"][str(n)] = _reference_rollback(n)
            if progress:
                progress()
    return out


def fill_reference_log(middleware: Any, n: int) -> None:
    """Give the reference's log n completed records through its public log API, as n calls
    would (its own call path copies the whole log on every call, so 10,000 calls take minutes).
    """
    from react_agent_compensation.core import ActionRecord, ActionStatus

    log = middleware.transaction_log
    for i in range(n):
        who = f"p{i:06d}"
        log.add(ActionRecord(action="book", params={"passenger": who}, result=book(who),
                             status=ActionStatus.COMPLETED, compensator="cancel"))


def _reference_rollback(n: int) -> float:
    """Time the reference's rollback of a log of n completed records."""
    h = _ReferenceHarness(n)
    t0 = time.perf_counter()
    h.middleware.rollback()
    return round(time.perf_counter() - t0, 4)
