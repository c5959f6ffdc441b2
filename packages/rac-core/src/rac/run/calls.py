"""The life of one tool call under RAC: the intent written before it runs (with its
before-image), its attempts, what an ambiguous failure means for a tool of its effect class
(retried, reconciled, or in doubt), the declared alternatives, the outcome written after it,
and the rollback when nothing worked.

Decision table for a failed attempt (see docs/concepts.md, "Calls that may have happened"):

====================  ==========================  ======================================
error kind            read_only/idempotent/keyed  unsafe
====================  ==========================  ======================================
transient             retry; when spent: failed   retry; when spent: failed
ambiguous             retry; when spent: settle   settle at once
permanent             failed                      failed
====================  ==========================  ======================================

*ambiguous* is what a failure is unless evidence says it came before any effect (see
:mod:`rac.classify`): unknown exception types and error results included. A read-only tool's
error that no rule knows is not retried (nothing is gained) and the call is failed; nor is
any tool whose failure is an answer (an HTTP 4xx, an error result: ``Classification.final``).

*settle*: the declared lookup says found (the call's result), absent (retried if attempts are
left and the failure was not an answer a repeat would give again, else failed) or cannot tell; without a lookup, or when it cannot tell, the record is
``in_doubt`` and the scope is rolled back (no alternative runs: the first call may be live).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from rac.effects import Flow, Invoke, Sleep
from rac.errors import CallRefused, NoCompensationError
from rac.models import Record, RecordKind, RecordStatus
from rac.ordering import cycle_through
from rac.registry import Effect, Irreversible
from rac.report import AttemptedAlternative, RecoveryReport
from rac.run.attempts import Attempt, attempt, outcome_of, read_result
from rac.run.compensation import compensate
from rac.run.keys import step_key
from rac.run.outcome import CallOutcome
from rac.run.plan import call_plan
from rac.run.reconcile import ABSENT, FOUND, needs_snapshot, read_before, reconcile, snapshot
from rac.run.rollback import Failure, rollback_flow
from rac.run.values import error_text, exact, needed_fields, stored_copy, undo_part
from rac.serialize import plain_copy

if TYPE_CHECKING:
    from rac.registry import Compensation
    from rac.run.run import AsyncInvoker, Invoker, Run

R = RecordStatus
_ACTION, _PENDING = RecordKind.ACTION, R.PENDING
_KEYED, _READ_ONLY = Effect.KEYED, Effect.READ_ONLY
_KEYED_NAME = str(Effect.KEYED)
_REPEAT_SAFE = (Effect.READ_ONLY, Effect.IDEMPOTENT, Effect.KEYED)


@dataclass(slots=True)
class Begun:
    """The intent of a call, written: its record, RAC's own copy of its arguments, and why it
    was refused (None: it may run)."""

    record: Record
    args: dict[str, Any]
    refusal: str | None = None
    error: CallRefused | None = None


@dataclass(slots=True)
class Performed:
    """How a call's attempts ended: ``ok`` (``got`` is the success), ``failed`` (it did not
    happen) or ``in_doubt`` (it may have; ``reason`` says why nothing could tell)."""

    kind: str
    got: Attempt
    reason: str = ""


def call_flow(run: Run, name: str, args: dict[str, Any], *, agent_id: str | None,
              depends_on: Iterable[int], batch: Any, scope: str, invoke: Invoker,
              ainvoke: AsyncInvoker | None, planned: Intent | None = None,
              resume: tuple[Begun, Attempt] | None = None,
              call_id: str | None = None) -> Flow[CallOutcome]:
    """The whole life of one call (see the module docstring). ``planned`` is the call's intent
    already planned; ``resume`` continues a call whose intent is written and whose first
    attempt was made (by a caller that made it itself); ``call_id`` is the framework's id of
    the call, written on each record it makes (the alternatives' too)."""
    engine = run.engine
    first: Failure | None = None
    tried: list[AttemptedAlternative] = []
    first_seq: int | None = None
    deps = list(depends_on)
    for tool in [name, *engine.registry.alternatives.get(name, ())]:
        made: Attempt | None = None
        if resume is not None:
            (begun, made), resume = resume, None
        else:
            intent = (planned if tool == name else None) or plan_intent(
                run, tool, args, agent_id, scope, first_seq)
            if intent.reads:
                begun = yield from begin(run, tool, args, agent_id, scope, deps, first_seq,
                                         batch, intent, call_id=call_id)
            else:  # nothing to read before the call: its intent is written at once
                if call_id:
                    intent.record.call_id = call_id
                begun = write_intent(run, intent, args, deps, batch)
        rec = begun.record
        if first_seq is None:
            first_seq = rec.seq
        if begun.refusal is not None:
            if first is None:  # the call itself was refused: it never ran, nothing to undo
                return CallOutcome(False, tool, rec.seq, refused=True, message=begun.refusal,
                                   error=begun.error)
            tried.append(AttemptedAlternative(tool=tool, error=f"refused: {begun.refusal}"))
            continue
        try:
            call = Invoke(partial(invoke, tool),
                          partial(ainvoke, tool) if ainvoke is not None else None,
                          begun.args if rec.effect != _KEYED_NAME
                          else with_key(run, tool, begun.args, rec))
            if made is None and not engine.hooks.watches_attempts:
                ok, raw = yield call  # the first attempt; perform() reads what a failure means
                made = read_result(engine, tool, raw) if ok else outcome_of(engine, tool, ok,
                                                                               raw)
            if made is not None and made.ok:  # the common case: no Performed to build
                if not run.succeeded(rec, begun.args, made.value):
                    return CallOutcome(True, rec.tool, rec.seq, made.raw, made.value)
                return (yield from undo_doomed(run, rec, made))
            performed = yield from perform(run, rec, tool, begun.args, call, made)
        except BaseException as e:
            run.interrupted(rec, e)
            raise
        if performed.kind == "ok":
            got = performed.got
            if not run.succeeded(rec, begun.args, got.value):
                return CallOutcome(True, rec.tool, rec.seq, result=got.raw, value=got.value)
            return (yield from undo_doomed(run, rec, got))
        got = performed.got
        assert got.error is not None and got.classification is not None
        doomed = run.end_call(rec, R.IN_DOUBT if performed.kind == "in_doubt" else R.FAILED,
                              error=error_text(got.error), attempts=rec.attempts,
                              result=stored_copy(got.value, engine.max_value_chars),
                              note=performed.reason or None)
        if doomed and performed.kind != "in_doubt":
            return CallOutcome(False, tool, rec.seq, error=got.error, undone=True, message=(
                f"RAC: {tool} failed ({error_text(got.error)}) after this run was rolled back; "
                "nothing of it is live. Replan from a clean state."))
        failure = Failure(tool, rec.seq, got.error, got.classification.kind, rec.attempts)
        if first is None:
            first = failure
        else:
            tried.append(AttemptedAlternative(tool=tool, error=error_text(got.error),
                                              attempts=rec.attempts))
        if performed.kind == "in_doubt":
            break  # the call may be live: no alternative may stand in for it
    assert first is not None
    report: RecoveryReport = yield from rollback_flow(run, scope, reason=f"{first.tool} failed",
                                                      failure=first, alternatives=tried)
    return CallOutcome(False, first.tool, first.seq, error=first.error, report=report,
                       message=engine.render(report))


def with_key(run: Run, tool: str, args: dict[str, Any], rec: Record) -> dict[str, Any]:
    """The arguments the tool is called with: a ``keyed`` tool gets the step's key, also in
    place of a key argument that is missing, None or empty (a tool given such a key does not
    deduplicate a repeat). A key of the caller's own is sent as it is."""
    if rec.effect != _KEYED:
        return args
    param = run.engine.key_param
    if empty_key(args.get(param)):
        return {**args, param: rec.idempotency_key}
    return args


def empty_key(value: Any) -> bool:
    """True for a key argument that deduplicates nothing: missing, None or blank."""
    return value is None or (isinstance(value, str) and not value.strip())


@dataclass(slots=True)
class Intent:
    """A call's intent record before it is written, and what was decided about it: its
    compensation, the undo data and fields it keeps, and why it is refused (None: it may
    run)."""

    record: Record
    comp: Compensation | None = None
    undo: dict[str, Any] | None = None
    needed: tuple[frozenset[str] | None, frozenset[str] | None] | None = None
    refusal: str | None = None
    error: CallRefused | None = None
    #: True when the record's copy of the arguments is exact (a plain flat dict: nothing
    #: redacted or capped), so it may stand for them
    exact: bool = False
    #: True when the intent needs a tool call first (see :func:`reads_first`)
    reads: bool = False


def plan_intent(run: Run, tool: str, args: dict[str, Any], agent_id: str | None, scope: str,
                alternative_of: int | None) -> Intent:
    """Decide what the intent of a call holds and whether its policies let it run (the
    before-image, which needs a tool call, is read by :func:`begin`)."""
    engine = run.engine
    agent = agent_id or run.agent_id
    stored_args = plain_copy(args)
    exact_args = stored_args is not None
    if stored_args is None:
        stored_args = stored_copy(args, engine.max_value_chars)
    plan = call_plan(run, tool, agent)
    if plan is not None:  # decided once for the tool (see rac.run.plan)
        rec = Record(run.run_id, 0, tool, _ACTION, _PENDING, agent, scope, stored_args, None,
                     None, 1, "", [], None, alternative_of, True, plan.read_only, None, 0.0,
                     0.0, plan.effect_name, None)
        intent = Intent(rec, plan.comp, None, plan.needed, exact=exact_args,
                        reads=plan.reads_first)
        if not exact_args and plan.needed is not None:
            part = undo_part(args, stored_args, plan.needed[0])
            if part is not None:
                intent.undo = {"args": part}
        return intent
    registry = engine.registry
    t = run.tool(tool, agent)
    effect = registry.effect_of(tool, t.params if t is not None else None, engine.key_param)
    rec = Record(run.run_id, 0, tool, _ACTION, _PENDING, agent, scope, stored_args, None, None,
                 1, "", [], None, alternative_of, True, effect is _READ_ONLY, None, 0.0,
                 0.0, str(effect), None)
    intent = Intent(rec, exact=exact_args)
    if rec.read_only:
        return intent
    irreversible = registry.irreversible.get(tool)
    if irreversible is not None:
        rec.compensable = False
        intent.refusal = _irreversible(run, rec, irreversible, args)
    else:
        intent.comp = engine.hooks.first("rac_resolve_compensation", engine=engine, record=rec)
        if intent.comp is None:
            intent.refusal = _uncompensable(run, rec)
            if intent.refusal is not None:
                intent.error = NoCompensationError(intent.refusal)
        else:
            comp_tool = run.tool(intent.comp.tool, rec.agent_id)
            intent.needed = needed_fields(intent.comp, comp_tool.params if comp_tool else None)
            part = None if exact_args else undo_part(args, stored_args, intent.needed[0])
            if part is not None:
                intent.undo = {"args": part}
    if intent.refusal is not None and intent.error is None:
        intent.error = CallRefused(intent.refusal)
    intent.reads = reads_first(run, intent)
    return intent


def reads_first(run: Run, intent: Intent) -> bool:
    """True if the call's intent needs a tool call first (:func:`begin`): a before-image to
    read, or a snapshot its lookup needs."""
    if intent.refusal is not None:
        return False
    comp = intent.comp
    if comp is not None and comp.before is not None:
        return True
    rec = intent.record
    if rec.read_only:
        return False
    lookup = run.engine.registry.lookups.get(rec.tool)
    return lookup is not None and needs_snapshot(lookup)


def begin(run: Run, tool: str, args: dict[str, Any], agent_id: str | None, scope: str,
          depends_on: list[int], alternative_of: int | None, batch: Any,
          planned: Intent | None = None, *, call_id: str | None = None) -> Flow[Begun]:
    """Decide whether the call may run (its policies, its before-image), take the snapshot its
    lookup needs, and write its intent record: the first half of the write-ahead log.
    ``planned`` is an intent already planned; ``call_id`` the framework's id of the call."""
    intent = planned or plan_intent(run, tool, args, agent_id, scope, alternative_of)
    if call_id:
        intent.record.call_id = call_id
    comp = intent.comp
    if comp is not None and comp.before is not None and intent.refusal is None:
        ok, before = yield from read_before(run, comp.before, args, "",
                                            agent_id=intent.record.agent_id)
        if ok:
            intent.undo = {**(intent.undo or {}), "before": exact(before)}
        elif comp.before.on_failure == "run":
            intent.record.compensable = False
            intent.record.note = f"not undoable: its before-image could not be read ({before})"
        else:
            intent.refusal = (f"refused: {tool} would change state that RAC could not read "
                              f"first ({before}), so it could not be undone")
            intent.error = CallRefused(intent.refusal)
    lookup = run.engine.registry.lookups.get(tool)
    if lookup is not None and intent.refusal is None and not intent.record.read_only \
            and needs_snapshot(lookup):
        # What the lookup shows before the call: a match found later that was already there
        # is not this call's effect.
        seen = yield from snapshot(run, lookup, args, agent_id=intent.record.agent_id)
        intent.undo = {**(intent.undo or {}), "snapshot": seen}
    return write_intent(run, intent, args, depends_on, batch)


def write_intent(run: Run, intent: Intent, args: dict[str, Any], depends_on: Iterable[int],
                 batch: Any) -> Begun:
    """Write the intent record (or the refusal): number it, link it to what it depends on,
    refuse it if its model turn was rolled back, and mark it in flight."""
    rec, refusal, error = intent.record, intent.refusal, intent.error
    state = run.state
    with run.lock:
        if refusal is None and batch is not None:
            refusal = state.batch_refusal(batch, rec.tool)
            if refusal is not None:
                error = CallRefused(refusal)
        # a refused call never runs: a run that was idle stays as it was
        status = state.reopens(run.log.status) if refusal is None else None
        rec.seq = state.next_seq()
        rec.idempotency_key = step_key(run.key_prefix, rec.seq, "action")
        rec.created_at = rec.updated_at = run.engine.clock.now()
        if not rec.read_only:  # the log's own copy, when exact: nobody changes it
            inferred = state.dependencies(rec.args, owned=True) if intent.exact \
                else state.dependencies(args)
            rec.depends_on = sorted(set(inferred).union(depends_on)) if depends_on \
                else inferred
        if refusal is None and depends_on:  # a declared cycle would block both undos
            cycle = cycle_through(run.log.records.values(), rec.seq, rec.depends_on)
            if cycle is not None:
                refusal = (f"refused: {rec.tool} (#{rec.seq}) is declared to depend on a "
                           f"record that depends on it: {' -> '.join(f'#{s}' for s in cycle)}"
                           "; a dependency cycle would keep every record of it from being "
                           "undone")
                error, status = CallRefused(refusal), None
        if refusal is not None:
            rec.status, rec.attempts, rec.error, rec.note = R.FAILED, 0, refusal, "refused"
        # undo data only where an undo may need it (the snapshot: where a lookup does)
        undo = intent.undo if intent.undo and not rec.read_only else None
        if undo and not rec.compensable:
            undo = {k: v for k, v in undo.items() if k == "snapshot"} or None
        rec.undo = undo
        run.log.append(rec, status=status)
        if refusal is None:
            state.call_began(rec.seq, rec.scope, intent.needed)
    return Begun(rec, args, refusal, error)


def _irreversible(run: Run, rec: Record, policy: Irreversible, args: dict[str, Any]
                  ) -> str | None:
    if policy is Irreversible.RUN:
        rec.note = "irreversible: no undo exists"
        return None
    if policy is Irreversible.REFUSE:
        return f"refused: {rec.tool} cannot be undone and is declared irreversible='refuse'"
    engine = run.engine
    verdict = engine.hooks.first("rac_approve_action", engine=engine, run=run, tool=rec.tool,
                                 args=dict(args), propagate=engine.passthrough)
    if verdict is True:
        rec.note = "irreversible: approved before it ran"
        return None
    if verdict is False:
        return f"refused: {rec.tool} cannot be undone and its approval was denied"
    return (f"not run: {rec.tool} cannot be undone and waits for approval; nothing was done. "
            "Ask the user, then call it again once approved")


def _uncompensable(run: Run, rec: Record) -> str | None:
    """Apply ``no_compensation`` to a side-effecting call with no compensator; the refusal,
    if it is refused."""
    policy = run.engine.no_compensation
    if policy == "assume_read_only":
        rec.read_only = True
        return None
    rec.compensable = False
    if policy == "refuse":
        return (f"refused: {rec.tool} has side effects and no compensation is declared "
                "(no_compensation='refuse')")
    run.log.event("rac.no_compensation", level="warning", tool=rec.tool,
                  status="completed_uncompensable")
    return None


def perform(run: Run, rec: Record, tool: str, own_args: dict[str, Any],
            call: Invoke, made: Attempt | None = None) -> Flow[Performed]:
    """Attempt the call until it succeeds, fails for good, or may have happened and nothing
    can tell (see the decision table in the module docstring). ``made`` is a first attempt
    already made."""
    engine = run.engine
    tries = 0
    earlier = 0  # the first attempt that may have taken effect, unless a lookup said absent
    while True:
        tries += 1
        if tries > 1:
            with run.lock:
                run.log.update(rec, attempts=tries)
        else:
            rec.attempts = 1
        if made is not None:
            got, made = made, None
        else:
            got = yield from attempt(engine, tool, call, rec)
        if got.ok:
            return Performed("ok", got)
        policy = engine.retry
        effect = Effect(rec.effect) if rec.effect else Effect.UNSAFE
        lookup = engine.registry.lookups.get(tool)
        cls = got.classification
        assert cls is not None and got.error is not None
        # An ambiguous failure is retried where a repeat is safe, unless the tool answered
        # (a repeat gets the same answer); a read-only tool's error no rule knows is not
        # worth repeating either.
        retry = cls.transient or (cls.ambiguous and effect in _REPEAT_SAFE and not cls.final
                                  and not (cls.fallback and effect is Effect.READ_ONLY))
        if cls.ambiguous and not earlier:
            earlier = tries
        if retry and tries < policy.max_attempts:
            yield from _backoff(run, rec, tool, tries, cls.retry_after, got.error,
                                happened=bool(earlier))
            continue
        if effect is Effect.READ_ONLY or not (cls.ambiguous or earlier):
            return Performed("failed", got)
        # It may have happened: this attempt, or an earlier one that failed ambiguously (an
        # error before any effect now says nothing of what that one did).
        what = f"{cls.kind} failure" if cls.ambiguous else (
            f"attempt {earlier} failed ambiguously before this {cls.kind} failure")
        if lookup is None:
            return Performed("in_doubt", got, f"may have happened: {what} and no lookup is "
                                              "declared to tell")
        seen = yield from reconcile(run, rec, lookup, own_args)
        run.log.event("rac.reconcile", seq=rec.seq, tool=tool, status=seen.verdict,
                      reason=seen.reason)
        if seen.verdict == FOUND:
            return Performed("ok", Attempt(True, seen.result, seen.result),
                             f"reconciled: {lookup.tool} found the effect")
        if seen.verdict == ABSENT:
            # it did not happen: repeated while attempts remain, unless the failure was an
            # answer (an error result, a 4xx) that a repeat would only give again
            earlier = 0
            if tries < policy.max_attempts and not cls.final:
                yield from _backoff(run, rec, tool, tries, cls.retry_after, got.error,
                                    happened=False)
                continue
            return Performed("failed", got, f"reconciled: {seen.reason}")
        return Performed("in_doubt", got, f"may have happened: {seen.reason}")


def _backoff(run: Run, rec: Record, tool: str, tries: int, retry_after: float | None,
             error: BaseException, *, happened: bool) -> Flow[None]:
    """Wait before the next attempt. Interrupted while waiting, a call none of whose
    attempts may have happened (``happened`` False) is written as failed; else it stays
    pending, in doubt."""
    delay = run.engine.retry.delay(tries, retry_after=retry_after, rng=run.rng)
    run.log.event("rac.retry", seq=rec.seq, tool=tool, status="retrying", attempt=tries,
                  delay=delay, error=error_text(error))
    try:
        yield Sleep(delay, False)
    except BaseException as e:
        if not happened and not isinstance(e, run.engine.passthrough):
            run.end_call(rec, R.FAILED, error=error_text(error), attempts=tries,
                         note=f"interrupted by {type(e).__name__} while waiting to retry; "
                              "no attempt took effect")
        raise


def complete(run: Run, rec: Record, args: dict[str, Any], got: Attempt) -> Flow[CallOutcome]:
    """Write a success; undo it at once if its scope was rolled back while it ran."""
    if not run.succeeded(rec, args, got.value):
        return CallOutcome(True, rec.tool, rec.seq, result=got.raw, value=got.value)
    return (yield from undo_doomed(run, rec, got))


def undo_doomed(run: Run, rec: Record, got: Attempt) -> Flow[CallOutcome]:
    """Undo a call that succeeded after its scope was rolled back (its success is written)."""
    try:
        undo = yield from compensate(run, rec)
    finally:
        run.settle_doomed(rec.seq)
    what = f"via {undo.compensator}" if undo.outcome == "compensated" else (
        f"undo {undo.outcome}: {undo.error}" if undo.error else f"undo {undo.outcome}")
    live = "" if undo.outcome == "compensated" else " IT MAY STILL BE LIVE: a person must check."
    undone = undo.outcome == "compensated"
    return CallOutcome(False, rec.tool, rec.seq, result=got.raw, value=got.value, undone=undone,
                       message=(f"RAC: {rec.tool} completed after this run was rolled back, so "
                                f"{'it was undone too' if undone else 'RAC tried to undo it'} "
                                f"({what}).{live} Replan from a clean state."))


__all__ = ["Begun", "Intent", "Performed", "begin", "call_flow", "complete", "perform",
           "plan_intent", "reads_first", "undo_doomed", "with_key", "write_intent"]
