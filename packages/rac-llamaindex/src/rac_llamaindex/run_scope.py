"""One RAC run per ``run()`` of an enabled agent or agent workflow (one workflow handler).

``run()`` starts the workflow in the background and returns a
:class:`~workflows.handler.WorkflowHandler`. The enabled ``run()`` opens a RAC run in a copy of
the caller's context and starts the workflow inside that copy, so every step task the workflow
creates (they copy the context they start from) sees the run as :func:`rac.current_run`: the
tools, and anything the steps call under RAC (``engine.wrap``-ed functions of a
``CodeActAgent``'s executor, ``run.acall``), join it. The caller's own context is not changed.

The run closes when the workflow ends, by the core's rules: a workflow that ends normally
completes it; one that raises or is cancelled rolls it back first (unless the failure that
stopped it was already rolled back). The handler is given the class
:class:`RACWorkflowHandler`, which waits for that close before it hands out the result or the
error, so after ``await handler`` the log says how the run ended. A ``run()`` called while a
run of the same engine is open (``async with engine.run()``, or a workflow step of an enabled
agent) joins that run and leaves closing it to its owner.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable
from typing import Any, cast

from llama_index.core.workflow import StopEvent
from llama_index.core.workflow.handler import WorkflowHandler

import rac
from rac.adapters.resumed import RUN_ID_KEY, continue_run
from rac.events import emit
from rac_llamaindex.tool_table import CALLING, RUN_CONTEXTS

#: Gives the engine an enabled target uses now (enabling again with another engine switches it).
EngineOf = Callable[[], rac.RAC]


class RACWorkflowHandler(WorkflowHandler):
    """The handler of an enabled agent's or workflow's ``run()``: a ``WorkflowHandler`` in every
    respect (stream, await, cancel, send events), which also knows its RAC run and hands out the
    workflow's result or error only once that run is closed."""

    #: The RAC run of this handler's workflow run.
    rac_run: rac.Run
    _rac_closed: asyncio.Future[None]

    async def stop_event_result(self) -> StopEvent:
        """The workflow's stop event, once the workflow ended and its RAC run is closed."""
        try:
            return await super().stop_event_result()
        finally:
            await asyncio.shield(self._rac_closed)


def rac_run_of(handler: WorkflowHandler) -> rac.Run | None:
    """The RAC run of a handler returned by an enabled agent's or workflow's ``run()``; None for
    a handler that joined an outer run (that run is :func:`rac.current_run` there) or was not
    made by RAC."""
    return handler.rac_run if isinstance(handler, RACWorkflowHandler) else None


def _start(run: rac.Run, method: Callable[..., WorkflowHandler], args: tuple[Any, ...],
           kwargs: dict[str, Any]) -> WorkflowHandler:
    """Enter ``run`` and start the workflow (called inside the copied context)."""
    run.__enter__()
    try:
        return method(*args, **kwargs)
    except BaseException as e:  # the workflow did not start: close the run as the core would
        run.__exit__(type(e), e, e.__traceback__)
        raise


async def _close_when_done(run: rac.Run, handler: WorkflowHandler) -> None:
    """Wait for the workflow to end, then close ``run`` as leaving its block would."""
    error: BaseException | None = None
    try:
        await WorkflowHandler.stop_event_result(handler)
    except BaseException as e:  # noqa: BLE001 - failed or cancelled: the run rolls back
        error = e
    await run.__aexit__(type(error) if error is not None else None, error,
                        error.__traceback__ if error is not None else None)


def offer(run: rac.Run, tools: dict[str, rac.ToolSet]) -> None:
    """Make each agent's tools callable by ``run``, as that agent's (see
    :meth:`rac.Run.add_tools`)."""
    for agent, tool_set in tools.items():
        run.add_tools(tool_set, agent_id=agent)


def saved_run_id(ctx: Any) -> str | None:
    """The RAC run id a restored ``Context`` carries (saved in its state by the enabled
    agents' steps, see :mod:`rac_llamaindex.turns`), when it resumes a workflow mid-run; None
    for a fresh or reused context. The state store's read is lockless: it is read here, before
    the workflow starts, without the event loop."""
    if ctx is None or not getattr(ctx, "is_running", False):
        return None
    try:
        pending = ctx.store.get(RUN_ID_KEY, default=None)
    except Exception:  # noqa: BLE001 - a store RAC cannot read: nothing to resume
        return None
    try:
        pending.send(None)
    except StopIteration as done:
        return done.value if isinstance(done.value, str) else None
    except Exception:  # noqa: BLE001
        return None
    pending.close()  # a store that waits (a remote one): not read here
    return None


def _resumed_run(engine: rac.RAC, ctx: Any) -> rac.Run | None:
    """The run a restored ``Context`` goes on with (see
    :func:`rac.adapters.resumed.continue_run`); None for a context that resumes nothing."""
    run_id = saved_run_id(ctx)
    return continue_run(engine, run_id) if run_id is not None else None


def scoped_run(method: Callable[..., WorkflowHandler], engine_of: EngineOf,
               agent_id: Callable[[], str], tools: Callable[[], dict[str, rac.ToolSet]]
               ) -> Callable[..., WorkflowHandler]:
    """``method`` (a bound ``run``) making each call one RAC run, or joining an open one.

    ``agent_id`` gives the run's agent id, ``tools`` the tools RAC may call in it, by agent
    (the target's own, for compensations and alternatives); both are read at each call."""

    @functools.wraps(method)
    def run(*args: Any, **kwargs: Any) -> WorkflowHandler:
        engine = engine_of()
        current = engine.current_run()
        if current is not None:
            offer(current, tools())
            calling = CALLING.get()
            if calling is not None:  # an agent used as a tool, not declared a delegation
                emit("rac_llamaindex.delegation", level="warning", run_id=current.run_id,
                     tool=calling, agent=agent_id(), status="undeclared",
                     error=f"{calling!r} runs the agent {agent_id()!r}: name it in "
                           f"enable_rac(..., delegates=[{calling!r}]), or the run reports "
                           f"it live after a rollback")
            joined = method(*args, **kwargs)
            RUN_CONTEXTS[current] = joined.ctx
            return joined
        own = _resumed_run(engine, kwargs.get("ctx")) or engine.run(agent_id=agent_id())
        offer(own, tools())
        scope = contextvars.copy_context()
        handler = scope.run(_start, own, method, args, kwargs)
        RUN_CONTEXTS[own] = handler.ctx
        closed = asyncio.get_running_loop().create_task(_close_when_done(own, handler),
                                                        context=scope)
        handler.__class__ = RACWorkflowHandler
        scoped = cast(RACWorkflowHandler, handler)
        scoped.rac_run = own
        scoped._rac_closed = closed
        return scoped

    return run
