"""One attempt at a tool call, read the way RAC reads every attempt: the raw result
normalised (``rac_normalize_result``), checked for a failure it describes
(``rac_detect_result_error``), and a failure classified (``rac_classify_error``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rac.classify import Classification, ErrorKind, declared_before_effect
from rac.dispatch import plugin_failed
from rac.effects import Flow, Invoke

if TYPE_CHECKING:
    from rac.engine import RAC
    from rac.models import Record


@dataclass(slots=True)
class Attempt:
    """What one attempt gave: ``ok`` with the ``raw`` result and its normalised ``value``, or
    the ``error`` (an exception, or the failure the result described) and its
    ``classification``."""

    ok: bool
    raw: Any = None
    value: Any = None
    error: BaseException | None = None
    classification: Classification | None = None


def read_result(engine: RAC, tool: str, raw: Any) -> Attempt:
    """An attempt that returned ``raw``: a success, or the failure the result describes."""
    hooks = engine.hooks
    detect = hooks.sole_detect
    if detect is not None:  # one implementation, no normalizer: asked directly
        try:
            err = detect(tool=tool, result=raw)
        except Exception as e:  # noqa: BLE001 - a plugin's failure is "no answer"
            plugin_failed(hooks.sole_detect_plugin, "rac_detect_result_error", e)
            err = None
        if err is None:
            return Attempt(True, raw, raw)
        return Attempt(False, raw, raw, err, classify(engine, tool, err))
    value = raw
    if "rac_normalize_result" in hooks.implemented:
        normal = hooks.first("rac_normalize_result", tool=tool, result=raw)
        if normal is not None:
            value = normal
    err = hooks.first("rac_detect_result_error", tool=tool, result=value)
    if err is None:
        return Attempt(True, raw, value)
    return Attempt(False, raw, value, err, classify(engine, tool, err))


def classify(engine: RAC, tool: str, error: BaseException) -> Classification:
    """How RAC treats ``error``: a plugin's answer (the default plugin's rules last), unless
    the tool declares the error comes before any effect (``errors_before_effect``). With no
    answer at all, ambiguous: the call may have happened."""
    found = engine.hooks.first("rac_classify_error", tool=tool, error=error)
    verdict = found if isinstance(found, Classification) else Classification(
        ErrorKind.AMBIGUOUS, reason="no classifier answered, so the call may have happened",
        fallback=True)
    declared = engine.registry.before_effect_types(tool)
    if declared:
        return declared_before_effect(error, declared, verdict) or verdict
    return verdict


def attempt(engine: RAC, tool: str, invoke: Invoke,
            record: Record | None = None) -> Flow[Attempt]:
    """Make one attempt through the driver and read it. ``record`` is the action or
    compensation the attempt belongs to (what a fault injector is told, see
    ``rac_inject_fault``)."""
    hooks = engine.hooks
    if record is None or not hooks.watches_attempts:  # nobody listens, nothing is injected
        ok, raw = yield invoke
        return outcome_of(engine, tool, ok, raw)
    if hooks.listened("rac_attempt_started"):
        hooks.notify("rac_attempt_started", record=record.shown())
    got = yield from _attempt(engine, tool, invoke, record)
    if record is not None and hooks.listened("rac_attempt_finished"):
        hooks.notify("rac_attempt_finished", record=record.shown(), error=got.error)
    return got


def _attempt(engine: RAC, tool: str, invoke: Invoke, record: Record | None) -> Flow[Attempt]:
    injecting = record is not None and engine.hooks.listened("rac_inject_fault")
    if injecting:
        fault = _fault(engine, record, invoke, "before", None)
        if fault is not None:
            return Attempt(False, None, None, fault, classify(engine, tool, fault))
    ok, raw = yield invoke
    if injecting and ok:
        fault = _fault(engine, record, invoke, "after", raw)
        if fault is not None:
            return Attempt(False, None, None, fault, classify(engine, tool, fault))
    return outcome_of(engine, tool, ok, raw)


def outcome_of(engine: RAC, tool: str, ok: bool, raw: Any) -> Attempt:
    """What an attempt that returned ``raw`` (``ok``) or raised it is (the driver's answer to
    an :class:`rac.effects.Invoke`)."""
    if ok:
        return read_result(engine, tool, raw)
    return Attempt(False, None, None, raw, classify(engine, tool, raw))


def _fault(engine: RAC, record: Record | None, invoke: Invoke, phase: str,
           result: Any) -> BaseException | None:
    """The exception a fault injector ends this attempt with, or None."""
    assert record is not None
    fault = engine.hooks.first("rac_inject_fault", record=record.shown(),
                               args=dict(invoke.args), phase=phase, result=result)
    return fault if isinstance(fault, BaseException) else None
