"""One RAC run per kickoff: the crew's (or agent's) entry points open and close the run.

``kickoff``/``akickoff`` of an enabled crew are replaced on the instance by versions that open a
run (agent id = the crew's name, records carry the calling agent's role), make the crew's tools
callable by RAC for compensations and alternatives, and track the calling agent with a hook
scoped to the run. ``kickoff_async`` and streaming go through these; ``copy`` is replaced so the
copies ``kickoff_for_each`` makes are enabled too, each input getting a run of its own. An entry
point called while a run of the same engine is open joins that run.

When RAC rolled back and CrewAI's ``tool_failure_policy="raise"`` then stopped the crew, the
error leaves ``kickoff`` after the compensations ran, and the run is not rolled back twice; a
hook aborting the run is control flow and rolls nothing back. Any other exception leaving
``kickoff`` rolls the run back first (the core's run semantics). The scoping itself is
:func:`rac.adapters.in_run`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from crewai.hooks.dispatch import HookAborted
from crewai.tools.tool_failure import ToolExecutionFailedError

import rac
from rac.adapters import in_async_run as kit_in_async_run
from rac.adapters import in_run as kit_in_run
from rac.models import RunStatus
from rac_crewai.caller import caller_tracking
from rac_crewai.results import RUN_ID_KEY
from rac_crewai.tool_table import as_rac_tool

R = TypeVar("R")
Prepare = Callable[[], tuple[str, list[rac.Tool]]]


def settled_by_rac(run: rac.Run, err: BaseException) -> bool:
    """True if ``err`` needs no rollback as it leaves the kickoff: CrewAI stopping on a failure
    RAC already rolled back (``tool_failure_policy="raise"``), with nothing done in the run
    since, or a hook aborting the run (control flow)."""
    if isinstance(err, HookAborted):
        return True
    if not isinstance(err, ToolExecutionFailedError):
        return False
    details = err.record.failure.details
    return (details.get(RUN_ID_KEY) == run.run_id
            and run.status in (RunStatus.COMPENSATED, RunStatus.NEEDS_ATTENTION))


def _scoped_hooks(run: rac.Run) -> list[Any]:
    return [caller_tracking()]


def _never() -> bool:
    return False


def in_run(engine: rac.RAC, method: Callable[..., R], prepare: Prepare,
           bypass: Callable[[], bool] = _never) -> Callable[..., R]:
    """``method`` running inside a run of ``engine`` (``prepare`` gives the run's agent id and
    the tools it may call), joining one already open. While ``bypass()`` is true the method
    runs as it is: a streaming kickoff only sets up a stream, and calls ``kickoff`` again to do
    the work."""
    return kit_in_run(engine, method, prepare, bypass=bypass, settled=settled_by_rac,
                      around=_scoped_hooks)


def in_async_run(engine: rac.RAC, method: Callable[..., Awaitable[R]], prepare: Prepare,
                 bypass: Callable[[], bool] = _never) -> Callable[..., Awaitable[R]]:
    """Async :func:`in_run`."""
    return kit_in_async_run(engine, method, prepare, bypass=bypass, settled=settled_by_rac,
                            around=_scoped_hooks)


def rac_tools(tools: list[Any]) -> list[rac.Tool]:
    """The RAC view of CrewAI tools."""
    return [as_rac_tool(t) for t in tools]
