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


# -- growth: per-call cost against log size, tool count and result size (issue 28) -------------
GROWTH_LOG_SIZES = (100, 1000, 10_000)
GROWTH_TOOL_COUNTS = (10, 100, 1000)
GROWTH_RESULT_SIZES = {"1KB": 1_000, "100KB": 100_000, "1MB": 1_000_000}
GROWTH_OUT = Path(__file__).resolve().parents[1] / "results" / "growth.json"
_PROSE = ("The guest asked for a quiet room facing the garden, two nights from 14 March, "
          "breakfast at 7:30 and a late checkout; the front desk confirmed the rate of 182 EUR "
          "per night and noted the loyalty number on file. ")


def prose_result(size: int) -> dict[str, Any]:
    """A tool result of about ``size`` characters of prose (a page a tool fetched), with its
    booking id."""
    text = (_PROSE * (size // len(_PROSE) + 1))[:size]
    return {"booking_id": "BK-big", "status": "confirmed", "text": text}


def _summary(times_ns: list[int], bare_ns: float) -> dict[str, float]:
    over = [max(t - bare_ns, 0) / 1000 for t in times_ns]
    return {"median": round(percentile(over, 50), 1), "p99": round(percentile(over, 99), 1),
            "samples": len(over)}


def _tools(count: int) -> tuple[list[Callable[..., Any]], dict[str, Any]]:
    """``count`` booking tools (``book_0`` ...) and a compensation for each, plus the
    canceller they share."""
    tools: list[Callable[..., Any]] = []
    for i in range(count):
        def tool(passenger: str) -> dict[str, Any]:
            return {"booking_id": f"BK-{passenger}", "status": "confirmed"}
        tool.__name__ = tool.__qualname__ = f"book_{i}"
        tools.append(tool)
    comps = {t.__name__: rac.Compensation(tool="cancel", args={"booking_id": "result.booking_id"})
             for t in tools}
    return [*tools, cancel], comps


def _rac_times(make: Callable[[], rac.RAC], tool: str, fn: Callable[..., Any], prefill: int,
               blocks: int, per_block: int) -> list[int]:
    """``per_block`` timed calls in each of ``blocks`` fresh runs holding ``prefill`` records
    (so the run grows by at most ``per_block`` while it is timed)."""
    times = []
    invoke = lambda _n, a: fn(**a)  # noqa: E731
    for b in range(blocks):
        engine = make()
        run = engine.run()
        run.__enter__()
        for i in range(prefill):
            run.execute(tool, {"passenger": f"p{i:06d}"}, invoke)
        for i in range(per_block):
            t0 = time.perf_counter_ns()
            run.execute(tool, {"passenger": f"t{b}-{i:04d}"}, invoke)
            times.append(time.perf_counter_ns() - t0)
        run.__exit__(None, None, None)
        engine.close()
    return times


def _reference_times(tools: dict[str, Callable[..., Any]], tool: str, prefill: int,
                     blocks: int, per_block: int) -> list[int]:
    """The same for the reference: a fresh middleware whose log holds ``prefill`` records for
    each block."""
    from benchmarks.approaches.reference import build_middleware
    from benchmarks.worlds.base import CompSpec, World

    class _W(World):
        compensations: Any = {}

    _W.compensations = {name: CompSpec("cancel", {"booking_id": "result.booking_id"})
                        for name in tools if name != "cancel"}
    times = []
    for b in range(blocks):
        middleware, wrapped = build_middleware(_W(VirtualClock()), tools)
        fill_reference_log(middleware, prefill)
        fn = wrapped[tool].func
        for i in range(per_block):
            t0 = time.perf_counter_ns()
            fn(passenger=f"t{b}-{i:04d}")
            times.append(time.perf_counter_ns() - t0)
    return times


def growth_log_size(quick: bool) -> dict[str, dict[str, dict[str, float]]]:
    """Per-call overhead (µs over the bare call) with 100 / 1,000 / 10,000 records already in
    the run: ``{approach: {size: {median, p99, samples}}}``. Blocks of 25 timed calls, each in
    a fresh run (SQLite: one block of 50, a 10,000-record run takes 10,000 flushed calls)."""
    bare = _bare_ns(2000)
    sizes = GROWTH_LOG_SIZES[:2] if quick else GROWTH_LOG_SIZES
    out: dict[str, dict[str, dict[str, float]]] = {"rac-memory": {}, "rac-sqlite": {},
                                                   "reference": {}}
    with _tmpdir() as tmp:
        for n in sizes:
            blocks = 2 if quick else (8 if n < 10_000 else 3)
            out["rac-memory"][str(n)] = _summary(
                _rac_times(lambda: _engine("memory://"), "book", book, n, blocks, 25), bare)
            out["rac-sqlite"][str(n)] = _summary(_rac_times(
                lambda n=n: _engine(f"sqlite:///{tmp / f'g{n}-{time.time_ns()}.db'}"),
                "book", book, n, 1, 50), bare)
            out["reference"][str(n)] = _summary(
                _reference_times({"book": book, "cancel": cancel}, "book", n,
                                 blocks if n < 10_000 else 1, 25), bare)
    return out


def growth_tool_count(quick: bool) -> dict[str, dict[str, dict[str, float]]]:
    """Per-call overhead (µs) with 10 / 100 / 1,000 tools registered, calling the last one
    (memory store: the cost of the path, no disk): ``{approach: {count: {...}}}``."""
    bare = _bare_ns(2000)
    out: dict[str, dict[str, dict[str, float]]] = {"rac-memory": {}, "reference": {}}
    blocks = 4 if quick else 20
    for count in GROWTH_TOOL_COUNTS:
        tools, comps = _tools(count)
        last = tools[count - 1]

        def make(tools: list[Callable[..., Any]] = tools, comps: dict[str, Any] = comps
                 ) -> rac.RAC:
            return rac.RAC(compensations=comps, store="memory://", load_entrypoints=False,
                           tools=tools, read_only=[])

        out["rac-memory"][str(count)] = _summary(
            _rac_times(make, last.__name__, last, 0, blocks, 25), bare)
        out["reference"][str(count)] = _summary(
            _reference_times({t.__name__: t for t in tools}, last.__name__, 0,
                             max(blocks // 4, 2), 25), bare)
    return out


def growth_result_size(quick: bool) -> dict[str, Any]:
    """Per-call overhead (µs over the bare call) of a tool returning 1 KB / 100 KB / 1 MB of
    prose, beside ``json.dumps`` of the same value (µs, median) and the ratio of the two (the
    issue's target: at most 10x for 1 MB)."""
    import json

    out: dict[str, Any] = {"json_dumps": {}, "rac-memory": {}, "rac-sqlite": {},
                           "reference": {}, "ratio_to_json_dumps": {}}
    with _tmpdir() as tmp:
        for label, size in GROWTH_RESULT_SIZES.items():
            value = prose_result(size)
            samples = (30 if quick else 100) if size < 1_000_000 else (10 if quick else 30)
            blocks, per_block = max(samples // 25, 1), min(samples, 25)

            def big(passenger: str, _v: dict[str, Any] = value) -> dict[str, Any]:
                return _v

            big.__name__ = "book"
            bare_times = []
            for i in range(samples):
                t0 = time.perf_counter_ns()
                big(passenger=f"b{i}")
                bare_times.append(time.perf_counter_ns() - t0)
            bare = percentile(bare_times, 50)
            dumps = []
            for _ in range(samples):
                t0 = time.perf_counter_ns()
                json.dumps(value)
                dumps.append(time.perf_counter_ns() - t0)
            out["json_dumps"][label] = round(percentile(dumps, 50) / 1000, 1)
            out["rac-memory"][label] = _summary(
                _rac_times(lambda: _engine("memory://"), "book", big, 0, blocks, per_block),
                bare)
            out["rac-sqlite"][label] = _summary(_rac_times(
                lambda label=label: _engine(f"sqlite:///{tmp / f's{label}-{time.time_ns()}.db'}"),
                "book", big, 0, blocks, per_block), bare)
            out["reference"][label] = _summary(
                _reference_times({"book": big, "cancel": cancel}, "book", 0, blocks, per_block),
                bare)
            out["ratio_to_json_dumps"][label] = {
                name: round(out[name][label]["median"] / max(out["json_dumps"][label], 0.1), 2)
                for name in ("rac-memory", "rac-sqlite", "reference")}
    return out


def growth(quick: bool) -> dict[str, Any]:
    """Every growth table, with the machine and command that made them."""
    import os
    import platform
    import sys

    return {"python": sys.version.split()[0], "machine": platform.machine(),
            "cpus": os.cpu_count(), "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "load_average": round(os.getloadavg()[0], 1),
            "command": "uv run python -m benchmarks.suites.overhead --growth"
                       + (" --quick" if quick else ""),
            "unit": "microseconds per call over the bare call (median, p99)",
            "log_size": growth_log_size(quick), "tool_count": growth_tool_count(quick),
            "result_size": growth_result_size(quick),
            "load_average_after": round(os.getloadavg()[0], 1)}


def main(argv: list[str]) -> int:
    import json
    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    if "--growth" not in argv:
        print("usage: python -m benchmarks.suites.overhead --growth [--quick]")
        return 2
    results = growth("--quick" in argv)
    GROWTH_OUT.parent.mkdir(parents=True, exist_ok=True)
    GROWTH_OUT.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    import sys as _sys

    _sys.exit(main(_sys.argv[1:]))
