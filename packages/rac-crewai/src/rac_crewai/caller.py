"""Which agent is calling a tool, learned from CrewAI's before-tool-call hook.

A wrapped tool knows the agent it was given to, but the same tool object can be given to a task
(run by whichever agent the task gets, or by a coworker in a hierarchical crew) and crews copied by
``kickoff_for_each`` interpolate their roles. CrewAI's ``pre_tool_call`` hook sees the executing
agent; RAC registers it only inside the crew's run (an execution-scoped hook, never a global one)
and it only notes the agent's role in a context variable, which the wrapped tool reads in the same
thread right after.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from crewai.hooks.dispatch import InterceptionPoint, get_scoped_hooks, scoped_hooks

_CALLER: ContextVar[str | None] = ContextVar("rac_crewai_caller", default=None)


def note_caller(context: Any) -> None:
    """``pre_tool_call`` hook: remember the role of the agent making this call."""
    agent = getattr(context, "agent", None)
    role = getattr(agent, "role", None)
    _CALLER.set(role if isinstance(role, str) and role else None)


def current_caller() -> str | None:
    """The role of the agent whose tool call is being made in this context, if known."""
    return _CALLER.get()


@contextmanager
def caller_tracking() -> Iterator[None]:
    """Register :func:`note_caller` for the duration of the block, keeping any scoped hooks
    the user already has, and forget the caller afterwards."""
    hooks = {point: get_scoped_hooks(point) for point in InterceptionPoint}
    hooks[InterceptionPoint.PRE_TOOL_CALL].append(note_caller)
    token = _CALLER.set(None)
    try:
        with scoped_hooks(hooks):
            yield
    finally:
        _CALLER.reset(token)
