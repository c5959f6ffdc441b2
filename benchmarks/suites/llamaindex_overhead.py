"""Per-call overhead RAC adds to a LlamaIndex tool call.

Three measurements:

* ``agent``: a ``FunctionAgent`` on a scripted model whose run makes exactly one tool call
  (model -> tool -> model), run bare and with ``enable_rac``; one run = one tool call plus
  opening and closing one RAC run. ``agent_two_calls``: the same agent making two tool calls in
  one run (model -> tool -> model -> tool -> model), the scripted two-call turn issue 30's
  target is set for (within +25% of the bare turn with the SQLite log).
* ``tool``: the tool call alone as the agent's ``call_tool`` step makes it
  (``await tool.acall(**args)``), bare and through RAC's wrapper inside an open run: the
  adapter's cost without LlamaIndex's own.

Bare and RAC runs are made in rounds, one of each, the order alternating from round to round
so neither always goes first; the garbage collector stays on (the heap is collected and frozen
after the warmup, ``gc.freeze``). Overhead = RAC wall time - bare wall time of each round;
median and p99 are reported, with the log in memory and in a SQLite file
(``synchronous=FULL``). With SQLite the rounds of the agent runs also time the fsync floor
(:mod:`benchmarks.harness.fsync_floor`): as many bare ``sqlite3`` commits of one row as a RAC
run flushes (counted on the store before the rounds), on the same disk; RAC's overhead beyond
that floor is its own. RAC's structlog events are filtered out below WARNING, as an
application would. Each call's CPU time (``time.process_time``, the process's threads included)
is recorded too: RAC's CPU cost, which a busy disk and other work on a shared machine move less
than the wall time. The load average is recorded.

    uv run python -m benchmarks.suites.llamaindex_overhead [--calls 300] [--two-call-turns 300]
        [--tool-calls 5000]

writes ``benchmarks/results/llamaindex_overhead.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

import structlog
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.tools import FunctionTool

import rac
from benchmarks.harness.fsync_floor import FsyncFloor, durable_commits
from benchmarks.harness.stats import median_p99
from rac_llamaindex import LlamaIndexPlugin, RACFunctionTool, enable_rac

OUT = Path(__file__).resolve().parents[1] / "results" / "llamaindex_overhead.json"
ARGS = {"passenger": "ann"}
TARGET_PCT = 25.0


def book_seat(passenger: str) -> dict[str, Any]:
    """Book a seat (the measured tool: returns at once, touches nothing)."""
    return {"booking_id": f"BK-{passenger}", "status": "confirmed"}


def cancel_seat(booking_id: str) -> dict[str, Any]:
    """Cancel a seat."""
    return {"cancelled": booking_id}


def script(per_run: int) -> Callable[..., ChatMessage]:
    """The scripted model: ``per_run`` ``book_seat`` calls per run, one per model step, then
    the answer."""

    def answer(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        done = sum(1 for m in messages if m.role == MessageRole.TOOL)
        if done >= per_run:
            return ChatMessage(role=MessageRole.ASSISTANT, content="booked")
        return ChatMessage(role=MessageRole.ASSISTANT, blocks=[
            ToolCallBlock(tool_call_id=f"c{done}", tool_name="book_seat",
                          tool_kwargs={"passenger": f"{ARGS['passenger']}{done}"})])

    return answer


def engine(store: str) -> rac.RAC:
    """A RAC engine for the measured tool."""
    return rac.RAC(compensations={"book_seat": "cancel_seat"}, store=store,
                   load_entrypoints=False)


def agent(per_run: int = 1) -> FunctionAgent:
    """A fresh agent whose every run makes ``per_run`` tool calls."""
    return FunctionAgent(name="booker",
                         llm=MockFunctionCallingLLM(response_generator=script(per_run)),
                         tools=[FunctionTool.from_defaults(fn=book_seat),
                                FunctionTool.from_defaults(fn=cancel_seat)])


async def rounds(timed: dict[str, Callable[[], Awaitable[Any]]], calls: int,
                 warmup: int) -> dict[str, list[float]]:
    """Rounds of one call of each of ``timed``, the order turning every round; wall times in
    µs, and under ``"<name> cpu"`` the process's CPU time of each call (its threads' too:
    what the call computed, without its waits for the disk or a core)."""
    names = list(timed)
    times: dict[str, list[float]] = {n: [] for n in names}
    times.update({f"{n} cpu": [] for n in names})
    for i in range(warmup + calls):
        if i == warmup:
            gc.collect()
            gc.freeze()
        k = i % len(names)
        for name in names[k:] + names[:k]:
            cpu, start = time.process_time(), time.perf_counter()
            await timed[name]()
            if i >= warmup:
                times[name].append((time.perf_counter() - start) * 1e6)
                times[f"{name} cpu"].append((time.process_time() - cpu) * 1e6)
    gc.unfreeze()
    return times


def paired(bare: list[float], guarded: list[float]) -> dict[str, Any]:
    """Bare and RAC times of the same rounds, and RAC's overhead (per round)."""
    diff = [y - x for x, y in zip(bare, guarded, strict=True)]
    return {"bare_us": median_p99(bare), "rac_us": median_p99(guarded),
            "overhead_us": median_p99(diff)}


