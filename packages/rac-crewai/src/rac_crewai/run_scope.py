"""One RAC run per kickoff: the crew's (or agent's) entry points open and close the run.

``kickoff``/``akickoff`` of an enabled crew are replaced on the instance by versions that open a
run (agent id = the crew's name, records carry the calling agent's role), make the crew's tools
callable by RAC for compensations and alternatives, and track the calling agent with a hook
scoped to the run. ``kickoff_async`` and streaming go through these; ``copy`` is replaced so the
copies ``kickoff_for_each`` makes are enabled too, each input getting a run of its own. An entry
point called while a run of the same engine is open joins that run.

When RAC rolled back and CrewAI's ``tool_failure_policy="raise"`` then stopped the crew, the
error leaves ``kickoff`` after the compensations ran, and the run is not rolled back twice.
Any other exception leaving ``kickoff`` rolls the run back first (the core's run semantics).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, NoReturn, TypeVar

from crewai.tools.tool_failure import ToolExecutionFailedError

import rac
from rac.models import RunStatus
from rac_crewai.caller import caller_tracking
from rac_crewai.results import RUN_ID_KEY
from rac_crewai.tool_table import as_rac_tool

R = TypeVar("R")
Prepare = Callable[[], tuple[str, list[rac.Tool]]]


def settled_by_rac(run: rac.Run, err: ToolExecutionFailedError) -> bool:
    """True if ``err`` is CrewAI stopping on a failure RAC already rolled back, with nothing
    done in the run since."""
    details = err.record.failure.details
    return (details.get(RUN_ID_KEY) == run.run_id
            and run.status in (RunStatus.COMPENSATED, RunStatus.NEEDS_ATTENTION))


class _SettledStop:
    """Lets a ``ToolExecutionFailedError`` that RAC already settled pass the run's exit without
    a second rollback; :meth:`reraise` raises it once the run is closed."""

    def __init__(self, run: rac.Run) -> None:
        self.run = run
        self.escaped: ToolExecutionFailedError | None = None

    def __enter__(self) -> _SettledStop:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool:
        if isinstance(exc, ToolExecutionFailedError) and settled_by_rac(self.run, exc):
            self.escaped = exc
            return True
        return False

    def reraise(self) -> NoReturn:
        assert self.escaped is not None
        raise self.escaped


def _never() -> bool:
    return False


def in_run(engine: rac.RAC, method: Callable[..., R], prepare: Prepare,
           bypass: Callable[[], bool] = _never) -> Callable[..., R]:
    """``method`` running inside a run of ``engine`` (``prepare`` gives the run's agent id and
    the tools it may call). While ``bypass()`` is true the method runs as it is: a streaming
    kickoff only sets up a stream, and calls ``kickoff`` again to do the work."""

    @functools.wraps(method)
    def scoped(*args: Any, **kwargs: Any) -> R:
        if bypass() or engine.current_run() is not None:
            return method(*args, **kwargs)
        agent_id, tools = prepare()
        with engine.run(agent_id=agent_id, tools=tools) as run, caller_tracking(), \
                _SettledStop(run) as stop:
            return method(*args, **kwargs)
        stop.reraise()

    return scoped


def in_async_run(engine: rac.RAC, method: Callable[..., Awaitable[R]], prepare: Prepare,
                 bypass: Callable[[], bool] = _never) -> Callable[..., Awaitable[R]]:
    """Async :func:`in_run`."""

    @functools.wraps(method)
    async def scoped(*args: Any, **kwargs: Any) -> R:
        if bypass() or engine.current_run() is not None:
            return await method(*args, **kwargs)
        agent_id, tools = prepare()
        async with engine.run(agent_id=agent_id, tools=tools) as run:
            with caller_tracking(), _SettledStop(run) as stop:
                return await method(*args, **kwargs)
        stop.reraise()

    return scoped


def rac_tools(tools: list[Any]) -> list[rac.Tool]:
    """The RAC view of CrewAI tools."""
    return [as_rac_tool(t) for t in tools]
