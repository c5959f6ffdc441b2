"""One RAC run per kickoff: the crew's (or agent's) entry points open and close the run.

``kickoff``/``akickoff`` of an enabled crew are replaced on the instance by versions that open a
run (agent id = the crew's name, records carry the calling agent's role), make the crew's tools
callable by RAC for compensations and alternatives, and scope RAC's CrewAI hooks to the
kickoff (:mod:`rac_crewai.caller`). ``kickoff_async`` and streaming go through these; ``copy``
is replaced so the copies ``kickoff_for_each`` makes are enabled too, each input getting a run
of its own.

An entry point called while a run of the same engine is open (``with engine.run():`` around a
Flow, a crew kicked off from another crew's tool) joins that run and adds its tools to it: the
run can then undo this crew's calls when a later step fails, and a failure here undoes the
earlier steps too.

When RAC rolled back and CrewAI's ``tool_failure_policy="raise"`` then stopped the crew, the
error leaves ``kickoff`` after the compensations ran, and the run is not rolled back twice; a
hook aborting the run is control flow and rolls nothing back. Any other exception leaving
``kickoff`` rolls the run back first (the core's run semantics) when this kickoff opened the
run; a joined run is the opener's to close.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from crewai.hooks.dispatch import HookAborted, InterceptionPoint
from crewai.tools.tool_failure import ToolExecutionFailedError

import rac
from rac.adapters import RunScope, open_or_join
from rac.adapters.resumed import tell_first
from rac.models import RunStatus
from rac_crewai.caches import cover, forget
from rac_crewai.caller import crew_hooks
from rac_crewai.results import RUN_ID_KEY
from rac_crewai.tool_table import as_rac_tool

R = TypeVar("R")
Prepare = Callable[[], tuple[str, list[rac.Tool]]]
#: The (role, tools) of each agent of an entry point, offered to the run as that agent's.
Members = Callable[[], list[tuple[str, list[rac.Tool]]]]
#: An execution-scoped CrewAI hook: where it runs and the function.
Hook = tuple[InterceptionPoint, Callable[[Any], Any]]


class CrewRefused(HookAborted):
    """A crew started inside an enabled Flow could not be put under RAC (a compensator or
    alternative it declares is missing): the Flow stops and its run is rolled back, since it is
    not CrewAI's control flow but a failure."""


#: Attribute of an exception that left a Flow method's scope, which rolled back what the
#: method did: the id of the run (see :func:`rac_crewai.flows.scope_methods`).
ROLLED_BACK_ATTR = "_rac_crewai_rolled_back_in"


def mark_rolled_back(err: BaseException, run: rac.Run) -> None:
    """Note that the scope ``err`` left was rolled back for it: the run it then leaves is not
    rolled back again."""
    try:
        setattr(err, ROLLED_BACK_ATTR, run.run_id)
    except AttributeError:  # an exception type with __slots__: the run is rolled back
        pass


def settled_by_rac(run: rac.Run, err: BaseException) -> bool:
    """True if ``err`` needs no rollback as it leaves the kickoff: CrewAI stopping on a failure
    RAC already rolled back (``tool_failure_policy="raise"``), with nothing done in the run
    since, an exception a Flow method's scope already rolled back for (per-method scopes), or
    a hook aborting the run (control flow)."""
    if getattr(err, ROLLED_BACK_ATTR, None) == run.run_id:
        return True
    if isinstance(err, HookAborted):
        return not isinstance(err, CrewRefused)
    if not isinstance(err, ToolExecutionFailedError):
        return False
    details = err.record.failure.details
    return (details.get(RUN_ID_KEY) == run.run_id
            and run.status in (RunStatus.COMPENSATED, RunStatus.NEEDS_ATTENTION))


def _never() -> bool:
    return False


def join(run: rac.Run, tools: list[rac.Tool]) -> None:
    """Make ``tools`` callable by ``run`` (a run this kickoff joined: the opener gave it only
    its own tools). A tool the run already holds under the same name keeps its place."""
    missing = [t for t in tools if run.tool(t.name) is None]
    if missing:
        run.add_tools(missing)


class ReopeningScope(RunScope):
    """A :class:`rac.adapters.RunScope` that, opening a run, first asks ``reopen()`` for a run
    to continue (an abandoned run of a Flow resumed from its persisted state), and opens a new
    one only when it gives None."""

    def __init__(self, engine: rac.RAC, *, reopen: Callable[[], rac.Run | None],
                 **kw: Any) -> None:
        super().__init__(engine, **kw)
        self._reopen = reopen

    def _enter(self) -> tuple[rac.Run, bool]:
        if self.engine.current_run() is None:
            run = self._reopen()
            if run is not None:
                if self.tools:
                    run.add_tools(self.tools, agent_id=self.agent_id)
                self.run, self.opened = run, True
                return run, True
        return super()._enter()


