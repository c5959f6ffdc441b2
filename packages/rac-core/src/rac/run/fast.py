"""The blocking call path's shortcut for the plainest successful call, next to its general
twin (:func:`rac.run.calls.call_flow`).

It applies when nothing but RAC's default plugins answers the call path's hooks
(:attr:`rac.dispatch.Hooks.defaults_only`), the run is simply running, no rollback is under
way, the tool is declared with a compensation that needs no before-image and no lookup and
is not irreversible, info events go nowhere, and the arguments and the result are plain flat dicts
(their stored copies are exact: no undo data). It then writes what the general path would
write: the same intent record, the same completed record. Anything else at any point (an
exception, a result that reports a failure, a rolled-back scope, a value that needs
redaction) goes on in the general flow from where it stands.

Why it still exists: ``python -m benchmarks.suites.core_path`` (issue 28's budget: the path
adapters take at most 0.8x the reference implementation's core path) measured the general flow
at 1.98x the reference and this path at 1.37x on 2026-12-02 21:16 UTC (2.9x and 1.5x before
that day's call plans, see ``docs/performance.md``); it goes once the general flow is at least
as fast as it. ``RAC_FAST_PATH=0``
(or ``engine.fast_path = False``) turns it off; ``tests/core/test_fast_path.py`` checks that
both paths write the same records, and ``scripts/test.sh`` runs the whole suite again with it
off.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from rac.classify import default_detect_result_error
from rac.effects import drive_sync
from rac.models import Record, RecordKind, RecordStatus, RunStatus
from rac.registry import Effect
from rac.run.attempts import Attempt, classify, read_result
from rac.run.calls import Begun, call_flow, complete
from rac.run.keys import step_key
from rac.run.outcome import CallOutcome
from rac.run.values import needed_fields
from rac.serialize import plain_copy
from rac.stores.changes import Append, UpdateRecord

if TYPE_CHECKING:
    from rac.run.run import Invoker, Run

_ACTION, _PENDING, _COMPLETED = RecordKind.ACTION, RecordStatus.PENDING, RecordStatus.COMPLETED
_UNSAFE = str(Effect.UNSAFE)


def execute_fast(run: Run, name: str, args: dict[str, Any], invoke: Invoker, *,
                 agent_id: str | None, depends_on: Iterable[int],
                 scope: str, call_id: str | None = None) -> CallOutcome | None:
    """The plainest successful call, or None when the call is not of that kind (nothing was
    written: the caller takes the general path)."""
    engine = run.engine
    registry = engine.registry
    state = run.state
    comp = registry.pairs.get(name)
    if (not engine.hooks.defaults_only or comp is None or comp.before is not None
            or name in registry.irreversible or name in registry.lookups
            or name in registry.effects or run.log.info or run.log.status is not
            RunStatus.RUNNING or state.rolling_back):
        return None
    stored_args = plain_copy(args)
    t = run.tool(name, agent_id or run.agent_id)
    if stored_args is None or t is None or (t.params is not None
                                             and engine.key_param in t.params):
        return None
    deps = list(depends_on) if depends_on else []
    if deps:  # declared dependencies: the general path checks them for a cycle
        return None
    with run.lock:
        if state.rolling_back or run.log.status is not RunStatus.RUNNING:
            return None
        seq = state.next_seq()
        now = engine.clock.now()
        inferred = state.dependencies(stored_args, owned=True)
        rec = Record(run.run_id, seq, name, _ACTION, _PENDING, agent_id or run.agent_id, scope,
                     stored_args, None, None, 1, step_key(run.key_prefix, seq, "action"),
                     sorted(set(inferred).union(deps)) if deps else inferred, None, None, True,
                     False, None, now, now, _UNSAFE, None, call_id or "")
        run.log.commit(Append(rec))  # RunLog.append minus its announcement: nobody listens
        run.log.records[seq] = rec
        state.call_began(seq, scope, None)
    try:
        raw = invoke(name, args)
    except engine.passthrough as e:
        run.interrupted(rec, e)
        raise
    except Exception as e:  # noqa: BLE001 - a failure is data for the flow
        return _general(run, name, args, invoke, rec, deps, scope, agent_id,
                        Attempt(False, None, None, e, classify(engine, name, e)), call_id)
    except BaseException as e:
        run.interrupted(rec, e)
        raise
    stored = plain_copy(raw)
    if stored is None or default_detect_result_error(raw) is not None \
            or not engine.hooks.defaults_only:  # (a plugin may have come meanwhile)
        return _general(run, name, args, invoke, rec, deps, scope, agent_id,
                        read_result(engine, name, raw), call_id)
    with run.lock:
        if state.rolling_back:
            return _general(run, name, args, invoke, rec, deps, scope, agent_id,
                            Attempt(True, raw, raw), call_id)
        state.call_succeeded_later(seq, stored, stored_args, registry.produces.get(name))
        now = engine.clock.now()
        run.log.commit(UpdateRecord(run.run_id, seq, {"status": _COMPLETED, "attempts": 1,
                                                      "result": stored, "updated_at": now}),
                       durable=False)  # flushed with the next intent (see RunLog.write)
        rec.status, rec.result, rec.updated_at = _COMPLETED, stored, now
    return CallOutcome(True, name, seq, result=raw, value=raw)


def _general(run: Run, name: str, args: dict[str, Any], invoke: Invoker, rec: Record,
             deps: list[int], scope: str, agent_id: str | None, got: Attempt,
             call_id: str | None) -> CallOutcome:
    """Go on in the general flow with the intent written and the first attempt made."""
    engine = run.engine
    comp = engine.registry.pairs[name]
    comp_tool = run.tool(comp.tool, rec.agent_id)
    with run.lock:  # the fields its undo may read, as plan_intent would have noted them
        run.state.note_needed(rec.seq, needed_fields(comp, comp_tool.params if comp_tool
                                                     else None))
    if got.ok:
        return drive_sync(complete(run, rec, args, got), engine.clock, engine.passthrough)
    return drive_sync(call_flow(run, name, args, agent_id=agent_id, depends_on=deps,
                                batch=None, scope=scope, invoke=invoke, ainvoke=None,
                                resume=(Begun(rec, args), got), call_id=call_id),
                      engine.clock, engine.passthrough)
