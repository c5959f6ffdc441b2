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
            steps = _STEPS.setdefault(run, {})
            steps[agent] = steps.get(agent, 0) + 1
        return await take_step(*args, **kwargs)

    return counted


def batch_of(run: rac.Run, agent: str | None) -> Hashable | None:
    """The batch of a call ``agent`` makes now in ``run``: its latest model step (None when no
    step of the agent was counted, e.g. a tool called directly)."""
    step = _STEPS.get(run, {}).get(agent or "")
    return rac.adapters.batch_key(agent, step) if step is not None else None
