"""Per-call overhead RAC adds to a LlamaIndex tool call.

Two measurements, each interleaving bare and RAC calls so drift hits both alike:

* ``agent``: a ``FunctionAgent`` on a scripted model whose run makes exactly one tool call
  (model -> tool -> model), run bare and with ``enable_rac``; one run = one tool call plus
  opening and closing one RAC run.
* ``tool``: the tool call alone as the agent's ``call_tool`` step makes it
  (``await tool.acall(**args)``), bare and through RAC's wrapper inside an open run: the
  adapter's cost without LlamaIndex's own.

Overhead = RAC wall time - bare wall time of each interleaved pair; median and p99 are reported,
with the log in memory and in a SQLite file. RAC's structlog events are filtered out below
WARNING, as an application would.

    uv run python -m benchmarks.suites.llamaindex_overhead [--calls 300] [--tool-calls 5000]

writes ``benchmarks/results/llamaindex_overhead.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import platform
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
from benchmarks.harness.stats import median_p99
from rac_llamaindex import LlamaIndexPlugin, RACFunctionTool, enable_rac

OUT = Path(__file__).resolve().parents[1] / "results" / "llamaindex_overhead.json"
ARGS = {"passenger": "ann"}


def book_seat(passenger: str) -> dict[str, Any]:
    """Book a seat (the measured tool: returns at once, touches nothing)."""
    return {"booking_id": f"BK-{passenger}", "status": "confirmed"}


def cancel_seat(booking_id: str) -> dict[str, Any]:
    """Cancel a seat."""
    return {"cancelled": booking_id}


def one_call(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
    """The scripted model: one ``book_seat`` call per run, then the answer."""
    if messages and messages[-1].role == MessageRole.TOOL:
        return ChatMessage(role=MessageRole.ASSISTANT, content="booked")
    return ChatMessage(role=MessageRole.ASSISTANT, blocks=[
        ToolCallBlock(tool_call_id="c1", tool_name="book_seat", tool_kwargs=ARGS)])


def engine(store: str) -> rac.RAC:
    """A RAC engine for the measured tool."""
    return rac.RAC(compensations={"book_seat": "cancel_seat"}, store=store,
                   load_entrypoints=False)


def agent() -> FunctionAgent:
    """A fresh agent whose every run makes one tool call."""
    return FunctionAgent(name="booker", llm=MockFunctionCallingLLM(response_generator=one_call),
                         tools=[FunctionTool.from_defaults(fn=book_seat),
                                FunctionTool.from_defaults(fn=cancel_seat)])


async def paired(bare: Callable[[], Awaitable[Any]], guarded: Callable[[], Awaitable[Any]],
                 calls: int, warmup: int) -> dict[str, Any]:
    """Interleave ``bare`` and ``guarded`` calls; times in microseconds."""
    b: list[float] = []
    g: list[float] = []
    for i in range(warmup + calls):
        t0 = time.perf_counter()
        await bare()
        t1 = time.perf_counter()
        await guarded()
        t2 = time.perf_counter()
        if i >= warmup:
            b.append((t1 - t0) * 1e6)
            g.append((t2 - t1) * 1e6)
    diff = [y - x for x, y in zip(b, g, strict=True)]
    return {"bare_us": median_p99(b), "rac_us": median_p99(g), "overhead_us": median_p99(diff)}



async def measure_agent(store: str, calls: int, warmup: int) -> dict[str, Any]:
    """Runs of a bare agent and of the same agent under RAC."""
    bare, guarded = agent(), enable_rac(agent(), engine(store))

    async def run_bare() -> Any:
        return await bare.run(user_msg="book")

    async def run_guarded() -> Any:
        return await guarded.run(user_msg="book")

    return await paired(run_bare, run_guarded, calls, warmup)


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
        return await paired(lambda: bare.acall(**ARGS), lambda: wrapped.acall(**ARGS), calls,
                            warmup)


async def measure(opts: argparse.Namespace) -> list[dict[str, Any]]:
    """Every measurement, for the memory and the SQLite log."""
    results = []
    with tempfile.TemporaryDirectory(prefix="rac-llamaindex-bench-") as tmp:
        for label, store in (("memory", "memory://"), ("sqlite", f"sqlite:///{tmp}/rac.db")):
            row: dict[str, Any] = {
                "store": label,
                "agent": await measure_agent(store, opts.calls, opts.warmup),
                "tool": await measure_tool(store, opts.tool_calls, opts.warmup)}
            bare = row["agent"]["bare_us"]["median"]
            row["agent"]["overhead_pct_median"] = round(
                100 * row["agent"]["overhead_us"]["median"] / bare, 2)
            results.append(row)
            print(json.dumps(row))
    return results


def main() -> None:
    """Measure and write the results file."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=300, help="agent runs per store")
    parser.add_argument("--tool-calls", type=int, default=5000, help="tool calls per store")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--out", type=Path, default=OUT)
    opts = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    results = asyncio.run(measure(opts))
    report = {
        "benchmark": "llamaindex_overhead",
        "what": "overhead RAC adds to one LlamaIndex tool call: per FunctionAgent run making "
                "one tool call, and per tool call alone (FunctionTool.acall vs "
                "RACFunctionTool.acall in an open run); overhead = RAC - bare of interleaved "
                "pairs",
        "agent_calls": opts.calls, "tool_calls": opts.tool_calls, "warmup": opts.warmup,
        "python": platform.python_version(), "machine": platform.machine(),
        "llama_index_core": version("llama-index-core"), "results": results,
    }
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    opts.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {opts.out}")


if __name__ == "__main__":
    main()
