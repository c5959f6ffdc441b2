"""Per-call overhead RAC adds to a CrewAI tool call.

Two measurements, each interleaving bare and RAC calls so drift hits both alike:

* ``crew``: a one-agent ``Crew`` on a scripted model whose kickoff makes exactly one tool call
  (model -> tool -> model), kicked off bare and with ``enable_rac``; one kickoff = one tool call
  plus opening and closing one RAC run. ``crew_two_calls``: the same with two tool calls in
  the turn (model -> tool -> model -> tool -> model), the scripted two-call turn issue 30's
  target is set for (within +25% of the bare turn with the SQLite log).
* ``tool``: the tool call alone as CrewAI's executor makes it (``tool.run(**args)``), bare and
  through RAC's wrapper inside an open run: the adapter's cost without CrewAI's own.

Overhead = RAC wall time - bare wall time of each interleaved pair; median and p99 are reported,
with the log in memory and in a SQLite file. RAC's structlog events are filtered out below
WARNING, as an application would.

    uv run python -m benchmarks.suites.crewai_overhead [--calls 300] [--two-call-turns 300]
        [--tool-calls 5000]

writes ``benchmarks/results/crewai_overhead.json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
os.environ["HOME"] = tempfile.mkdtemp(prefix="rac-crewai-bench-")
logging.getLogger("crewai").setLevel(logging.ERROR)

import structlog  # noqa: E402
from crewai import Agent, Crew, Task  # noqa: E402
from crewai import __version__ as crewai_version  # noqa: E402
from crewai.llms.base_llm import BaseLLM  # noqa: E402
from crewai.tools import BaseTool, tool  # noqa: E402

import rac  # noqa: E402
from benchmarks.harness.stats import median_p99  # noqa: E402
from rac_crewai import RACTool, enable_rac  # noqa: E402
from rac_crewai.tool_table import as_rac_tool  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "results" / "crewai_overhead.json"
ARGS = {"passenger": "ann"}


@tool("book_seat")
def book_seat(passenger: str) -> dict[str, Any]:
    """Book a seat (the measured tool: returns at once, touches nothing)."""
    return {"booking_id": f"BK-{passenger}", "status": "confirmed"}


@tool("cancel_seat")
def cancel_seat(booking_id: str) -> dict[str, Any]:
    """Cancel a seat."""
    return {"cancelled": booking_id}


class OneCallModel(BaseLLM):
    """Asks for ``per_turn`` ``book_seat`` calls, one per model call, then answers."""

    llm_type: str = "bench"
    per_turn: int = 1
    asked: int = 0

    def supports_function_calling(self) -> bool:
        return True

    def supports_stop_words(self) -> bool:
        return False

    def get_context_window_size(self) -> int:
        return 100_000

    def call(self, messages: Any, tools: Any = None, callbacks: Any = None,
             available_functions: Any = None, from_task: Any = None, from_agent: Any = None,
             response_model: Any = None) -> Any:
        if self.asked < self.per_turn:
            self.asked += 1
            args = {"passenger": f"{ARGS['passenger']}{self.asked}"}
            return [{"id": f"c{self.asked}", "type": "function",
                     "function": {"name": "book_seat", "arguments": json.dumps(args)}}]
        self.asked = 0
        return "booked"


def engine(store: str) -> rac.RAC:
    """A RAC engine for the measured tool."""
    return rac.RAC(compensations={"book_seat": "cancel_seat"}, store=store,
                   load_entrypoints=False)


def crew(per_turn: int = 1) -> Crew:
    """A fresh one-agent crew that makes ``per_turn`` tool calls per kickoff."""
    agent = Agent(role="booker", goal="book", backstory="b",
                  llm=OneCallModel(model="bench", per_turn=per_turn),
                  tools=[book_seat, cancel_seat])
    return Crew(agents=[agent], tasks=[Task(description="book", expected_output="x",
                                            agent=agent)])


def _timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1e6


def paired(bare: Callable[[], Any], guarded: Callable[[], Any], calls: int,
           warmup: int) -> dict[str, Any]:
    """Interleave ``bare`` and ``guarded`` calls, which of the two goes first turning with
    each pair (so neither always runs on the other's warm caches or after its garbage);
    times in microseconds."""
    b: list[float] = []
    g: list[float] = []
    for i in range(warmup + calls):
        if i % 2:
            tg, tb = _timed(guarded), _timed(bare)
        else:
            tb, tg = _timed(bare), _timed(guarded)
        if i >= warmup:
            b.append(tb)
            g.append(tg)
    diff = [y - x for x, y in zip(b, g, strict=True)]
    return {"bare_us": median_p99(b), "rac_us": median_p99(g), "overhead_us": median_p99(diff)}



def measure_crew(store: str, calls: int, warmup: int, per_turn: int = 1) -> dict[str, Any]:
    """Kickoffs of a bare crew and of the same crew under RAC, ``per_turn`` tool calls each."""
    bare, guarded = crew(per_turn), enable_rac(crew(per_turn), engine(store))
    return paired(bare.kickoff, guarded.kickoff, calls, warmup)


def measure_tool(store: str, calls: int, warmup: int) -> dict[str, Any]:
    """One tool call as CrewAI's executor makes it, bare and through RAC in an open run."""
    eng = engine(store)
    wrapped: BaseTool = RACTool(book_seat, eng)  # what enable_rac puts on an agent
    with eng.run(agent_id="booker", tools=[as_rac_tool(cancel_seat)]):
        return paired(lambda: book_seat.run(**ARGS), lambda: wrapped.run(**ARGS), calls, warmup)


def main() -> None:
    """Measure and write the results file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300, help="crew kickoffs per store")
    parser.add_argument("--two-call-turns", type=int, default=300,
                        help="kickoffs of two tool calls per store")
    parser.add_argument("--tool-calls", type=int, default=5000, help="tool calls per store")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--out", type=Path, default=OUT)
    opts = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    load_before = os.getloadavg()
    results = []
    with tempfile.TemporaryDirectory(prefix="rac-crewai-bench-") as tmp:
        for label, store in (("memory", "memory://"), ("sqlite", f"sqlite:///{tmp}/rac.db")):
            row = {"store": label,
                   "crew": measure_crew(store, opts.calls, opts.warmup),
                   "crew_two_calls": measure_crew(store, opts.two_call_turns, opts.warmup,
                                                  per_turn=2),
                   "tool": measure_tool(store, opts.tool_calls, opts.warmup)}
            for kind in ("crew", "crew_two_calls"):
                bare = row[kind]["bare_us"]["median"]
                row[kind]["overhead_pct_median"] = round(
                    100 * row[kind]["overhead_us"]["median"] / bare, 2)
            results.append(row)
            print(json.dumps(row))
    report = {
        "benchmark": "crewai_overhead",
        "what": "overhead RAC adds to one CrewAI tool call: per crew kickoff making one tool "
                "call (crew) and two (crew_two_calls), and per tool call alone (tool.run vs RACTool.run in an open run); "
                "overhead = RAC - bare of interleaved pairs",
        "crew_calls": opts.calls, "two_call_turns": opts.two_call_turns,
        "tool_calls": opts.tool_calls, "warmup": opts.warmup,
        "python": platform.python_version(), "machine": platform.machine(),
        "crewai": crewai_version, "started_utc": started,
        "load_average_1_5_15": {"before": [round(x, 2) for x in load_before],
                                "after": [round(x, 2) for x in os.getloadavg()]},
        "cpus": os.cpu_count(),
        "target": "issue 30: a scripted two-call turn (crew_two_calls) with the SQLite log "
                  "within +25% of the bare turn",
        "results": results,
    }
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    opts.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {opts.out}")


if __name__ == "__main__":
    main()
