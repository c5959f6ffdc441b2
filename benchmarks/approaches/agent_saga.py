"""The closest peer, ``agent-saga`` 2.3 (PyPI), as a comparator: the same ReAct policy, worlds,
seeds and fault schedules, every call through agent-saga's own public API.

Configured as its documentation describes a careful user doing it: each run is one saga
(``saga_scope``, an in-memory ``AsyncWAL``); each side-effecting tool is a ``tool`` with its
semantics declared (``COMPENSABLE`` with a compensation factory over the forward result,
``IRREVERSIBLE`` for what cannot be undone, behind a pre-flight gate whose approval provider
says yes, since the task asks for it); read-only tools are called as they are. A factory builds
the compensation's arguments from the result (and from the call's arguments where the undo
names them), and fails when a field it needs is missing (agent-saga then names the step
orphaned), as the library's own ``inverse_of`` does;
an update is undone from the values read just before it (the shape of its Postgres
connector's snapshot). Where a tool takes an idempotency key (the ``keyed`` variant) the step
passes one, fixed across the step's retries, and so does each compensation
(``Compensation.idempotency_key``), as the docs ask of connectors.

Two variants: ``agent-saga`` with its per-step ``RetryPolicy`` on every tool (the library's
defaults, with the same attempt budget as every approach: one call and two retries), and
``agent-saga-noretry`` with the retry off for the tools whose repeat is not safe (on only for
tools whose repeat does nothing more, and for keyed tools when a key is passed). agent-saga
retries a failed compensation itself (three attempts, its ``SagaContext`` default).

Its waits (a step's retry backoff, a compensation's retry delay) go to the virtual clock; its
lease heartbeat keeps real time. Nothing of agent-saga is patched or copied.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
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
from benchmarks.harness.faults import IDEMPOTENCY_PARAM
from benchmarks.harness.policies import Abort, Call, Finish, Observation, ReActPolicy
from benchmarks.worlds.base import resolve

#: one call plus two retries, as every approach gets
MAX_RETRIES = 2


class GaveUp(Exception):
    """The agent gave up on the task: raised inside the saga, so agent-saga rolls it back."""


class VirtualWaits:
    """Stands in for the ``asyncio`` module inside agent-saga's saga modules during a run: its
    backoff waits advance the run's virtual clock instead of sleeping; the lease heartbeat
    (``_renew_lease``) sleeps for real; everything else is ``asyncio`` itself."""

    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock

    def __getattr__(self, name: str) -> Any:
        return getattr(asyncio, name)

    def sleep(self, delay: float, result: Any = None) -> Any:
        """``asyncio.sleep``, on the virtual clock except for the heartbeat."""
        if sys._getframe(1).f_code.co_name == "_renew_lease":
            return asyncio.sleep(delay, result)
        self.clock.sleep(delay)
        return asyncio.sleep(0, result)


@contextlib.contextmanager
def virtual_waits(clock: VirtualClock) -> Iterator[None]:
    """agent-saga's retry and compensation waits on ``clock`` for the duration."""
    from agent_saga import context, decorator

    saved = context.asyncio, decorator.asyncio
    context.asyncio = decorator.asyncio = VirtualWaits(clock)  # type: ignore[assignment]
    try:
        yield
    finally:
        context.asyncio, decorator.asyncio = saved  # type: ignore[assignment]


def before_path(path: str, args: dict[str, Any], before: Any) -> Any:
    """A restore's argument: ``before.<field>`` of the values read before the update, or
    ``args.<name>`` of the call."""
    root, _, rest = path.partition(".")
    return resolve(f"result.{rest}", args, before) if root == "before" else \
        resolve(path, args, None)


