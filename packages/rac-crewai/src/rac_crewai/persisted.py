"""Flows with CrewAI's ``@persist``: a kickoff that restores a saved state continues that
state's run.

``@persist`` saves a Flow's state (under ``state.id``) after each method, and a later
``flow.kickoff(inputs={"id": ...})``, in another process after a crash say, restores it and runs
the Flow's methods again. Each kickoff of an enabled Flow being a new run, the resumed Flow
would open a second run and book again what the crashed process booked, while the crashed run
stays ``running`` with its bookings, undone by nobody.

So the run of a kickoff of a persisted Flow (one with a ``persistence`` backend) is named after
its state: ``flow-<state id>``. A kickoff that finds that run left ``running`` by a process that
is gone continues it (:func:`rac.recovery.continue_run`): its first calls replay the crashed
run's log (each gets the logged result back; the booking is not made again), the calls after
run as usual and are appended to the same run, and a later failure undoes what both processes
did. A resumed Flow that asks for another call than the one the log holds at that point fails
with :class:`rac.errors.SequenceMismatchError` rather than guess; recover the run
(``engine.recover([run_id])`` or ``rac recover``) to undo it instead. A run of that state that
finished (completed, compensated) is left as it is: the kickoff opens ``flow-<state id>-2``
(then ``-3``...). A run of it left mid-rollback must be recovered first, and one another live
process works on is not touched: the kickoff raises :class:`rac.RACError` naming it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import rac
from rac.events import emit
from rac.leases import claim
from rac.models import RunStatus
from rac.recovery import UNFINISHED, continue_run, is_abandoned

#: How many finished runs of one state a kickoff looks past for a free run id.
MAX_RUNS_PER_STATE = 10_000


@dataclass(frozen=True)
class Plan:
    """The run a kickoff of a persisted Flow uses: ``run_id`` to open (None: a fresh id), or
    ``reopened``, a crashed run continued."""

    run_id: str | None = None
    reopened: rac.Run | None = None


def state_id(flow: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    """The id of the state a kickoff of ``flow`` with these arguments runs on, if the Flow
    persists its state (None otherwise, and for a fork, which gets a fresh state id)."""
    if getattr(flow, "persistence", None) is None or kwargs.get("restore_from_state_id"):
        return None
    inputs = kwargs.get("inputs", args[0] if args else None)
    if isinstance(inputs, Mapping) and inputs.get("id"):
        return str(inputs["id"])
    found = getattr(flow, "flow_id", None)
    return str(found) if found else None


def plan(engine: rac.RAC, flow: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Plan:
    """The run of a kickoff of ``flow`` (see the module). Inside an open run the kickoff joins
    it: no plan."""
    if engine.current_run() is not None:
        return Plan()
    sid = state_id(flow, args, kwargs)
    if sid is None:
        return Plan()
    base = f"flow-{sid}"
    for n in range(1, MAX_RUNS_PER_STATE + 1):
        run_id = base if n == 1 else f"{base}-{n}"
        info = engine.store.get_run(run_id)
        if info is None:
            return Plan(run_id=run_id)
        if info.status not in UNFINISHED:
            continue  # finished: a later kickoff of the state is a run of its own
        if not is_abandoned(engine, info, engine.clock.now()):
            raise rac.RACError(
                f"run {run_id} of Flow state {sid!r} is being worked on by {info.owner}: not "
                "kicking the Flow off on the same state beside it")
        if info.status is not RunStatus.RUNNING:
            raise rac.RACError(
                f"run {run_id} of Flow state {sid!r} was left {info.status} by a process that "
                f"is gone: recover it first (engine.recover([{run_id!r}]) or "
                f"`rac recover --run {run_id}`), then kick the Flow off again")
        # A dead process's lease need not run out first (rac.leases.claim); continue_run's
        # own claim then finds the run this engine's.
        if not claim(engine, info):
            raise rac.RACError(f"run {run_id} of Flow state {sid!r} was claimed by another "
                               "process first: not kicking the Flow off beside it")
        run = continue_run(engine, run_id)
        emit("rac_crewai.flow_resumed", run_id=run_id, state_id=sid,
             logged_calls=len(run.records()))
        return Plan(run_id=run_id, reopened=run)
    raise rac.RACError(f"Flow state {sid!r} has {MAX_RUNS_PER_STATE} runs already")
