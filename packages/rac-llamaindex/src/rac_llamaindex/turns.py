"""Which model turn a tool call belongs to: the parallel batch of its siblings.

A model asking for several tool calls in one message gets them run at once (the agent's
``call_tool`` step has several workers). The tools are not told which message asked for them,
but an agent asks its model again only after every call of the turn returned, so the turn a
call belongs to is the agent's latest ``take_step`` in the same RAC run: enabled agents count
their steps per run, and each call's batch is ``(agent, step)``.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, TypeVar

import rac
from rac.adapters.resumed import RUN_ID_KEY

R = TypeVar("R")

#: run -> agent name -> the number of model steps the agent took in that run.
_STEPS: weakref.WeakKeyDictionary[rac.Run, dict[str, int]] = weakref.WeakKeyDictionary()


def counting_steps(take_step: Callable[..., Awaitable[R]], engine_of: Callable[[], rac.RAC],
                   agent: str) -> Callable[..., Awaitable[R]]:
    """``take_step`` (an agent's bound method) counting the agent's model steps per run."""

    @functools.wraps(take_step)
    async def counted(*args: Any, **kwargs: Any) -> R:
        run = engine_of().current_run()
        if run is not None:
            steps = _STEPS.get(run)
            if steps is None:  # the run's first step: its id goes into the workflow's state
                steps = _STEPS.setdefault(run, {})
                await _save_run_id(args[0] if args else kwargs.get("ctx"), run)
            steps[agent] = steps.get(agent, 0) + 1
        return await take_step(*args, **kwargs)

    return counted


async def _save_run_id(ctx: Any, run: rac.Run) -> None:
    """Write ``run``'s id into the workflow's state store, so that a ``Context`` saved from
    now on (``ctx.to_dict()``) resumes this run (see :mod:`rac.adapters.resumed`)."""
    store = getattr(ctx, "store", None)
    if store is None:
        return
    if await store.get(RUN_ID_KEY, default=None) != run.run_id:
        await store.set(RUN_ID_KEY, run.run_id)


def batch_of(run: rac.Run, agent: str | None) -> Hashable | None:
    """The batch of a call ``agent`` makes now in ``run``: its latest model step (None when no
    step of the agent was counted, e.g. a tool called directly)."""
    step = _STEPS.get(run, {}).get(agent or "")
    return rac.adapters.batch_key(agent, step) if step is not None else None
