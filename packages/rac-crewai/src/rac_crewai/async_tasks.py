"""``async_execution=True`` tasks as parallel work of the run.

CrewAI starts the async tasks of a crew beside each other inside one kickoff (a thread each
under ``kickoff``, an asyncio task each under ``akickoff``) and waits for them at the next
synchronous task. One of them may fail for good while another is still working: RAC rolls the
run back, and the other task, which was told nothing, would go on booking into a world RAC
just reported back to how it was, with no later failure to undo it.

So each async task is a :class:`rac_crewai.caller.Group` whose batch begins when the crew
starts the task (the first task of a block of async tasks started together): once a rollback
of the run begins after that, a call the task makes is
refused (it is told why, and nothing of it happens) until the task has read a rollback's report
itself; a call still running when the rollback began is undone when it returns (the core's
batch rule). Calls the task makes in a later model turn, after its own call's failure told it
what was undone, run as usual.
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from collections.abc import Coroutine
from typing import Any

import rac
from rac_crewai.caller import Group, in_group

#: Instance attribute naming the engine whose runs a task's async executions are batches of.
ASYNC_ATTR = "_rac_crewai_async_engine"
#: How many runs' open blocks of async tasks are remembered (the newest).
MEMORY = 1024

_COUNTER = itertools.count(1)
_LOCK = threading.Lock()
#: The batch key of each run's open block of async tasks, by run id.
_BLOCKS: OrderedDict[str, str] = OrderedDict()


def _start(engine: rac.RAC, task: Any) -> Group | None:
    """The group of an execution of ``task`` starting now in the engine's open run, or None
    outside a run or for a task that is not async.

    The async tasks the crew starts one after the other, before it next runs a synchronous
    task (which waits for them), are one block and share one batch, registered when the first
    of them starts: a task the crew started a moment after another task's rollback began
    (the crew's thread was slow) knows of it no more than one started before."""
    run = engine.current_run()
    if run is None:
        return None
    with _LOCK:
        if not getattr(task, "async_execution", False):
            _BLOCKS.pop(run.run_id, None)  # a synchronous task: the block before it is over
            return None
        key = _BLOCKS.get(run.run_id)
        if key is None:
            key = _BLOCKS[run.run_id] = f"crewai-async-tasks-{next(_COUNTER)}"
            while len(_BLOCKS) > MEMORY:
                _BLOCKS.popitem(last=False)
            with run.lock:
                run.batch_refusal(key, "")  # a new batch: registered at this rollback count
    return Group(key)


def scope_async_task(task: Any, engine: rac.RAC) -> None:
    """Make each async execution of ``task`` (``execute_async``, and ``aexecute_sync`` as
    ``akickoff`` starts async tasks) one :class:`~rac_crewai.caller.Group` of the open run
    (once per engine)."""
    if task.__dict__.get(ASYNC_ATTR) is engine:
        return
    cls = type(task)
    if not all(callable(getattr(cls, name, None))
               for name in ("execute_async", "execute_sync", "aexecute_sync")):
        return
    execute_async = cls.execute_async.__get__(task)
    aexecute_sync = cls.aexecute_sync.__get__(task)
    execute_sync = cls.execute_sync.__get__(task)

    def execute_sync_after_block(agent: Any = None, context: Any = None,
                                 tools: Any = None) -> Any:
        _start(engine, task)  # a synchronous task ends the block of async tasks before it
        return execute_sync(agent=agent, context=context, tools=tools)

    def execute_async_in_group(agent: Any = None, context: Any = None,
                               tools: Any = None) -> Any:
        group = _start(engine, task)
        if group is None:
            return execute_async(agent=agent, context=context, tools=tools)
        with in_group(group):  # the task's thread runs in a copy of this context
            return execute_async(agent=agent, context=context, tools=tools)

    def aexecute_sync_in_group(agent: Any = None, context: Any = None,
                               tools: Any = None) -> Coroutine[Any, Any, Any]:
        group = _start(engine, task)  # now: akickoff makes the coroutine as it starts the task
        made = aexecute_sync(agent=agent, context=context, tools=tools)
        if group is None:
            return made

        async def in_its_group() -> Any:
            with in_group(group):
                return await made

        return in_its_group()

    object.__setattr__(task, ASYNC_ATTR, engine)
    object.__setattr__(task, "execute_async", execute_async_in_group)
    object.__setattr__(task, "execute_sync", execute_sync_after_block)
    object.__setattr__(task, "aexecute_sync", aexecute_sync_in_group)
