"""Per-call overhead of RAC's Semantic Kernel filters on a ChatCompletionAgent function call.

Three agents on the same scripted chat completion service and the same trivial plugin: one
bare, one whose kernel has a pass-through filter pair (an auto-function-invocation and a
function-invocation filter that only ``await next(context)``: the floor any filter pair costs),
and one enabled with ``rac_semantic_kernel.enable_rac``. Each invocation (``get_response``) is
one user turn with exactly one function call (model -> function -> model), so with RAC it opens,
logs and completes one run. The agents are invoked in rounds, one invocation each in a rotating
order; the overhead is the difference of the wall times: median and p99, absolute and relative
to the bare agent's median, plus the median of the per-round differences. After the warmup the
heap is collected and frozen (``gc.freeze``). RAC's log is measured in memory and in a SQLite
file (``synchronous=FULL``); RAC's structlog events and SK's logging are filtered out, as an
application would.

    uv run --frozen python -m benchmarks.suites.semantic_kernel_overhead [--calls 1000] [--warmup 100]

writes ``benchmarks/results/semantic_kernel_overhead.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import json
import logging
import platform
import statistics
import tempfile
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

import structlog
from semantic_kernel import Kernel
from semantic_kernel.agents import ChatCompletionAgent
from semantic_kernel.connectors.ai.function_choice_behavior import FunctionChoiceBehavior
from semantic_kernel.contents import ChatHistory
from semantic_kernel.contents.utils.author_role import AuthorRole
from semantic_kernel.filters import FilterTypes
from semantic_kernel.functions import kernel_function

import rac
from benchmarks.harness.stats import interpolated_percentile, overhead_stats
from rac_semantic_kernel import enable_rac
from rac_semantic_kernel.testing import Call, ScriptedChatCompletion

OUT = Path(__file__).resolve().parents[1] / "results" / "semantic_kernel_overhead.json"
TARGET = 0.05
_ids = itertools.count()


class Seats:
    """The measured plugin: ``book`` touches nothing."""

    @kernel_function(description="Book a seat.")
    def book(self, passenger: str) -> dict[str, Any]:
        return {"booking_id": f"BK-{passenger}", "status": "confirmed"}

    @kernel_function(description="Cancel a seat.")
    def cancel(self, booking_id: str) -> dict[str, Any]:
        return {"cancelled": booking_id}


def one_call(history: ChatHistory) -> str | list[Call]:
    """A function call for a user turn, then the answer once the result is in."""
    if history.messages and history.messages[-1].role == AuthorRole.TOOL:
        return "booked"
    return [Call("seats", "book", {"passenger": f"p{next(_ids)}"})]


class EndlessScript(ScriptedChatCompletion):
    """The scripted service, answering every request with :func:`one_call`."""

    def _next(self, history: ChatHistory) -> Any:
        self._script.append(one_call)
        answer = super()._next(history)
        self._received.clear()  # keep no history: memory stays flat
        return answer


async def _pass(ctx: Any, next: Any) -> None:
    await next(ctx)


def _agent(kind: str, store: str) -> tuple[ChatCompletionAgent, rac.RAC | None]:
    kernel = Kernel()
    kernel.add_plugin(Seats(), plugin_name="seats")
    agent = ChatCompletionAgent(service=EndlessScript([]), kernel=kernel, name=kind,
                                function_choice_behavior=FunctionChoiceBehavior.Auto())
    engine = None
    if kind == "pass_through":
        kernel.add_filter(FilterTypes.AUTO_FUNCTION_INVOCATION, _pass)
        kernel.add_filter(FilterTypes.FUNCTION_INVOCATION, _pass)
    elif kind == "rac":
        engine = rac.RAC(compensations={"seats-book": "seats-cancel"}, store=store,
                         load_entrypoints=False)
        enable_rac(agent, rac=engine)
    return agent, engine




async def measure(store: str, calls: int, warmup: int) -> dict[str, Any]:
    """Rounds of one invocation of each agent (bare, pass-through, RAC); times in µs."""
    agents = {kind: _agent(kind, store) for kind in ("bare", "pass_through", "rac")}
    order = list(agents)
    times: dict[str, list[float]] = {name: [] for name in agents}
    for i in range(warmup + calls):
        if i == warmup:
            gc.collect()
            gc.freeze()
        k = i % len(order)
        for name in order[k:] + order[:k]:  # rotate, so no agent always goes first
            agent = agents[name][0]
            start = time.perf_counter_ns()
            await agent.get_response(messages="book a seat")
            if i >= warmup:
                times[name].append((time.perf_counter_ns() - start) / 1000)
    gc.unfreeze()
    engine = agents["rac"][1]
    assert engine is not None
    runs = engine.store.list_runs()
    # One run per invocation, each completed when its only call was.
    assert len(runs) == warmup + calls, len(runs)
    assert all(r.status is rac.RunStatus.COMPLETED for r in runs)
    bare = times["bare"]
    return {
        "store": store.split(":", 1)[0],
        "bare_us": {"median": round(statistics.median(bare), 1),
                    "p99": round(interpolated_percentile(bare, 99), 1)},
        "rac": overhead_stats(times["rac"], bare),
        "pass_through_filters": overhead_stats(times["pass_through"], bare),
        "rac_beyond_pass_through_us": round(statistics.median(times["rac"])
                                            - statistics.median(times["pass_through"]), 1),
    }


def main() -> None:
    """Run the benchmark and write the results file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--out", type=Path, default=OUT)
    opts = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    logging.getLogger("semantic_kernel").setLevel(logging.CRITICAL)
    results = []
    with tempfile.TemporaryDirectory(prefix="rac-sk-bench-") as tmp:
        for store in ("memory://", f"sqlite:///{tmp}/rac.db"):
            results.append(asyncio.run(measure(store, opts.calls, opts.warmup)))
            print(json.dumps(results[-1]))
    for r in results:
        r["under_target"] = r["rac"]["overhead_pct"]["median"] < 100 * TARGET
    doc = {
        "benchmark": "semantic_kernel_overhead",
        "what": "wall time of one ChatCompletionAgent.get_response making one function call "
                "(model -> function -> model) on a scripted service, with and without RAC's "
                "filters, in rotating rounds; overhead = RAC - bare (median, p99; "
                "paired_median = median of per-round differences); a pass-through filter pair "
                "shows the floor of any filters; heap frozen after the warmup",
        "calls": opts.calls, "warmup": opts.warmup, "target_pct": 100 * TARGET,
        "python": platform.python_version(), "machine": platform.machine(),
        "semantic_kernel": version("semantic-kernel"),
        "results": results,
    }
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    opts.out.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {opts.out}")


if __name__ == "__main__":
    main()
