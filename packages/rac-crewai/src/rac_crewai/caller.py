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

import threading
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from crewai.hooks.dispatch import InterceptionPoint, get_scoped_hooks, scoped_hooks
from crewai.tools.agent_tools.base_agent_tools import BaseAgentTool

from rac.adapters import Delegation
from rac_crewai.turns import turn_of


class Group:
    """Work that runs beside other work of the run and is told of a rollback only through its
    own calls: the coworker's work for one delegation, or one ``async_execution=True`` task.

    A hierarchical manager's model may delegate several times in one turn, and CrewAI runs those
    delegations in parallel; async tasks run beside each other inside one kickoff. Such work is
    one batch, as the tool calls of one model turn are: each call of it is in the batch ``key``
    (for delegations, the manager's turn; for an async task, a key of its own registered when
    the crew started it), so once a rollback begins, work that had not made its call yet is
    refused rather than booking into a world RAC just reported back to how it was. Work that
    read the rollback's report (its call failed, it was told what was undone) may replan: its
    calls of later model turns are batches of their own again."""

    def __init__(self, key: Hashable, delegator: Any = None) -> None:
        self.key = key
        #: the agent that delegated: its own later calls are not the coworker's
        self.delegator = delegator
        self._lock = threading.Lock()
        self._heard: set[Hashable | None] = set()

    def batch(self, own_turn: Hashable | None) -> Hashable | None:
        """The batch of a call of this work asked for in its model turn ``own_turn``."""
        with self._lock:
            if self._heard and own_turn is not None and own_turn not in self._heard:
                return own_turn  # a turn after the work read a report: its own batch
        return self.key

    def heard(self, own_turn: Hashable | None) -> None:
        """The work was told of a rollback in its model turn ``own_turn``."""
        with self._lock:
            self._heard.add(own_turn)


def _is_delegation(context: Any) -> bool:
    tool = getattr(context, "tool", None)
    return isinstance(tool, BaseAgentTool) or isinstance(
        getattr(tool, "_original_tool", None), BaseAgentTool)


_GROUP: ContextVar[Group | None] = ContextVar("rac_crewai_group", default=None)
_CALLER: ContextVar[str | None] = ContextVar("rac_crewai_caller", default=None)
_TURN: ContextVar[str | None] = ContextVar("rac_crewai_turn", default=None)
_CONTEXT: ContextVar[Any] = ContextVar("rac_crewai_call_context", default=None)
#: The delegation under way in this context, with CrewAI's hook context of its call.
_DELEGATION: ContextVar[tuple[Delegation, Any] | None] = ContextVar(
    "rac_crewai_delegation", default=None)


def note_caller(context: Any) -> None:
    """``pre_tool_call`` hook: remember the role of the agent making this call and the model
    turn that asked for it (the hook runs in the call's own thread, right before it)."""
    agent = getattr(context, "agent", None)
    role = getattr(agent, "role", None)
    _CALLER.set(role if isinstance(role, str) and role else None)
    turn = turn_of(context)
    _TURN.set(turn)
    _CONTEXT.set(context)
    if _is_delegation(context):
        if turn is not None:  # the coworker's work: in the batch of the manager's turn
            _GROUP.set(Group(turn, delegator=agent))
        # What the coworker's calls that fail for good are told, the delegator hears too
        # (answer_delegation, right after the call, in this context).
        _DELEGATION.set((Delegation().__enter__(), context))
    else:
        group = _GROUP.get()
        if group is not None and group.delegator is agent:
            _GROUP.set(None)  # the delegating agent's own call, after the delegation


def answer_delegation(context: Any) -> str | None:
    """``post_tool_call`` hook: a delegation's answer (the coworker's) followed by what RAC
    told the coworker of a rollback, so the delegating agent's model hears what was undone
    whatever the coworker answers (:class:`rac.adapters.Delegation`); None (the answer as it
    is) for any other call, or when nothing failed."""
    under_way = _DELEGATION.get()
    # CrewAI makes a new hook context for the post hook, of the same tool object
    if under_way is None or getattr(under_way[1], "tool", None) is not getattr(
            context, "tool", None):
        return None
    delegation = under_way[0]
    delegation.__exit__(None, None, None)
    _DELEGATION.set(None)
    text = context.tool_result if isinstance(context.tool_result, str) else ""
    answered = delegation.answer(text)
    return answered if answered != text else None


def current_group() -> Group | None:
    """The parallel work (a delegation, an async task) making the call in this context."""
    return _GROUP.get()


@contextmanager
def in_group(group: Group) -> Iterator[None]:
    """Make ``group`` the parallel work of the block's calls."""
    token = _GROUP.set(group)
    try:
        yield
    finally:
        _GROUP.reset(token)


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
    for point, hook in ((InterceptionPoint.PRE_TOOL_CALL, note_caller),
                        (InterceptionPoint.POST_TOOL_CALL, answer_delegation), *extra):
        if hook not in hooks[point]:
            hooks[point].append(hook)
    caller, turn, call = _CALLER.set(None), _TURN.set(None), _CONTEXT.set(None)
    group, delegation = _GROUP.set(_GROUP.get()), _DELEGATION.set(None)
    try:
        with scoped_hooks(hooks):
            yield
    finally:
        _DELEGATION.reset(delegation)
        _GROUP.reset(group)
        _CONTEXT.reset(call)
        _TURN.reset(turn)
        _CALLER.reset(caller)
