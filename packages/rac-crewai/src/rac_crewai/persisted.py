"""Flows with CrewAI's ``@persist``: a kickoff that restores a saved state continues that
state's run.

``@persist`` saves a Flow's state (under ``state.id``) after each method, and a later
``flow.kickoff(inputs={"id": ...})``, in another process after a crash say, restores it and runs
the Flow's methods again. Each kickoff of an enabled Flow being a new run, the resumed Flow
would open a second run and book again what the crashed process booked, while the crashed run
stays ``running`` with its bookings, undone by nobody.

So the run of a kickoff of a persisted Flow (one with a ``persistence`` backend) is named after
its state: ``flow-<state id>``. A kickoff that finds that run unfinished, left by a process that
is gone, carries it on (:func:`rac.adapters.resumed.reopen`): a call the crashed process
completed (same agent, tool and arguments) gets its logged result back and does not run again,
so the booking is not made twice; a call that was under way when the process died is not run
again either (it stays in doubt, and the agent is told so); the calls after that run as usual,
in the same run, and a later failure undoes what both processes did. A run of the state left
mid-rollback is recovered first. A run of the state that finished leaves it as it is: the
kickoff opens ``flow-<state id>-2`` (then ``-3``...), and if that finished run was rolled back
the Flow's first call is refused with what was undone, so the agent hears it before anything
else. A run of the state another live process works on is not touched: the kickoff raises
:class:`rac.RACError`. A ``resume`` of the Flow paused for human feedback carries on the
state's last run when it ended ``completed`` (at the pause), its calls never answered from
the log (see :func:`plan`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import rac
from rac.adapters.resumed import finished_notice, reopen
from rac.events import emit
from rac.models import RunStatus
from rac.recovery import UNFINISHED

#: How many finished runs of one state a kickoff looks past for a free run id.
MAX_RUNS_PER_STATE = 10_000


@dataclass(frozen=True)
class Plan:
    """The run a kickoff of a persisted Flow uses: ``run_id`` to open (None: a fresh id), or
    ``reopened``, a crashed run carried on."""

    run_id: str | None = None
    reopened: rac.Run | None = None
    #: what the agent hears first (the state's previous run was rolled back)
    notice: str | None = None


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


def plan(engine: rac.RAC, flow: Any, args: tuple[Any, ...], kwargs: dict[str, Any], *,
         resuming: bool = False) -> Plan:
    """The run of a kickoff of ``flow`` (see the module); ``resuming``: of a ``resume`` of the
    Flow paused for human feedback, which carries on the paused kickoff's run when that run
    (the state's last) ended ``completed`` at the pause: the resumed methods are more of the
    same work, and a failure after the resume undoes what was done before the pause too. No
    call of the resume is answered from the log (they are new calls). Inside an open run the
    kickoff joins it: no plan."""
    if engine.current_run() is not None:
        return Plan()
    sid = state_id(flow, args, kwargs)
    if sid is None:
        return Plan()
    base = f"flow-{sid}"
    previous: str | None = None
    for n in range(1, MAX_RUNS_PER_STATE + 1):
        run_id = base if n == 1 else f"{base}-{n}"
        info = engine.store.get_run(run_id)
        if info is None:
            notice = finished_notice(engine, previous) if previous is not None else None
            return Plan(run_id=run_id, notice=notice)
        paused = (resuming and info.status is RunStatus.COMPLETED
                  and engine.store.get_run(f"{base}-{n + 1}") is None)
        if info.status in UNFINISHED or paused:
            # RACError if a live process works on it
            run = reopen(engine, run_id, completed=paused, replay_completed=not paused)
            if run is not None:
                emit("rac_crewai.flow_resumed", run_id=run_id, state_id=sid)
                return Plan(run_id=run_id, reopened=run)
        previous = run_id  # finished (or just recovered): the next kickoff is a run of its own
    raise rac.RACError(f"Flow state {sid!r} has {MAX_RUNS_PER_STATE} runs already")
