"""Undoing one action: resolve its compensation, map the compensating call's arguments from
the exact undo data, ask for approval, write the compensation's intent, call it under the
compensation retry policy, and write the outcome (compensated, or a dead letter).

A compensator is a tool with an effect class of its own (see docs/concepts.md, "An all-clear
only from evidence"). A failure that may have taken effect (ambiguous: a refund that timed out
after paying) is retried only where a repeat is safe: an ``idempotent`` compensator, or a
``keyed`` one called with the compensation's own key. An ``unsafe`` one (the default) is
settled by its own lookup (``lookups={compensator: Lookup(...)}``: found, the undo is done;
absent, it is tried again) or, with none or when it cannot tell, the action is left as a dead
letter that says the undo may have taken effect: never reported undone, never repeated
blindly, also not by a later resume or recovery. An answer the compensation declares to mean
"already undone" (``Compensation(already_undone=...)``) counts as the undo done."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rac.approvals import args_digest, decision
from rac.effects import Flow, Invoke, Sleep
from rac.errors import CompensationMappingError
from rac.lifecycle import UNCERTAIN_NOTE, uncertain
from rac.mapping import empty, refuse_empty
from rac.models import Record, RecordKind, RecordStatus
from rac.registry import Effect
from rac.run.attempts import attempt
from rac.run.keys import step_key
from rac.run.reconcile import ABSENT, FOUND, needs_snapshot, reconcile, sent_key, snapshot
from rac.run.values import error_text, exact_copy, redacted_by_source, stored_copy

if TYPE_CHECKING:
    from rac.registry import BeforeImage, Compensation, Lookup
    from rac.run.run import Run
    from rac.tools import Tool

R = RecordStatus
#: How a compensation record that may have taken effect is marked (its ``note``): an attempt
#: that failed ambiguously and was not repeated, or one a crash interrupted ("in_doubt", as
#: recovery writes it).
MAYBE_UNDONE = "may have taken effect"
_MAYBE_NOTES = (MAYBE_UNDONE, "in_doubt")


@dataclass(slots=True)
class Undo:
    """How undoing one action ended: ``compensated``, ``failed`` (a dead letter), ``held``
    (for approval) or ``none`` (no compensation is known)."""

    outcome: str
    compensator: str | None = None
    error: str | None = None


def undo_sources(run: Run, rec: Record) -> tuple[dict[str, Any], Any, Any]:
    """The original call's arguments, result and before-image, exactly as the call had them:
    the live values in the process that made the call, else the log's undo data, else the
    logged copies."""
    live = run.live.get(rec.seq)
    undo = rec.undo or {}
    args = live[0] if live is not None else undo.get("args", rec.args)
    result = live[1] if live is not None else undo.get("result", rec.result)
    return dict(args or {}), result, undo.get("before")


def later_writer(run: Run, rec: Record, decl: BeforeImage) -> Flow[str | None]:
    """Before a before-image restore: why restoring would overwrite a later writer's change,
    or None when the object still holds what the action wrote (or already holds what it held
    before: the restore is then a no-op). Read again through the before-image's own read
    tool; compared on the fields the action's arguments and result share with it, ids aside
    (:func:`rac.run.identity.drift`). Nothing to compare, or a read that fails, is a reason
    too: no evidence, no overwrite."""
    from rac.run.identity import drift, identity, read_item
    from rac.run.reconcile import read_before

    args, result, before = undo_sources(run, rec)
    ok, now = yield from read_before(run, decl, args, "", agent_id=rec.agent_id)
    if not ok:
        return f"the object could not be read again before restoring it ({now})"
    state = read_item(now)
    if state is None:
        return f"{decl.tool} returned nothing RAC can read as fields, so it cannot tell " \
               "whether a later writer changed the object"
    wrote = drift(state, args, result, ignore=identity(state) or {})  # the result wins
    if not wrote.fields:
        return (f"{decl.tool} shows no field {rec.tool} wrote, so RAC cannot tell whether a "
                "later writer changed the object since")
    if wrote.changed is None:
        return None
    back = drift({k: state[k] for k in wrote.fields}, before)
    if back.changed is None and len(back.fields) == len(wrote.fields):
        return None  # already as it was before the action
    return (f"a later writer changed it since: {wrote.changed!r} is {wrote.now!r} now, not "
            f"the {wrote.then!r} {rec.tool} wrote")


def compensate(run: Run, rec: Record) -> Flow[Undo]:
    """Undo ``rec`` (an action that happened or may have): see the module docstring."""
    engine = run.engine
    comp: Compensation | None = engine.hooks.first("rac_resolve_compensation", engine=engine,
                                                   record=rec)
    if comp is None:
        return Undo("none")
    maybe = uncertain(rec)
    key = step_key(run.key_prefix, rec.seq, "compensate")
    try:
        tool = run.tool(comp.tool, rec.agent_id)
        if tool is None:
            raise CompensationMappingError(
                f"compensating tool {comp.tool!r} is not available to this run: register it "
                f"with rac.RAC(tools=[...]) or give it to the agent")
        cargs = _map(run, rec, comp, tool, key)
    except Exception as e:  # noqa: BLE001 - recorded as a dead letter, the rollback goes on
        msg = str(e) if isinstance(e, CompensationMappingError) else (
            f"preparing {comp.tool} failed: {type(e).__name__}: {error_text(e)}")
        if maybe:
            msg += f" {UNCERTAIN_NOTE}"
        with run.lock:
            run.log.update(rec, status=R.COMPENSATION_FAILED, error=msg)
        return Undo("failed", comp.tool, msg)
    if comp.before is not None:  # a restore: only over what the action wrote
        conflict = yield from later_writer(run, rec, comp.before)
        if conflict is not None:
            return _conflict(run, rec, comp, conflict, maybe)
    raised = None
    person = decision(rec, comp.tool, cargs)  # rac approve / rac hold: outranks the plugins
    if person is False:  # kept held on purpose: the note keeps who and why
        run.log.event("rac.compensation_held", level="warning", seq=rec.seq, tool=rec.tool,
                      status="held", error="kept held by a person")
        return Undo("held", comp.tool, "kept held by a person (rac hold)")
    try:
        # fail closed: an approval plugin that raises holds the compensation (it is never
        # taken for "no answer", which the default would approve)
        approved = True if person else engine.hooks.first(
            "rac_approve_compensation", propagate=(Exception,), engine=engine, record=rec,
            compensation=comp, args=cargs)
    except Exception as e:  # noqa: BLE001 - held and named, the rollback goes on
        approved = False
        raised = f"the approval hook raised {type(e).__name__}: {error_text(e)}"
    if approved is False:
        why = "held for approval" if raised is None else f"{raised}; held for approval"
        with run.lock:
            run.log.update(rec, note=f"compensation via {comp.tool}"
                                     f"{' ' if raised is None else ': '}{why}"
                                     f" (arguments {args_digest(cargs)})")
        run.log.event("rac.compensation_held", level="warning", seq=rec.seq, tool=rec.tool,
                      status="held", error=raised)
        return Undo("held", comp.tool, why)
    effect = _effect(run, comp, tool, cargs)
    lookup = engine.registry.lookups.get(comp.tool)
    if effect is Effect.UNSAFE:
        earlier = _maybe_undone(run, rec)
        if earlier is not None:
            settled = yield from _settle_earlier(run, rec, earlier, comp, lookup, cargs, maybe)
            if settled is not None:
                return settled
    snap: dict[str, Any] | None = None
    if lookup is not None and effect is Effect.UNSAFE and needs_snapshot(lookup):
        # what the compensator's lookup shows before it runs: a match found after an
        # ambiguous failure that was already there is not this undo's effect
        snap = yield from snapshot(run, lookup, cargs, agent_id=rec.agent_id, shielded=True)
    with run.lock:
        now = engine.clock.now()
        stored = redacted_by_source(stored_copy(cargs, engine.max_value_chars), comp.args)
        undo = exact_copy(cargs, stored)
        if snap is not None:
            undo = {**(undo or {}), "snapshot": snap}
        crec = Record(run.run_id, run.next_seq(), comp.tool, RecordKind.COMPENSATION,
                      R.PENDING, rec.agent_id, rec.scope, stored, None, None, 1, key, [],
                      rec.seq, None, True, False, None, now, now, str(effect), undo)
        # the compensation's intent: durable before the compensator runs, one commit
        fields: dict[str, Any] = {"status": R.COMPENSATING}
        if person:  # a person's approval is used once: this undo is the one it was for
            fields["note"] = f"{rec.note}; approval used at {now:.0f}"
        run.log.write(updates=[(rec, fields)], appends=[crec])
    return (yield from _call(run, rec, crec, comp, tool, cargs, uncertain=maybe))


def _conflict(run: Run, rec: Record, comp: Compensation, conflict: str, maybe: bool,
              crec: Record | None = None, failed: dict[str, Any] | None = None) -> Undo:
    """A restore that would overwrite a later writer's change is not made: the action is a
    dead letter that says why (and ``crec``, a restore attempted before, is written failed)."""
    msg = f"not restored through {comp.tool}: {conflict}"
    if maybe:
        msg += f" {UNCERTAIN_NOTE}"
    updates: list[tuple[Record, dict[str, Any]]] = [
        (rec, {"status": R.COMPENSATION_FAILED, "error": msg})]
    if crec is not None:
        updates.insert(0, (crec, failed or {"status": R.FAILED}))
    with run.lock:
        run.log.write(updates=updates, durable=False)
    run.log.event("rac.compensation_conflict", level="warning", seq=rec.seq,
                  tool=rec.tool, status="conflict", error=conflict)
    return Undo("failed", comp.tool, msg)


def _effect(run: Run, comp: Compensation, tool: Tool, cargs: dict[str, Any]) -> Effect:
    """The compensator's effect class for this call: ``keyed`` only when it is called with a
    key (else ``unsafe``: a repeat would not be deduplicated)."""
    engine = run.engine
    effect = engine.registry.effect_of(comp.tool, tool.params, engine.key_param)
    if effect is Effect.KEYED and empty(cargs.get(engine.key_param)):
        return Effect.UNSAFE
    return effect


def _maybe_undone(run: Run, rec: Record) -> Record | None:
    """The last compensation of ``rec`` that may have taken effect (an ambiguous failure not
    repeated, or an attempt a crash interrupted), if the last one ended so."""
    with run.lock:
        crecs = run.log.compensations_of(rec.seq)
    if not crecs:
        return None
    last = max(crecs, key=lambda c: c.seq)
    if last.status is R.PENDING or (last.status is R.FAILED and (last.note or "").startswith(
            _MAYBE_NOTES)):
        return last
    return None


def _settle_earlier(run: Run, rec: Record, earlier: Record, comp: Compensation,
                    lookup: Lookup | None, cargs: dict[str, Any],
                    maybe: bool) -> Flow[Undo | None]:
    """An earlier undo of ``rec`` by an unsafe compensator may have taken effect: its lookup
    says found (the undo is done), absent (None: it is made again), or nothing can tell (the
    dead letter stays, and says why)."""
    why = (f"an earlier call of {comp.tool} (#{earlier.seq}) may have taken effect and "
           f"{comp.tool} is not safe to repeat")
    if lookup is not None:
        seen = yield from reconcile(run, earlier, lookup, cargs, shielded=True)
        run.log.event("rac.reconcile", seq=earlier.seq, tool=comp.tool, status=seen.verdict,
                      reason=seen.reason)
        if seen.verdict == FOUND:
            with run.lock:
                if rec.status is not R.COMPENSATING:
                    run.log.update(rec, status=R.COMPENSATING)
                run.log.update(rec, status=R.COMPENSATED,
                               note=f"undone: {lookup.tool} found the effect of {comp.tool} "
                                    f"(#{earlier.seq})")
            return Undo("compensated", comp.tool)
        if seen.verdict == ABSENT:
            return None
        why += f", and {seen.reason}"
    else:
        why += " (declare it idempotent or keyed, or give it a lookup)"
    msg = f"{comp.tool} may have undone it, or not: {why}"
    if maybe:
        msg += f" {UNCERTAIN_NOTE}"
    with run.lock:
        run.log.update(rec, status=R.COMPENSATION_FAILED, error=msg)
    return Undo("failed", comp.tool, msg)


def _map(run: Run, rec: Record, comp: Compensation, tool: Tool, key: str) -> dict[str, Any]:
    engine = run.engine
    args, result, before = undo_sources(run, rec)
    if result is None:
        # a call whose outcome is unknown (in doubt now, or when its undo first failed): the
        # key it was sent with, and only that one, lets the compensator find the effect
        sent = sent_key(run, rec, args)
        if sent is not None:
            args[engine.key_param] = sent
    mapped = engine.hooks.first("rac_map_compensation_args", propagate=(CompensationMappingError,),
                                engine=engine, record=rec,
                                compensation=comp, tool=tool, args=args, result=result,
                                idempotency_key=key, before=before)
    if mapped is None:
        raise CompensationMappingError(f"no plugin mapped the arguments of {comp.tool}")
    if not isinstance(mapped, dict):
        raise CompensationMappingError(f"the arguments mapped for {comp.tool} are a "
                                       f"{type(mapped).__name__}, not a dict")
    refuse_empty(mapped, comp, tool=rec.tool)  # whichever plugin mapped them
    return mapped


def _call(run: Run, rec: Record, crec: Record, comp: Compensation, tool: Tool,
          cargs: dict[str, Any], *, uncertain: bool) -> Flow[Undo]:
    """Call the compensator until it succeeds or its retries are spent (see the module
    docstring). A failure that came before any effect is retried unless a declared rule calls
    it permanent; one that may have taken effect is retried only where a repeat is safe, else
    settled by the compensator's lookup or left named. ``uncertain``: the action may not have
    happened (its dead letter says so)."""
    engine = run.engine
    policy = comp.retry or engine.compensation_retry
    invoke = Invoke(tool.invoke, tool.ainvoke, cargs, True)
    effect = Effect(crec.effect) if crec.effect else Effect.UNSAFE
    lookup = engine.registry.lookups.get(comp.tool) if effect is Effect.UNSAFE else None
    tries = 0
    while True:
        tries += 1
        if tries > 1:
            with run.lock:
                run.log.update(crec, attempts=tries)
        try:
            got = yield from attempt(engine, comp.tool, invoke, crec)
        except BaseException as e:
            run.interrupted(crec, e)
            raise
        if got.ok:
            return _done(run, rec, crec, got.value, tries)
        cls = got.classification
        assert got.error is not None and cls is not None
        if comp.undone_by(got.error):
            return _done(run, rec, crec, got.value, tries,
                         note=f"already undone: {comp.tool} answered "
                              f"{type(got.error).__name__}: {error_text(got.error)}")
        # a declared rule that says permanent stops the retries; a declaration that the error
        # came before any effect says nothing happened, and the undo is worth another try
        stop = cls.kind == "permanent" and not cls.fallback and not cls.declared
        maybe_undone = cls.ambiguous and effect is Effect.UNSAFE
        why = ""
        if maybe_undone and lookup is not None:
            seen = yield from reconcile(run, crec, lookup, cargs, shielded=True)
            run.log.event("rac.reconcile", seq=crec.seq, tool=comp.tool, status=seen.verdict,
                          reason=seen.reason)
            if seen.verdict == FOUND:
                return _done(run, rec, crec, seen.result, tries,
                             note=f"reconciled: {lookup.tool} found the effect")
            if seen.verdict == ABSENT:
                maybe_undone = False  # it did not take effect: it may be made again
            else:
                why = seen.reason
        elif maybe_undone:
            why = (f"{comp.tool} is not safe to repeat and no lookup is declared to tell "
                   "(declare it idempotent or keyed, or give it a lookup)")
        if not stop and not maybe_undone and tries < policy.max_attempts:
            delay = policy.delay(tries, retry_after=cls.retry_after, rng=run.rng)
            run.log.event("rac.retry", seq=crec.seq, tool=comp.tool, status="retrying",
                          attempt=tries, delay=delay, error=error_text(got.error))
            try:
                yield Sleep(delay, True)
            except BaseException as e:
                run.interrupted(crec, e)
                raise
            if comp.before is not None:  # a restore again: only while nobody wrote since
                conflict = yield from later_writer(run, rec, comp.before)
                if conflict is not None:
                    return _conflict(run, rec, comp, conflict, uncertain, crec, {
                        "status": R.FAILED, "error": error_text(got.error),
                        "attempts": tries})
            continue
        if maybe_undone:
            msg = (f"{comp.tool} may have undone it, or not: it failed "
                   f"({error_text(got.error)}) after it may have taken effect, and {why}")
        else:
            msg = f"{comp.tool} failed after {tries} attempt(s): {error_text(got.error)}"
        if uncertain:
            msg += f" {UNCERTAIN_NOTE}"
        failed: dict[str, Any] = {
            "status": R.FAILED, "error": error_text(got.error), "attempts": tries,
            "result": stored_copy(got.value, engine.max_value_chars)}
        if maybe_undone:
            failed["note"] = f"{MAYBE_UNDONE}: {why}"
        with run.lock:
            run.log.write(updates=[(crec, failed),
                                   (rec, {"status": R.COMPENSATION_FAILED, "error": msg})],
                          durable=False)
        return Undo("failed", comp.tool, msg)


def _done(run: Run, rec: Record, crec: Record, value: Any, tries: int,
          note: str | None = None) -> Undo:
    """The compensation succeeded (or its effect was found, or it answered that the effect
    was already undone): both records say so."""
    done: dict[str, Any] = {"status": R.COMPLETED, "attempts": tries,
                            "result": stored_copy(value, run.engine.max_value_chars)}
    if note is not None:
        done["note"] = note
    with run.lock:
        run.log.write(updates=[(crec, done), (rec, {"status": R.COMPENSATED})], durable=False)
    return Undo("compensated", crec.tool)
