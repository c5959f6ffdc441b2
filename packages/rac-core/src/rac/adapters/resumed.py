"""A framework's own persistence resuming a run after its process died: the same RAC run goes on.

Frameworks save their state and resume from it in a new process (LlamaIndex's ``Context``
snapshots, CrewAI's ``@persist``, a checkpointer). The resumed framework does again some of what
the crashed process had done: it re-runs steps that were under way when the state was saved, so
it asks for tool calls that already happened. Opened as a new run, those calls would happen
twice, and a later rollback would undo only the new ones while saying the world is back.

An adapter saves the RAC run's id with the framework's state (:data:`RUN_ID_KEY`) and, when the
framework resumes from that state, calls :func:`reopen`: the crashed run is claimed (only when
nobody works on it any more, see :func:`rac.recovery.ownership`) and rebuilt from the log, and
it is the run the resumed framework's calls join. Through :func:`rac.adapters.execute` /
:func:`rac.adapters.aexecute` (what every adapter calls), a call the log holds as completed
(same agent, tool and arguments) gets its logged result without
the tool running again; a call that was under way when the process died (an intent with no
outcome) is not run again either: it stays in doubt, the model is told so, and the run is not
reported completed (a rollback settles it by its lookup or compensates it from its arguments;
otherwise ``rac recover`` or a person does). The replay lasts until the resumed run's first
call the log does not hold.

A run that had finished when the state is resumed (rolled back, say, while a human-in-the-loop
step was paused and the handler cancelled) is not reopened: :func:`reopen` returns ``None`` and
:func:`finished_notice` gives the text the model must hear before anything else.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rac.dependencies import first_result_id
from rac.errors import RACError
from rac.events import emit
from rac.leases import claim
from rac.models import Record, RecordKind, RecordStatus, RunStatus
from rac.run import CallOutcome, Run
from rac.serialize import store_value

if TYPE_CHECKING:
    from rac.engine import RAC

#: The key under which adapters save the RAC run id in a framework's persisted state.
RUN_ID_KEY = "rac_run_id"


@dataclass
class _Replay:
    """What the crashed process of a reopened run had done, to answer the resumed calls."""

    #: (agent, tool, stored args) -> completed records not answered yet, oldest first
    done: dict[Hashable, list[Record]] = field(default_factory=dict)
    #: (agent, tool, stored args) -> records of calls under way when the process died
    doubt: dict[Hashable, list[Record]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


_REPLAYS: weakref.WeakKeyDictionary[Run, _Replay] = weakref.WeakKeyDictionary()
#: run -> what the model must hear before any call of the run runs (see :func:`tell_first`)
_NOTICES: weakref.WeakKeyDictionary[Run, str] = weakref.WeakKeyDictionary()
_NOTICE_LOCK = threading.Lock()


def _key(run: Run, agent_id: str | None, tool: str, args: Any) -> Hashable:
    return (agent_id or run.agent_id, tool,
            repr(store_value(dict(args), run.engine.max_value_chars)))


def reopen(engine: RAC, run_id: str, *, lease_seconds: float | None = None,
           completed: bool = False, replay_completed: bool = True) -> Run | None:
    """The unfinished run ``run_id`` of ``engine``'s log, reopened in this process to go on
    where a framework's saved state resumes it (enter it as the run of the resumed work); None
    when the log has no such run or the run is finished (see :func:`finished_notice`).
    ``completed``: a ``completed`` run is reopened too (an adapter that marks a run completed
    after each call, whose framework's state shows the work was cut short between two calls:
    the resumed calls are the same work, and a later failure must undo the earlier ones).
    ``replay_completed=False``: no completed call answers a call again (:func:`replayed`); the
    resumed work is new work of the same run (a framework's pause resumed past the paused
    step), whose reads must not get the answers logged before the pause.

    Raises:
        rac.RACError: another live process works on the run (or holds its lease): two
            processes never carry one run on.
    """
    from rac.recovery import UNFINISHED, ownership  # recovery imports the run package

    info = engine.store.get_run(run_id)
    if info is None or not (info.status in UNFINISHED
                            or (completed and info.status is RunStatus.COMPLETED)):
        return None
    if info.status is RunStatus.COMPENSATING:  # its rollback was cut short: finish it first
        engine.recover([run_id], lease_seconds=lease_seconds or engine.leases.lease_seconds)
        return None
    who = ownership(engine, info, engine.clock.now())
    if not (who.free or who.state in ("self", "local")):
        raise RACError(f"run {run_id} cannot be carried on here: {who.reason}")
    if not claim(engine, info, lease_seconds=lease_seconds):
        raise RACError(f"run {run_id} was claimed by another process first; not carrying it on")
    info = engine.store.get_run(run_id)
    assert info is not None  # claimed a moment ago
    records = engine.store.get_records(run_id)
    run = Run.from_log(engine, info, records)
    run.log.take_over(engine.owner, engine.leases.lease_seconds if lease_seconds is None
                      else lease_seconds)
    replay = _Replay()
    with run.lock:
        for rec in records:
            if rec.kind is not RecordKind.ACTION or rec.alternative_of is not None:
                continue
            key = (rec.agent_id, rec.tool, repr(rec.args))
            done = rec if rec.status is RecordStatus.COMPLETED else next(
                (a for a in records if a.alternative_of == rec.seq
                 and a.status is RecordStatus.COMPLETED), None)
            if done is not None:
                replay.done.setdefault(key, []).append(done)
            elif rec.status in (RecordStatus.PENDING, RecordStatus.IN_DOUBT):
                if rec.status is RecordStatus.PENDING:
                    run.log.update(rec, status=RecordStatus.IN_DOUBT, note="in_doubt",
                                   error="in doubt: the process running this call stopped "
                                         "before its outcome was written")
                run.note_interrupted(rec.seq)
                replay.doubt.setdefault(key, []).append(run.log.records[rec.seq])
    if not replay_completed:
        replay.done.clear()
    _REPLAYS[run] = replay
    emit("rac.run", run_id=run_id, status="reopened", owner=engine.owner,
         replayable=sum(map(len, replay.done.values())),
         in_doubt=sum(map(len, replay.doubt.values())))
    return run


def replayed(run: Run, name: str, args: Any, agent_id: str | None) -> CallOutcome | None:
    """What a call of a reopened run gets without running: the logged result of the same call
    the crashed process completed, or a refusal for one it left in doubt; None for a new call
    (it runs as usual). A resumed framework re-runs what was under way when its state was
    saved, sometimes more than once (LlamaIndex delivers a saved in-progress tool call again
    with its queued event), so a logged call answers every call like it until the run's first
    new call, which ends the replay: from then on the framework has caught up, and a call is
    the model's new request. The first call of a run given a
    notice (:func:`tell_first`) is refused with it instead."""
    if _NOTICES:
        with _NOTICE_LOCK:
            notice = _NOTICES.pop(run, None)
        if notice is not None:
            return CallOutcome(False, name, 0, refused=True, message=(
                f"{notice} Not run: {name}, asked for before you knew this; ask for it again "
                "if it is still wanted."))
    replay = _REPLAYS.get(run)
    if replay is None:
        return None
    key = _key(run, agent_id, name, args)
    with replay.lock:
        done = replay.done.get(key)
        if done:
            rec = done[0]
            return CallOutcome(True, rec.tool, rec.seq, result=rec.result, value=rec.result)
        doubt = replay.doubt.get(key)
        if doubt:
            rec = doubt[0]
            return CallOutcome(
                False, rec.tool, rec.seq, refused=True,
                message=(f"RAC: not run again: {name} was under way when the process running "
                         f"this run stopped, and RAC cannot tell whether it happened (run "
                         f"{run.run_id}, #{rec.seq}). Its effect may be live; do not assume "
                         "either way, and tell the user."))
        del _REPLAYS[run]  # a new call: the resumed framework caught up, the replay is over
    return None


def tell_first(run: Run, text: str) -> None:
    """Make ``text`` the answer of the next call of ``run``, which is refused (never runs):
    the model hears it before anything of the run happens (a paused step resumed after its
    run was rolled back: promise 7). Goes through :func:`rac.adapters.execute`."""
    with _NOTICE_LOCK:
        _NOTICES[run] = text


def finished_notice(engine: RAC, run_id: str) -> str | None:
    """What the model must hear first when a framework resumes saved state whose RAC run was
    rolled back while the state waited (the save-cancel-resume pattern of a human-in-the-loop
    pause): None when the log has no such run, or it is unfinished or completed."""
    info = engine.store.get_run(run_id)
    if info is None or info.status not in (RunStatus.COMPENSATED, RunStatus.NEEDS_ATTENTION,
                                           RunStatus.RESOLVED):
        return None
    undone = [r for r in engine.store.get_records(run_id)
              if r.kind is RecordKind.ACTION and r.status is RecordStatus.COMPENSATED]
    live = [r for r in engine.store.get_records(run_id)
            if r.kind is RecordKind.ACTION and r.status in (
                RecordStatus.COMPENSATION_FAILED, RecordStatus.IN_DOUBT)]
    text = (f"RAC: while this work was paused, its run {run_id} ended {info.status}. ")
    if undone:
        text += "Undone, newest first: " + ", ".join(
            _named(r) for r in sorted(undone, key=lambda r: -r.seq)) + ". "
    if live:
        text += "MAY STILL BE LIVE: " + ", ".join(_named(r) for r in live) + ". "
    if info.status is RunStatus.COMPENSATED:
        text += ("Nothing done before the pause stands: replan from here (ask again for what "
                 "is still wanted) or tell the user.")
    return text


def continue_run(engine: RAC, run_id: str, *, completed: bool = False) -> Run | None:
    """The run a framework's saved state resumed in this process goes on with, the state
    carrying ``run_id``: the crashed run, reopened (see :func:`reopen`, which ``completed`` is
    passed to); or, when that run was rolled back while the state waited, a new run whose
    first call tells the model what was undone (see :func:`finished_notice`); None when the
    log has no such unfinished or rolled-back run (a completed one, unless ``completed``: the
    resumed work opens a run of its own).

    Raises:
        rac.RACError: another live process works on the run (see :func:`reopen`).
    """
    reopened = reopen(engine, run_id, completed=completed)
    if reopened is not None:
        return reopened
    notice = finished_notice(engine, run_id)
    if notice is None:
        return None
    fresh = engine.run()
    tell_first(fresh, notice)
    return fresh


def _named(rec: Record) -> str:
    ref = first_result_id(rec.result)
    return f"{rec.tool} {ref}" if ref is not None else rec.tool


__all__ = ["RUN_ID_KEY", "continue_run", "finished_notice", "reopen", "replayed", "tell_first"]
