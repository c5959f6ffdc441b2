"""One attempt at a tool call, read the way RAC reads every attempt: the raw result
normalised (``rac_normalize_result``), checked for a failure it describes
(``rac_detect_result_error``), and a failure classified (``rac_classify_error``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rac.classify import Classification, ErrorKind
from rac.effects import Flow, Invoke

if TYPE_CHECKING:
    from rac.engine import RAC


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
    value = hooks.first("rac_normalize_result", tool=tool, result=raw)
    if value is None:
        value = raw
    err = hooks.first("rac_detect_result_error", tool=tool, result=value)
    if err is None:
        return Attempt(True, raw, value)
    return Attempt(False, raw, value, err, classify(engine, tool, err))


def classify(engine: RAC, tool: str, error: BaseException) -> Classification:
    """How RAC treats ``error`` (a plugin's answer, else permanent as a fallback)."""
    found = engine.hooks.first("rac_classify_error", tool=tool, error=error)
    if isinstance(found, Classification):
        return found
    return Classification(ErrorKind.PERMANENT, reason="no classifier answered", fallback=True)


def attempt(engine: RAC, tool: str, invoke: Invoke) -> Flow[Attempt]:
    """Make one attempt through the driver and read it."""
    ok, raw = yield invoke
    if ok:
        return read_result(engine, tool, raw)
    return Attempt(False, None, None, raw, classify(engine, tool, raw))
