"""One CrewAI Flow as one RAC transaction: ``enable_rac(flow, ...)``.

Each ``kickoff`` / ``kickoff_async`` / ``akickoff`` of an enabled Flow is one run. Crews the
Flow's methods kick off join it, whether or not they were enabled themselves: while the Flow
runs, an execution-scoped ``execution_start`` hook guards each crew as it starts (its tools
wrapped in place, then added to the run), so a crew built inside a method
(``TripCrew().crew().kickoff()``) is covered too. A failure of any crew, or an exception of
any method, undoes what every crew of the kickoff did, newest first.

With ``method_scopes=True`` each execution of a Flow method is a nested scope of the run
instead: a crew's failure inside a method undoes only what that method did (the Flow goes on,
its other methods' effects stand), and a method that raises has its own effects undone before
the exception leaves ``kickoff``, the other methods' effects standing. A Flow that persists
its state (``@persist``) runs each kickoff in the run of its state, and a kickoff restoring the
state of a crashed process continues that process's run (:mod:`rac_crewai.persisted`). A
method paused for human feedback (CrewAI's ``HumanFeedbackPending``) is not a failure:
nothing is undone. ``resume``/``resume_async`` of a paused Flow (``Flow.from_pending(...)``,
then enabled) carry on the paused kickoff's run (:func:`rac_crewai.persisted.plan`): without
that the crews of the resumed methods ran outside any run (an enabled crew in a run of its
own, any other crew not logged at all). When the paused kickoff's run was rolled back
meanwhile (``rac undo``), the resume is a new run whose first call is refused with what was
undone, so the agent hears it before anything else.
"""

from __future__ import annotations

from typing import Any

from crewai import Crew
from crewai.flow.flow import Flow
from crewai.hooks.dispatch import InterceptionPoint

from rac import RAC, ConfigurationError, Tool
from rac_crewai.persisted import plan
from rac_crewai.run_scope import (
    CrewRefused,
    in_async_run,
    in_run,
    join,
    join_members,
    mark_rolled_back,
)

#: Instance attribute holding the engine of an enabled Flow.
FLOW_ENGINE_ATTR = "_rac_crewai_engine"
#: Instance attribute of an enabled Flow whose method executions are nested scopes.
METHOD_SCOPES_ATTR = "_rac_crewai_method_scopes"
#: The async entry points of a Flow each of which is a run. ``kickoff`` and ``resume`` run
#: ``self.kickoff_async`` / ``self.resume_async`` in a loop of their own: scoping the async one
#: covers both (``kickoff`` is scoped too, as it may also be called inside a running loop).
ASYNC_ENTRY_POINTS = ("kickoff_async", "akickoff", "resume_async")


def adopt_crews(engine: RAC) -> Any:
    """The ``execution_start`` hook that puts each crew starting inside the Flow's run under
    ``engine`` and adds its tools to the run."""
    from rac_crewai.enable import crew_roles, guard_crew_now  # enable imports this module

    def adopt(context: Any) -> None:
        crew = getattr(context, "crew", None)
        run = engine.current_run()
        if not isinstance(crew, Crew) or run is None:
            return
        try:
            tools = guard_crew_now(crew, engine)
        except ConfigurationError as e:
            raise CrewRefused(reason=f"RAC cannot guard crew {crew.name or 'crew'}: {e}") from e
        join(run, tools)
        join_members(run, lambda: crew_roles(crew))

    adopt.__qualname__ = adopt.__name__ = "rac_adopt_crews"
    return adopt


def _paused(error: BaseException) -> bool:
    """True for CrewAI's "waiting for human feedback" (a pause, not a failure)."""
    return any(cls.__name__ == "HumanFeedbackPending" for cls in type(error).__mro__)


def scope_methods(flow: Flow[Any], engine: RAC) -> None:
    """Run each method execution of ``flow`` in a nested scope of the open run (once)."""
    if flow.__dict__.get(METHOD_SCOPES_ATTR) is engine:
        return
    execute = type(flow)._execute_method.__get__(flow)

    async def _execute_method(method_name: Any, method: Any, *args: Any,
                              **kwargs: Any) -> Any:
        run = engine.current_run()
        if run is None:
            return await execute(method_name, method, *args, **kwargs)
        paused: BaseException | None = None
        try:
            async with run.scope():
                try:
                    return await execute(method_name, method, *args, **kwargs)
                except Exception as e:
                    if not _paused(e):
                        raise
                    paused = e
        except Exception as e:  # the scope rolled back what this method did
            mark_rolled_back(e, run)
            raise
        assert paused is not None  # the method neither returned nor failed: it paused
        raise paused

    object.__setattr__(flow, METHOD_SCOPES_ATTR, engine)
    object.__setattr__(flow, "_execute_method", _execute_method)


def enable_flow(flow: Flow[Any], engine: RAC, *, method_scopes: bool = False) -> Flow[Any]:
    """See :func:`rac_crewai.enable_rac`."""
    if method_scopes:
        scope_methods(flow, engine)
    if flow.__dict__.get(FLOW_ENGINE_ATTR) is engine:
        return flow
    cls = type(flow)
    hook = (InterceptionPoint.EXECUTION_START, adopt_crews(engine))

    def prepare() -> tuple[str, list[Tool]]:
        return getattr(flow, "name", None) or cls.__name__, []

    object.__setattr__(flow, FLOW_ENGINE_ATTR, engine)
    kickoff = cls.kickoff.__get__(flow)

    def persisted_kickoff(*args: Any, **kwargs: Any) -> Any:
        # a Flow restoring a persisted state continues its run (rac_crewai.persisted)
        found = plan(engine, flow, args, kwargs)
        return in_run(engine, kickoff, prepare, hooks=[hook], run_id=lambda: found.run_id,
                      reopen=lambda: found.reopened, notice=found.notice)(*args, **kwargs)

    object.__setattr__(flow, "kickoff", persisted_kickoff)
    for name in ASYNC_ENTRY_POINTS:
        if not callable(getattr(cls, name, None)):
            continue
        object.__setattr__(flow, name, _persisted_async(
            engine, flow, getattr(cls, name).__get__(flow), prepare, hook,
            inputs=name != "resume_async"))
    return flow


def _persisted_async(engine: RAC, flow: Flow[Any], method: Any, prepare: Any,
                     hook: Any, *, inputs: bool = True) -> Any:
    """``method`` of ``flow`` as a run of its state; ``inputs``: its arguments are a kickoff's
    (``inputs={"id": ...}`` names the state), else the state is the Flow's own (a resume)."""
    async def persisted_kickoff(*args: Any, **kwargs: Any) -> Any:
        found = (plan(engine, flow, args, kwargs) if inputs
                 else plan(engine, flow, (), {}, resuming=True))
        return await in_async_run(engine, method, prepare, hooks=[hook],
                                  run_id=lambda: found.run_id,
                                  reopen=lambda: found.reopened,
                                  notice=found.notice)(*args, **kwargs)

    return persisted_kickoff