def _scope(engine: rac.RAC, agent_id: str, tools: list[rac.Tool],
           run_id: Callable[[], str | None] | None,
           reopen: Callable[[], rac.Run | None] | None) -> RunScope:
    kw: dict[str, Any] = {"agent_id": agent_id, "tools": tools, "settled": settled_by_rac,
                          "run_id": run_id() if run_id else None}
    if reopen is None:
        return open_or_join(engine, **kw)
    return ReopeningScope(engine, reopen=reopen, **kw)


def join_members(run: rac.Run, members: Members | None) -> None:
    """Offer each agent's tools to ``run`` as that agent's (its records carry its role): two
    agents of one run, each with a tool of the same name (two vendors' systems), have each
    call undone through the agent's own tool, not the first of that name the run was given."""
    for role, tools in members() if members is not None else ():
        if tools:
            run.add_tools(tools, agent_id=role)


def in_run(engine: rac.RAC, method: Callable[..., R], prepare: Prepare,
           bypass: Callable[[], bool] = _never, *, hooks: Sequence[Hook] = (),
           run_id: Callable[[], str | None] | None = None,
           members: Members | None = None,
           caches: Callable[[], list[Any]] | None = None,
           reopen: Callable[[], rac.Run | None] | None = None,
           notice: str | None = None) -> Callable[..., R]:
    """``method`` running inside a run of ``engine`` (``prepare`` gives the run's agent id and
    the tools it may call), joining one already open and adding the tools to it. While
    ``bypass()`` is true the method runs as it is: a streaming kickoff only sets up a stream,
    and calls ``kickoff`` again to do the work. ``hooks`` are more (point, hook) pairs scoped
    to the call; ``run_id()`` names a run the call opens (None: a fresh id); ``members()``
    gives (role, tools) of each agent, offered as that agent's (:func:`join_members`);
    ``caches()`` the CrewAI tool caches the call may answer from, emptied on each rollback of
    the run (:mod:`rac_crewai.caches`); ``reopen()`` a run to carry on instead of opening a
    new one (None: open one); ``notice`` what the run's first call is answered with instead of
    running (:func:`rac.adapters.resumed.tell_first`), in a run the call opens."""

    @functools.wraps(method)
    def scoped(*args: Any, **kwargs: Any) -> R:
        if bypass():
            return method(*args, **kwargs)
        agent_id, tools = prepare()
        scope = _scope(engine, agent_id, tools, run_id, reopen)
        try:
            with scope as run, crew_hooks(*hooks):
                join(run, tools)
                join_members(run, members)
                cover(run, caches() if caches is not None else [])
                if notice and scope.opened:
                    tell_first(run, notice)
                return method(*args, **kwargs)
        finally:
            if scope.opened and scope.run is not None:
                forget(scope.run.run_id)

    return scoped


def in_async_run(engine: rac.RAC, method: Callable[..., Awaitable[R]], prepare: Prepare,
                 bypass: Callable[[], bool] = _never, *, hooks: Sequence[Hook] = (),
                 run_id: Callable[[], str | None] | None = None,
                 members: Members | None = None,
                 caches: Callable[[], list[Any]] | None = None,
                 reopen: Callable[[], rac.Run | None] | None = None,
                 notice: str | None = None) -> Callable[..., Awaitable[R]]:
    """Async :func:`in_run`."""

    @functools.wraps(method)
    async def scoped(*args: Any, **kwargs: Any) -> R:
        if bypass():
            return await method(*args, **kwargs)
        agent_id, tools = prepare()
        scope = _scope(engine, agent_id, tools, run_id, reopen)
        try:
            async with scope as run:
                with crew_hooks(*hooks):
                    join(run, tools)
                    join_members(run, members)
                    cover(run, caches() if caches is not None else [])
                    if notice and scope.opened:
                        tell_first(run, notice)
                    return await method(*args, **kwargs)
        finally:
            if scope.opened and scope.run is not None:
                forget(scope.run.run_id)

    return scoped


def rac_tools(tools: list[Any]) -> list[rac.Tool]:
    """The RAC view of CrewAI tools."""
    return [as_rac_tool(t) for t in tools]