def takes_key(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` accepts an idempotency key."""
    return IDEMPOTENCY_PARAM in inspect.signature(fn).parameters


@dataclass
class AgentSaga:
    """agent-saga 2.3 under the same ReAct policy as RAC (``retry_all``: its retry on every
    tool; else only where a repeat is safe)."""

    retry_all: bool = True
    name: str = ""

    def __post_init__(self) -> None:
        if not self.name:
            self.name = "agent-saga" if self.retry_all else "agent-saga-noretry"

    def run(self, setup: Setup) -> RunResult:
        """One run as one saga; the whole saga is rolled back when the policy gives up."""
        logging.getLogger("agent_saga").setLevel(logging.CRITICAL)
        with virtual_waits(setup.clock):
            return asyncio.run(self._episode(setup))

    def _retry(self, setup: Setup, tool: str, keyed: bool) -> Any:
        from agent_saga import RetryPolicy

        safe = tool in setup.world.idempotent_tools or keyed
        return RetryPolicy(max_retries=MAX_RETRIES) if self.retry_all or safe else None

    async def _episode(self, setup: Setup) -> RunResult:
        from agent_saga import ActionSemantics, Compensation, SagaAborted, saga_scope, tool
        from agent_saga.gate import PreFlightGate
        from agent_saga.wal import AsyncWAL

        world = setup.world
        loop = asyncio.get_running_loop()
        policy = ReActPolicy(setup.scenario, world, setup.seed)
        made: dict[str, str] = {}  # effect id -> how it is named
        undo_of: dict[int, str] = {}  # id(compensation) -> effect id
        counter = [0]

        def factory(name: str, args: dict[str, Any], before: Any) -> Callable[[Any], Any]:
            spec = world.compensations.get(name)
            restore = world.restores.get(name)

            def build(result: Any) -> Any:
                if spec is not None:
                    comp_tool, kwargs = spec.tool, spec.build(args, result)
                elif restore is not None:
                    comp_tool = name
                    kwargs = {k: before_path(p, args, before) for k, p in restore[2].items()}
                else:
                    return None
                counter[0] += 1
                key = f"{setup.seed}:undo:{counter[0]}"
                fn = setup.tools[comp_tool]
                if takes_key(fn):
                    kwargs[IDEMPOTENCY_PARAM] = key
                comp = Compensation(fn=fn, kwargs=kwargs, handler=comp_tool,
                                    description=f"{comp_tool} {kwargs}", idempotency_key=key)
                eid = world.effect_id(name, result) if result is not None else None
                if eid:
                    undo_of[id(comp)] = eid
                return comp
            return build

        async def step(call: Call) -> Any:
            fn = setup.tools[call.tool]
            args = dict(call.args)
            keyed = takes_key(fn)
            if keyed:
                counter[0] += 1
                args[IDEMPOTENCY_PARAM] = f"{setup.seed}:step:{counter[0]}"
            if call.tool in world.irreversible:
                semantics = ActionSemantics.IRREVERSIBLE
            else:
                semantics = ActionSemantics.COMPENSABLE
            before = None
            restore = world.restores.get(call.tool)
            if restore is not None:  # the values the update overwrites, read just before it
                read, read_args, _ = restore
                before = setup.tools[read](**{k: before_path(p, call.args, None)
                                              for k, p in read_args.items()})
            wrapped = tool(call.tool, semantics=semantics,
                           compensate=factory(call.tool, call.args, before),
                           retry_policy=self._retry(setup, call.tool, keyed))(fn)
            return await wrapped(**args)

        def execute(call: Call) -> Observation:
            try:
                if call.tool in world.read_only:
                    value = setup.tools[call.tool](**call.args)
                else:
                    value = asyncio.run_coroutine_threadsafe(step(call), loop).result()
            except Exception as e:  # noqa: BLE001 - a tool error is an observation
                return Observation(False, error=error_text(e))
            eid = world.effect_id(call.tool, value)
            if eid:
                made[eid] = call.tool
            return Observation(True, value=value)

        gate = PreFlightGate(approval_provider=lambda ctx, rule: True)
        wal = AsyncWAL()
        await wal.start()
        report = None
        end: Any = None
        try:
            async with saga_scope(name=setup.scenario.key, gate=gate, wal=wal):
                # the agent loop runs in a thread that carries the saga's context (as a sync
                # agent framework runs its tools); each step is awaited on this loop
                end = await asyncio.to_thread(drive, policy, setup, execute)
                if isinstance(end, Abort):
                    raise GaveUp(end.reason)
        except SagaAborted as aborted:
            report = aborted.report
        finally:
            await wal.close()
        log = LogView(live=set(made))
        if report is not None:
            for s in report.compensated:
                eid = undo_of.get(id(s.compensation))
                if eid:
                    log.live.discard(eid)
                    log.undone.add(eid)
        if isinstance(end, Finish):
            return RunResult(GOAL, policy.steps, log=log)
        assert report is not None
        reason = getattr(end, "reason", "")
        text = f"{reason}; {report.summary()}"
        if not report.clean:
            text += "; " + "; ".join(f"{s.tool} {s.state.value}: {s.error or ''}"
                                     for s in (*report.failed, *report.orphaned,
                                               *report.unresolved))
        return RunResult(ABORT if report.clean else ATTENTION, policy.steps, report=text,
                         log=log, claims_clean=report.clean)