async def measure_agent(store: str, calls: int, warmup: int, per_run: int = 1,
                        floor_dir: Path | None = None) -> dict[str, Any]:
    """Runs of a bare agent and of the same agent under RAC, ``per_run`` tool calls each;
    with ``floor_dir`` (a SQLite log), the fsync floor of a run too."""
    bare, guarded = agent(per_run), enable_rac(agent(per_run), engine(store))
    eng = guarded.__dict__["_rac_llamaindex_engine"]
    timed: dict[str, Callable[[], Awaitable[Any]]] = {
        "bare": lambda: bare.run(user_msg="book"),
        "rac": lambda: guarded.run(user_msg="book")}
    for _ in range(3):  # the first run's statements are prepared: count a later one
        await guarded.run(user_msg="book")
    with durable_commits(eng.store) as flushed:
        await guarded.run(user_msg="book")
    flushes = flushed()
    floor = FsyncFloor(floor_dir / f"floor-{per_run}.db", flushes) if floor_dir else None
    if floor is not None:
        timed["floor"] = floor.acall
    times = await rounds(timed, calls, warmup)
    runs = eng.store.list_runs()
    assert all(r.status is rac.RunStatus.COMPLETED for r in runs), "a measured run failed"
    row = paired(times["bare"], times["rac"])
    row["overhead_pct_median"] = round(
        100 * row["overhead_us"]["median"] / row["bare_us"]["median"], 2)
    row["flushed_commits_per_run"] = flushes
    row["cpu_overhead_us"] = median_p99([r - b for b, r in zip(
        times["bare cpu"], times["rac cpu"], strict=True)])
    if floor is not None:
        floor.close()
        beyond = [r - b - f for b, r, f in zip(times["bare"], times["rac"], times["floor"],
                                                strict=True)]
        row["fsync_floor_us"] = median_p99(times["floor"])
        row["floor_pct_median"] = round(
            100 * statistics.median(times["floor"]) / row["bare_us"]["median"], 2)
        row["beyond_floor_us"] = median_p99(beyond)
        row["beyond_floor_of_medians_us"] = round(
            statistics.median(times["rac"]) - statistics.median(times["bare"])
            - statistics.median(times["floor"]), 1)
        row["beyond_floor_pct_median"] = round(
            100 * row["beyond_floor_us"]["median"] / row["bare_us"]["median"], 2)
    return row


async def measure_tool(store: str, calls: int, warmup: int) -> dict[str, Any]:
    """One tool call as the agent's call_tool step makes it, bare and through RAC's wrapper in
    an open run."""
    eng = engine(store)
    eng.register_plugin(LlamaIndexPlugin())  # as enable_rac does
    bare = FunctionTool.from_defaults(fn=book_seat)
    cancel = FunctionTool.from_defaults(fn=cancel_seat)
    peers = eng.tool_set([bare, cancel])
    wrapped = RACFunctionTool(bare, eng, agent_id="booker", peers=peers)  # what enable_rac puts
    async with eng.run(agent_id="booker", tools=peers):
        times = await rounds({"bare": lambda: bare.acall(**ARGS),
                              "rac": lambda: wrapped.acall(**ARGS)}, calls, warmup)
    return paired(times["bare"], times["rac"])


async def measure(opts: argparse.Namespace) -> list[dict[str, Any]]:
    """Every measurement, for the memory and the SQLite log."""
    results = []
    with tempfile.TemporaryDirectory(prefix="rac-llamaindex-bench-") as tmp:
        for label, store in (("memory", "memory://"), ("sqlite", f"sqlite:///{tmp}/rac.db")):
            floor = Path(tmp) if label == "sqlite" else None
            row: dict[str, Any] = {
                "store": label, "load_average": os.getloadavg(),
                "agent": await measure_agent(store, opts.calls, opts.warmup, floor_dir=floor),
                "agent_two_calls": await measure_agent(store, opts.two_call_turns,
                                                       opts.warmup, per_run=2,
                                                       floor_dir=floor),
                "tool": await measure_tool(store, opts.tool_calls, opts.warmup)}
            two = row["agent_two_calls"]
            two["within_target"] = two["overhead_pct_median"] <= TARGET_PCT
            results.append(row)
            print(json.dumps(row))
    return results


def main() -> None:
    """Measure and write the results file."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=300, help="one-call agent runs per store")
    parser.add_argument("--two-call-turns", type=int, default=300,
                        help="agent runs of two tool calls per store")
    parser.add_argument("--tool-calls", type=int, default=5000, help="tool calls per store")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--out", type=Path, default=OUT)
    opts = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    results = asyncio.run(measure(opts))
    report = {
        "benchmark": "llamaindex_overhead",
        "what": "overhead RAC adds to LlamaIndex tool calls: per FunctionAgent run making one "
                "tool call (agent) and two (agent_two_calls), and per tool call alone "
                "(FunctionTool.acall vs RACFunctionTool.acall in an open run); overhead = "
                "RAC - bare of the same round (order alternating); with SQLite, the fsync "
                "floor (as many bare one-row sqlite3 commits as a RAC run flushes) and RAC's "
                "overhead beyond it",
        "started_utc": started, "target_pct_two_calls_sqlite": TARGET_PCT,
        "agent_calls": opts.calls, "two_call_turns": opts.two_call_turns,
        "tool_calls": opts.tool_calls, "warmup": opts.warmup,
        "python": platform.python_version(), "machine": platform.machine(),
        "llama_index_core": version("llama-index-core"), "results": results,
    }
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    opts.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {opts.out}")


if __name__ == "__main__":
    main()
