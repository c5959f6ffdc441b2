"""Task re-runs as nested scopes: a rejected attempt's calls are undone before the next one.

A task guardrail that rejects an answer makes CrewAI execute the task again
(``agent.execute_task`` for the same task, in the same kickoff and so in the same RAC run).
Each attempt of a task with a guardrail runs in a nested scope of the run
(:meth:`rac.Run.scope`). When the same task is executed again in the same run, the previous
attempt's scope is rolled back first, newest first, and the report is added to what the agent
reads for the new attempt, after CrewAI's own validation message: the agent knows the first
booking is gone and books again from a clean state.

A call that fails for good inside an attempt rolls back the attempt's scope (the core's nested
semantics) and then, through :func:`escalate`, the rest of the run too: a failure in a guarded
task undoes what the earlier tasks did, as it does in a task without a guardrail.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

import rac

#: How many (run, task) attempts are remembered (the newest; a kickoff has few tasks).
MEMORY = 1024

_LOCK = threading.Lock()
#: The scope of each task's newest attempt, by (run id, id of the task): the task object is
#: kept with it, so its id is not reused meanwhile.
_ATTEMPTS: OrderedDict[tuple[str, int], tuple[Any, str]] = OrderedDict()
#: The scope ids that are task attempts.
_ATTEMPT_SCOPES: OrderedDict[tuple[str, str], None] = OrderedDict()


def guarded(task: Any) -> bool:
    """True if CrewAI may run ``task`` again because a guardrail rejected its answer."""
    return bool(getattr(task, "guardrail", None) or getattr(task, "guardrails", None))


def _remember(run: rac.Run, task: Any, scope_id: str) -> None:
    with _LOCK:
        _ATTEMPTS[(run.run_id, id(task))] = (task, scope_id)
        _ATTEMPTS.move_to_end((run.run_id, id(task)))
        _ATTEMPT_SCOPES[(run.run_id, scope_id)] = None
        while len(_ATTEMPTS) > MEMORY:
            _ATTEMPTS.popitem(last=False)
        while len(_ATTEMPT_SCOPES) > MEMORY:
            _ATTEMPT_SCOPES.popitem(last=False)


def _previous(run: rac.Run, task: Any) -> str | None:
    with _LOCK:
        hit = _ATTEMPTS.get((run.run_id, id(task)))
    return hit[1] if hit is not None and hit[0] is task else None


def is_attempt(run: rac.Run, scope_id: str) -> bool:
    """True if ``scope_id`` is the scope of a task attempt of ``run``."""
    with _LOCK:
        return (run.run_id, scope_id) in _ATTEMPT_SCOPES


def _name(task: Any) -> str:
    return str(getattr(task, "name", None) or getattr(task, "description", "task"))[:80]


def _undo_previous(run: rac.Run, task: Any, context: Any) -> Any:
    """Roll back the task's previous attempt, if any; the context for the new attempt."""
    previous = _previous(run, task)
    if previous is None:
        return context
    report = run.rollback(reason=f"task {_name(task)!r} runs again: its answer was rejected",
                          scope=previous)
    if not report.compensated and not report.left_live:
        return context
    note = ("RAC undid what your rejected attempt did before this new attempt:\n"
            + run.engine.render(report))
    return f"{context}\n\n{note}" if context else note


def attempt_scoped(engine: rac.RAC, method: Callable[..., Any]) -> Callable[..., Any]:
    """``agent.execute_task`` with each attempt of a guarded task in a nested scope, the
    previous attempt of the same task in the same run undone first."""

    @functools.wraps(method)
    def execute_task(task: Any, context: Any = None, tools: Any = None) -> Any:
        run = engine.current_run()
        if run is None or not guarded(task):
            return method(task=task, context=context, tools=tools)
        context = _undo_previous(run, task, context)
        with run.scope() as scope:
            _remember(run, task, scope.scope_id)
            return method(task=task, context=context, tools=tools)

    return execute_task


def aattempt_scoped(engine: rac.RAC, method: Callable[..., Awaitable[Any]]
                    ) -> Callable[..., Awaitable[Any]]:
    """Async :func:`attempt_scoped` (``agent.aexecute_task``)."""

    @functools.wraps(method)
    async def aexecute_task(task: Any, context: Any = None, tools: Any = None) -> Any:
        run = engine.current_run()
        if run is None or not guarded(task):
            return await method(task=task, context=context, tools=tools)
        context = _undo_previous(run, task, context)
        async with run.scope() as scope:
            _remember(run, task, scope.scope_id)
            return await method(task=task, context=context, tools=tools)

    return aexecute_task


def escalate(run: rac.Run, outcome: rac.CallOutcome) -> str | None:
    """After a call failed for good inside a task attempt's scope (which the core rolled
    back), roll back the rest of the run as a failure outside a guarded task would; the
    rendered report of that second rollback, or None when there was nothing more to do."""
    scope = run.current_scope()
    # Only a call whose failure rolled its attempt back: not a refusal, not a call that found
    # its scope already rolled back (the call that caused that rollback escalates).
    if outcome.ok or outcome.report is None or not is_attempt(run, scope):
        return None
    parent = scope.rsplit(".", 1)[0]
    report = run.rollback(reason=f"{outcome.tool} failed", scope=parent)
    if not report.compensated and not report.left_live:
        return None
    return run.engine.render(report)
