"""The calls one model turn started, as one parallel batch.

A model asking for several tool calls in one message expects them to run together; a
framework runs them in a thread pool or ``asyncio.gather``. When one of them fails for good and
the run is rolled back, a sibling still running is undone when it finishes, and (with a core
that takes ``batch=``) a sibling not started yet is refused instead of run. The adapter names
the batch from the framework's data (the id of the model message that issued the calls) and
sends every call through :func:`execute` / :func:`aexecute` with that key.
"""

from __future__ import annotations

import inspect
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from rac.adapters.delegation import note
from rac.adapters.resumed import replayed
from rac.adapters.routing import AsyncInvoke as AsyncInvoker
from rac.adapters.routing import Invoke as Invoker
from rac.run import CallOutcome, Run


def supports_batches() -> bool:
    """True if this core's ``Run.execute`` takes ``batch=`` (refusing a batch's calls that had
    not started when a rollback of the run began)."""
    return _BATCHES


_BATCHES = "batch" in inspect.signature(Run.execute).parameters


def batch_key(*parts: Hashable) -> Hashable | None:
    """The key of the batch identified by ``parts`` (e.g. the thread and the id of the model
    message that issued the calls); None when every part is None (no batch known)."""
    if all(p is None for p in parts):
        return None
    return parts[0] if len(parts) == 1 else tuple(parts)


def execute(run: Run, name: str, args: dict[str, Any], invoke: Invoker, *,
            agent_id: str | None = None, batch: Hashable | None = None,
            call_id: str | None = None) -> CallOutcome:
    """``run.execute`` for one call of the batch ``batch`` (None: a call of its own);
    ``call_id`` is the framework's id of the call (see :attr:`rac.Record.call_id`). In a run
    reopened after a crash (:func:`rac.adapters.resumed.reopen`), a call the crashed process
    made gets its logged outcome without running again."""
    outcome = replayed(run, name, args, agent_id)
    if outcome is None:
        if batch is not None and _BATCHES:
            outcome = run.execute(name, args, invoke, agent_id=agent_id, call_id=call_id,
                                  batch=batch)  # type: ignore[call-arg, unused-ignore]
        else:
            outcome = run.execute(name, args, invoke, agent_id=agent_id, call_id=call_id)
    note(outcome)  # a delegating call around this one tells its own model too
    return outcome


async def aexecute(run: Run, name: str, args: dict[str, Any], ainvoke: AsyncInvoker, *,
                   agent_id: str | None = None, batch: Hashable | None = None,
                   call_id: str | None = None) -> CallOutcome:
    """Async :func:`execute`."""
    outcome = replayed(run, name, args, agent_id)
    if outcome is None:
        if batch is not None and _BATCHES:
            outcome = await run.aexecute(name, args, ainvoke, agent_id=agent_id,
                                         call_id=call_id,
                                         batch=batch)  # type: ignore[call-arg, unused-ignore]
        else:
            outcome = await run.aexecute(name, args, ainvoke, agent_id=agent_id,
                                         call_id=call_id)
    note(outcome)
    return outcome


@dataclass(frozen=True)
class Batch:
    """The calls of one model turn in ``run``: ``Batch(run, key).execute(...)`` for each."""

    run: Run
    key: Hashable | None

    def execute(self, name: str, args: dict[str, Any], invoke: Invoker, *,
                agent_id: str | None = None, call_id: str | None = None) -> CallOutcome:
        """:func:`execute` in this batch."""
        return execute(self.run, name, args, invoke, agent_id=agent_id, batch=self.key,
                       call_id=call_id)

    async def aexecute(self, name: str, args: dict[str, Any], ainvoke: AsyncInvoker, *,
                       agent_id: str | None = None, call_id: str | None = None) -> CallOutcome:
        """:func:`aexecute` in this batch."""
        return await aexecute(self.run, name, args, ainvoke, agent_id=agent_id, batch=self.key,
                              call_id=call_id)
