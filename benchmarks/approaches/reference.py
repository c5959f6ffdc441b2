"""The published reference implementation, ``react-agent-compensation`` 0.2.0, driven through
its own public API (``CompensationMiddleware`` and ``wrap_tool_with_compensation``, the path its
``create_compensated_agent`` uses) on the same worlds, seeds and fault schedules.

It is configured as a careful user would: the compensation pairs, the alternatives, a retry
policy with three tries, and a state mapper per tool that builds the compensator's arguments
exactly (so its argument guessing is never exercised). Its blocking backoff sleeps are
redirected to the virtual clock.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from benchmarks.approaches.base import (
    ABORT,
    ATTENTION,
    GOAL,
    LogView,
    RunResult,
    Setup,
    drive,
    error_text,
)
from benchmarks.harness.clock import VirtualClock
from benchmarks.harness.policies import Abort, Call, Finish, Observation, ReActPolicy
from benchmarks.worlds.base import CompSpec, World

logging.getLogger("react_agent_compensation").setLevel(logging.CRITICAL)

ROLLBACK_MARK = "[COMPENSATION TRIGGERED]"
#: LangChain argument schemas per (world, tool, signature), built once per process. The
#: signature is part of the key: in the ``keyed`` variant a tool takes an ``idempotency_key``
#: and in ``plain`` it does not, and a schema cached from one variant and used in the other
#: made a run's outcome depend on which cell the worker process had run first.
_SCHEMAS: dict[tuple[str, str, str], Any] = {}


@contextlib.contextmanager
def virtual_sleep(clock: VirtualClock) -> Iterator[None]:
    """Make the reference's ``time.sleep`` in its retry loop advance ``clock`` instead."""
    from react_agent_compensation.core import recovery_manager

    real = recovery_manager.time
    recovery_manager.time = SimpleNamespace(sleep=clock.sleep,  # type: ignore[assignment]
                                            time=real.time)
    try:
        yield
    finally:
        recovery_manager.time = real  # type: ignore[assignment]


#: what an exact state mapper returns when the field it needs is missing: an argument no
#: compensating tool takes, so the compensation fails, naming what was missing
MISSING = "missing_argument"


def _mapper(spec: CompSpec) -> Any:
    """The exact state mapper for ``spec``. The reference takes a mapper that raises as "try
    the next strategy" and falls back to guessing the arguments from the result (the first
    id-like field, or the whole result); a careful user who maps exactly does not want a guess,
    so a mapper that cannot build the arguments returns ones the compensator refuses."""
    def mapper(result: Any, params: dict[str, Any]) -> dict[str, Any]:
        try:
            return spec.build(params, result)
        except (KeyError, TypeError, IndexError) as e:
            return {MISSING: f"{spec.tool}: no {e} in {result!r}"}
    return mapper


def build_middleware(world: World, tools: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The reference's middleware over LangChain tools made from ``tools``, and the wrapped
    tools an agent built with it would call."""
    from langchain_core.tools import StructuredTool
    from react_agent_compensation.core import RetryPolicy
    from react_agent_compensation.langchain_adaptor import (
        CompensationMiddleware,
        wrap_tool_with_compensation,
    )

    lc_tools = []
    for name, fn in tools.items():
        key = (type(world).__name__, name, str(inspect.signature(fn)))
        if key not in _SCHEMAS:
            _SCHEMAS[key] = StructuredTool.from_function(func=fn, name=name,
                                                         description=name).args_schema
        lc_tools.append(StructuredTool(name=name, description=name, func=fn,
                                       args_schema=_SCHEMAS[key]))
    middleware = CompensationMiddleware(
        compensation_mapping={fwd: spec.tool for fwd, spec in world.compensations.items()},
        tools=lc_tools,
        alternative_map={k: list(v) for k, v in world.alternatives.items()},
        retry_policy=RetryPolicy(max_retries=3, initial_delay=0.5, max_delay=8.0,
                                 jitter=False),
        state_mappers={fwd: _mapper(spec) for fwd, spec in world.compensations.items()})
    wrapped = {t.name: wrap_tool_with_compensation(t, middleware) for t in lc_tools}
    return middleware, wrapped


def reference_log_view(world: World, middleware: Any) -> LogView:
    """What the reference's transaction log believes about the world's effects."""
    view = LogView()
    for rec in middleware.transaction_log.snapshot().values():
        result = rec.result
        if hasattr(result, "content"):
            result = result.content
        eid = world.effect_id(rec.action, result)
        if eid is None:
            continue
        if rec.status.value == "COMPLETED" and not rec.compensated:
            view.live.add(eid)
        elif rec.compensated:
            view.undone.add(eid)
    return view


@dataclass
class Reference:
    """react-agent-compensation 0.2.0 under the same ReAct policy as RAC."""

    name: str = "reference"

    def run(self, setup: Setup) -> RunResult:
        """Run the policy with every call through the reference's wrapped tools."""
        middleware, wrapped = build_middleware(setup.world, setup.tools)
        policy = ReActPolicy(setup.scenario, setup.world, setup.seed)
        report = ""
        told: set[int] = set()
        claims_clean = False
        said: list[str] = []

        def execute(call: Call) -> Observation:
            try:
                out = wrapped[call.tool].func(**call.args)
            except Exception as e:  # noqa: BLE001 - untracked tools re-raise
                return Observation(False, error=error_text(e))
            if isinstance(out, str) and ROLLBACK_MARK in out:
                said.append(out)
                if "ROLLBACK EXECUTED" in out:
                    # it tells the agent every action so far was cancelled
                    told.update(range(1, setup.layer.stats.tool_calls + 1))
                return Observation(False, error=out, undone=True, report=out,
                                   reset="ROLLBACK EXECUTED" in out)
            if not isinstance(out, dict | list):
                out = str(out)  # what a LangChain ToolMessage would carry
            return Observation(True, value=out)

        with virtual_sleep(setup.clock):
            end = drive(policy, setup, execute)
            status = GOAL if isinstance(end, Finish) else ABORT
            if isinstance(end, Abort):
                try:
                    middleware.rollback()
                    report = end.reason
                    claims_clean = True  # its rollback returned: it reports the actions undone
                except Exception as e:  # noqa: BLE001 - its rollback raises on failures
                    report = f"{end.reason}; rollback: {e}"
                    status = ATTENTION
        return RunResult(status, policy.steps, report="\n".join([*said, report]).strip(),
                         log=reference_log_view(setup.world, middleware),
                         claims_clean=claims_clean, claimed_undone=told)
