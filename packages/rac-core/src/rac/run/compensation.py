"""Undoing one action: resolve its compensation, map the compensating call's arguments from
the exact undo data, ask for approval, write the compensation's intent, call it under the
compensation retry policy, and write the outcome (compensated, or a dead letter)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rac.approvals import decision
from rac.effects import Flow, Invoke, Sleep
from rac.errors import CompensationMappingError
from rac.lifecycle import UNCERTAIN_NOTE, uncertain
from rac.mapping import refuse_empty
from rac.models import Record, RecordKind, RecordStatus
from rac.run.attempts import attempt
from rac.run.keys import step_key
from rac.run.reconcile import sent_key
from rac.run.values import error_text, exact_copy, redacted_by_source, stored_copy

if TYPE_CHECKING:
    from rac.registry import Compensation
    from rac.run.run import Run
    from rac.tools import Tool

R = RecordStatus


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
    raised = None
    person = decision(rec, comp.tool)  # rac approve / rac hold: outranks the plugins
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
                                     f"{' ' if raised is None else ': '}{why}")
        run.log.event("rac.compensation_held", level="warning", seq=rec.seq, tool=rec.tool,
                      status="held", error=raised)
        return Undo("held", comp.tool, why)
    with run.lock:
        now = engine.clock.now()
        stored = redacted_by_source(stored_copy(cargs, engine.max_value_chars), comp.args)
        crec = Record(run.run_id, run.next_seq(), comp.tool, RecordKind.COMPENSATION,
                      R.PENDING, rec.agent_id, rec.scope, stored, None, None, 1, key, [],
                      rec.seq, None, True, False, None, now, now, "",
                      exact_copy(cargs, stored))
        # the compensation's intent: durable before the compensator runs, one commit
        run.log.write(updates=[(rec, {"status": R.COMPENSATING})], appends=[crec])
    return (yield from _call(run, rec, crec, comp, tool, cargs, uncertain=maybe))


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
    """Call the compensator until it succeeds or its retries are spent. Every failure is
    retried except one a declared rule calls permanent (the fallback for unknown errors does
    not stop a compensation). ``uncertain``: the action may not have happened (its dead
    letter says so)."""
    engine = run.engine
    policy = comp.retry or engine.compensation_retry
    invoke = Invoke(tool.invoke, tool.ainvoke, cargs, True)
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
            with run.lock:
                result = stored_copy(got.value, engine.max_value_chars)
                run.log.write(updates=[
                    (crec, {"status": R.COMPLETED, "attempts": tries, "result": result}),
                    (rec, {"status": R.COMPENSATED})], durable=False)
            return Undo("compensated", comp.tool)
        cls = got.classification
        assert got.error is not None and cls is not None
        stop = cls.kind == "permanent" and not cls.fallback
        if not stop and tries < policy.max_attempts:
            delay = policy.delay(tries, retry_after=cls.retry_after, rng=run.rng)
            run.log.event("rac.retry", seq=crec.seq, tool=comp.tool, status="retrying",
                          attempt=tries, delay=delay, error=error_text(got.error))
            try:
                yield Sleep(delay, True)
            except BaseException as e:
                run.interrupted(crec, e)
                raise
            continue
        msg = f"{comp.tool} failed after {tries} attempt(s): {error_text(got.error)}"
        if uncertain:
            msg += f" {UNCERTAIN_NOTE}"
        with run.lock:
            run.log.write(updates=[
                (crec, {"status": R.FAILED, "error": error_text(got.error), "attempts": tries,
                        "result": stored_copy(got.value, engine.max_value_chars)}),
                (rec, {"status": R.COMPENSATION_FAILED, "error": msg})], durable=False)
        return Undo("failed", comp.tool, msg)
