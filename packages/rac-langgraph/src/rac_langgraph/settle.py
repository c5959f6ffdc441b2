"""Settling a call a crash left in doubt when a resumed thread runs it again: the tool's declared
lookup (:class:`rac.Lookup`) says whether it took effect, and the log is told.

A resumed graph repeats the call whose intent RAC logged before the process died and whose
outcome it never logged. Running it again could do it twice; not running it leaves the model
without an answer. With a lookup RAC asks the world: *found*, the record becomes completed
with the found effect as its result and the model gets that result (the call is not run
again); *absent*, the record is failed (it never happened) and the call runs as a new one;
*cannot tell*, it stays in doubt for ``rac recover`` and the model is told so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import rac
from rac.effects import Flow
from rac.models import RecordStatus
from rac.run.reconcile import ABSENT, FOUND, Reconciled, known_effects, reconcile
from rac.run.values import needed_fields, stored_copy, undo_part


def settle_flow(run: rac.Run, rec: rac.Record, lookup: rac.Lookup,
                args: Mapping[str, Any]) -> Flow[Reconciled]:
    """Reconcile ``rec`` (a call of ``run`` with an intent and no outcome, repeated with
    ``args``) through ``lookup`` and write the verdict to the log (a flow for
    ``rac.effects.drive_sync``/``drive_async``: the lookup is a tool call). The found branch
    writes what the core's rollback writes for a call it reconciles (``rac.run.rollback``);
    the core has no public function for it yet."""
    call_args = dict(args)
    seen = yield from reconcile(run, lookup, call_args, rec.idempotency_key,
                                known=known_effects(run, rec.seq))
    run.log.event("rac.reconcile", seq=rec.seq, tool=rec.tool, status=seen.verdict,
                  reason=seen.reason)
    with run.lock:
        if seen.verdict == FOUND:
            stored = stored_copy(seen.result, run.engine.max_value_chars)
            exact_result = _undo_result(run, rec, seen.result, stored)
            undo = dict(rec.undo or {})
            if exact_result is not None:
                undo["result"] = exact_result
            run.log.update(rec, status=RecordStatus.COMPLETED, result=stored,
                           undo=undo or None,
                           note=f"reconciled on resume: {lookup.tool} found the effect")
            run.live[rec.seq] = (call_args, seen.result)
            if not rec.read_only:
                run.deps.add_result(rec.seq, seen.result, call_args)
        elif seen.verdict == ABSENT:
            run.log.update(rec, status=RecordStatus.FAILED,
                           note=f"reconciled on resume: {seen.reason}")
    return seen


def _undo_result(run: rac.Run, rec: rac.Record, value: Any, stored: Any) -> Any:
    """The exact copy of the result fields the record's undo may read (None when the stored
    copy holds them exactly), as a call that returned ``value`` would have kept."""
    comp = run.engine.registry.pairs.get(rec.tool)
    if comp is None or not rec.compensable:
        return None
    comp_tool = run.tool(comp.tool)
    return undo_part(value, stored, needed_fields(comp, comp_tool.params if comp_tool
                                                  else None)[1])
