"""What RAC learns from CrewAI's execution-scoped hooks: which agent is calling a tool, and
which model turn asked for the call.

A wrapped tool knows the agent it was given to, but the same tool object can be given to a task
(run by whichever agent the task gets, or by a coworker in a hierarchical crew) and crews copied by
``kickoff_for_each`` interpolate their roles. CrewAI's ``pre_tool_call`` hook sees the executing
agent; RAC registers it only inside a run it scoped (an execution-scoped hook, never a global
one) and it only notes the agent's role in a context variable, which the wrapped tool reads in
the same thread right after.

It also keeps CrewAI's hook context of the call, through which an approver can ask a person
(:mod:`rac_crewai.approvals`). The same hook names the call's model turn (:func:`rac_crewai.turns.turn_of`): the calls one
model message asked for are one batch (:func:`rac.adapters.execute`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from crewai.hooks.dispatch import InterceptionPoint, get_scoped_hooks, scoped_hooks

from rac_crewai.turns import turn_of

_CALLER: ContextVar[str | None] = ContextVar("rac_crewai_caller", default=None)
_TURN: ContextVar[str | None] = ContextVar("rac_crewai_turn", default=None)
_CONTEXT: ContextVar[Any] = ContextVar("rac_crewai_call_context", default=None)


def note_caller(context: Any) -> None:
    """``pre_tool_call`` hook: remember the role of the agent making this call and the model
    turn that asked for it (the hook runs in the call's own thread, right before it)."""
    agent = getattr(context, "agent", None)
    role = getattr(agent, "role", None)
    _CALLER.set(role if isinstance(role, str) and role else None)
    _TURN.set(turn_of(context))
    _CONTEXT.set(context)


def current_caller() -> str | None:
    """The role of the agent whose tool call is being made in this context, if known."""
    return _CALLER.get()


def current_call_context() -> Any:
    """CrewAI's ``ToolCallHookContext`` of the tool call being made in this context, if any
    (what an approver asks a person through)."""
    return _CONTEXT.get()


def current_turn() -> str | None:
    """The key of the model turn whose tool calls run in this context, if known."""
    return _TURN.get()


@contextmanager
def crew_hooks(*extra: tuple[InterceptionPoint, Callable[[Any], Any]]) -> Iterator[None]:
    """Register :func:`note_caller` and ``extra`` (point, hook) pairs for
    the duration of the block, keeping the scoped hooks already registered (the user's, or an
    enclosing RAC scope's: a hook already there is not added twice), and forget the caller and
    turn afterwards."""
    hooks = {point: get_scoped_hooks(point) for point in InterceptionPoint}
    for point, hook in ((InterceptionPoint.PRE_TOOL_CALL, note_caller), *extra):
        if hook not in hooks[point]:
            hooks[point].append(hook)
    caller, turn, call = _CALLER.set(None), _TURN.set(None), _CONTEXT.set(None)
    try:
        with scoped_hooks(hooks):
            yield
    finally:
        _CONTEXT.reset(call)
        _TURN.reset(turn)
        _CALLER.reset(caller)
