"""The injection points of ``rac prove`` and the plugins that learn, inject and crash at them.

A point names one failure in one run of the user's scenario: the ``n``-th call of a tool fails
permanently before it runs, or takes effect and then times out; a compensation fails, or takes
effect and then times out; or the process is killed at a boundary of the log (after a call's
intent, after its effect, after its outcome, and around each compensation). The plugins work
through RAC's hooks only (``rac_inject_fault`` and the notifications), so they apply to every
adapter: whatever drives the calls, each attempt passes through RAC.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from rac.errors import PermanentError
from rac.hookspecs import hookimpl
from rac.models import Record, RecordKind, RecordStatus, RunStatus
from rac.report import RecoveryReport

PointKind = Literal["fail", "timeout_after", "undo_fails", "undo_timeout_after", "crash"]

#: Where a crash point kills the process, for an action and for a compensation.
ACTION_BOUNDARIES = ("after_intent", "after_effect", "after_outcome")
UNDO_BOUNDARIES = ("before_intent", "after_intent", "after_effect", "after_outcome",
                   "after_compensated")
#: The exit status of a child killed at a crash point.
CRASH_EXIT = 86

_WHAT = {
    "fail": "fails (permanent, before it runs)",
    "timeout_after": "times out after it took effect",
    "undo_fails": "fails (permanent, before it runs)",
    "undo_timeout_after": "times out after it took effect",
}


@dataclass(frozen=True, slots=True)
class Call:
    """One logical call of the scenario: the ``n``-th call of ``tool`` (1-based)."""

    tool: str
    n: int

    def __str__(self) -> str:
        return f"{self.tool}#{self.n}"


@dataclass(frozen=True, slots=True)
class Point:
    """One injection point.

    ``call`` is the action the point is about. For ``undo_*`` points and crash points during a
    rollback, ``undo`` is the compensator and the scenario runs with ``failing`` (the last call
    that has side effects) failing, so that the rollback reaches the compensation. ``at`` is a
    crash point's boundary (:data:`ACTION_BOUNDARIES`, :data:`UNDO_BOUNDARIES`).
    """

    kind: PointKind
    call: Call
    undo: str | None = None
    at: str | None = None
    failing: Call | None = None

    @property
    def faults_an_undo(self) -> bool:
        """True for a point that makes a compensation fail: there, an effect RAC names as
        still live is the expected, honest outcome."""
        return self.kind in ("undo_fails", "undo_timeout_after")

    @property
    def name(self) -> str:
        """A short, stable name (used as a test id)."""
        if self.kind == "crash":
            where = f"{self.undo} of {self.call}" if self.undo else str(self.call)
            return f"crash {where} {self.at}"
        if self.undo:
            return f"{self.kind} {self.undo} of {self.call}"
        return f"{self.kind} {self.call}"

    def describe(self) -> str:
        """The point in words."""
        if self.kind == "crash":
            where = (f"the undo of {self.call} ({self.undo})" if self.undo else str(self.call))
            run = f" (with {self.failing} failing)" if self.failing else ""
            return f"the process is killed at {where}, {self.at}{run}; recovery in a new one"
        if self.undo:
            return (f"{self.undo}, undoing {self.call}, {_WHAT[self.kind]}, while {self.failing}"
                    " fails")
        return f"{self.call} {_WHAT[self.kind]}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe form (:meth:`from_dict` reads it back)."""
        return {"kind": self.kind, "tool": self.call.tool, "n": self.call.n, "undo": self.undo,
                "at": self.at, "failing": [self.failing.tool, self.failing.n]
                if self.failing else None}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Point:
        """A point from :meth:`to_dict` output."""
        failing = data.get("failing")
        return cls(data["kind"], Call(data["tool"], int(data["n"])), data.get("undo"),
                   data.get("at"), Call(failing[0], int(failing[1])) if failing else None)


@dataclass(slots=True)
class Observed:
    """What one run of the scenario did, as RAC's hooks told it."""

    calls: list[Call] = field(default_factory=list)
    #: (action call, compensator) in the order the rollbacks ran them
    undos: list[tuple[Call, str]] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)
    reports: list[RecoveryReport] = field(default_factory=list)
    #: compensations that reported success: (action call, compensator, the action's result)
    undone: list[tuple[Call, str, Any]] = field(default_factory=list)
    #: run id -> seq -> call
    by_seq: dict[str, dict[int, Call]] = field(default_factory=dict)


class Observer:
    """Learns the scenario's calls, compensations, runs and rollback reports (no effect on the
    run). Calls are numbered per tool across the whole scenario, in the order their intents
    were written."""

    def __init__(self) -> None:
        self.seen = Observed()
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()
        self._results: dict[tuple[str, int], Any] = {}

    def call_of(self, run_id: str, seq: int) -> Call | None:
        """The logical call of action ``seq`` of ``run_id``, if it was seen."""
        return self.seen.by_seq.get(run_id, {}).get(seq)

    @hookimpl
    def rac_run_status_changed(self, run_id: str, status: RunStatus,
                               previous: RunStatus | None) -> None:
        with self._lock:
            if run_id not in self.seen.runs:
                self.seen.runs.append(run_id)

    @hookimpl
    def rac_record_written(self, record: Record, previous: str | None) -> None:
        with self._lock:
            if record.run_id not in self.seen.runs:
                self.seen.runs.append(record.run_id)
            if record.kind is RecordKind.ACTION:
                if previous is None and not record.read_only \
                        and record.status is RecordStatus.PENDING:
                    n = self._counts.get(record.tool, 0) + 1
                    self._counts[record.tool] = n
                    call = Call(record.tool, n)
                    self.seen.calls.append(call)
                    self.seen.by_seq.setdefault(record.run_id, {})[record.seq] = call
                if record.status is RecordStatus.COMPLETED:
                    self._results[(record.run_id, record.seq)] = record.result
                return
            action = self.seen.by_seq.get(record.run_id, {}).get(record.compensates or -1)
            if action is None:
                return
            if previous is None:
                self.seen.undos.append((action, record.tool))
            elif record.status is RecordStatus.COMPLETED:
                self.seen.undone.append((action, record.tool, self._results.get(
                    (record.run_id, record.compensates or -1))))

    @hookimpl
    def rac_rollback_finished(self, run_id: str, scope: str, report: RecoveryReport) -> None:
        with self._lock:
            self.seen.reports.append(report)


def _fault(kind: PointKind, what: str) -> BaseException:
    if kind in ("fail", "undo_fails"):
        return PermanentError(f"injected by rac prove: {what} failed before it ran")
    return TimeoutError(f"injected by rac prove: {what} timed out after it took effect")


class Injector:
    """Fails the attempts a point names, on every attempt (a fault that persists, so no retry
    budget can wait it out). Needs the :class:`Observer` registered beside it."""

    def __init__(self, point: Point, observer: Observer) -> None:
        self.point = point
        self.observer = observer
        self.hits = 0

    def _target(self, record: Record) -> tuple[PointKind, str] | None:
        point = self.point
        if record.kind is RecordKind.ACTION:
            call = self.observer.call_of(record.run_id, record.seq)
            if call is None:
                return None
            if point.failing is not None and (call == point.failing or self._stands_in(record)):
                return "fail", str(call)
            if point.undo is None and point.kind != "crash" and call == point.call:
                return point.kind, str(call)
            return None
        if point.undo is None or record.tool != point.undo or point.kind == "crash":
            return None
        action = self.observer.call_of(record.run_id, record.compensates or -1)
        if action == point.call:
            return point.kind, f"{record.tool} (undoing {action})"
        return None

    def _stands_in(self, record: Record) -> bool:
        """True for an alternative tried in place of the failing call (it fails too, so that
        the rollback the point needs happens)."""
        if record.alternative_of is None or self.point.failing is None:
            return False
        return self.observer.call_of(record.run_id, record.alternative_of) == self.point.failing

    @hookimpl
    def rac_inject_fault(self, record: Record, phase: str) -> BaseException | None:
        target = self._target(record)
        if target is None:
            return None
        kind, what = target
        wanted = "before" if kind in ("fail", "undo_fails") else "after"
        if phase != wanted:
            return None
        self.hits += 1
        return _fault(kind, what)


class CrashAt:
    """Ends the process with ``os._exit`` (no cleanup, no flush: what a kill leaves) when the
    scenario reaches the point's boundary. Writes the run ids it saw to ``runs_file`` first, so
    the recovering process knows which runs were cut off."""

    def __init__(self, point: Point, observer: Observer, runs_file: Path) -> None:
        self.point = point
        self.observer = observer
        self.runs_file = runs_file

    def _crash(self) -> None:
        self.runs_file.write_text(json.dumps(self.observer.seen.runs))
        os._exit(CRASH_EXIT)

    def _is_call(self, record: Record) -> bool:
        return self.observer.call_of(record.run_id, record.seq) == self.point.call

    def _is_undo(self, record: Record) -> bool:
        action = self.observer.call_of(record.run_id, record.compensates or -1)
        return action == self.point.call and record.tool == self.point.undo

    @hookimpl
    def rac_inject_fault(self, record: Record, phase: str) -> BaseException | None:
        if phase != "after" or self.point.at != "after_effect":
            return None
        if record.kind is RecordKind.ACTION and self.point.undo is None \
                and self._is_call(record):
            self._crash()
        if record.kind is RecordKind.COMPENSATION and self.point.undo is not None \
                and self._is_undo(record):
            self._crash()
        return None

    @hookimpl(trylast=True)
    def rac_record_written(self, record: Record, previous: str | None) -> None:
        at, undo = self.point.at, self.point.undo
        if record.kind is RecordKind.ACTION:
            if not self._is_call(record):
                return
            if undo is None:
                if (at == "after_intent" and previous is None) or (
                        at == "after_outcome" and record.status is RecordStatus.COMPLETED):
                    self._crash()
            elif (at == "before_intent" and record.status is RecordStatus.COMPENSATING) or (
                    at == "after_compensated" and record.status is RecordStatus.COMPENSATED):
                self._crash()
            return
        if undo is None or not self._is_undo(record):
            return
        if (at == "after_intent" and previous is None) or (
                at == "after_outcome" and record.status is RecordStatus.COMPLETED):
            self._crash()


__all__ = ["ACTION_BOUNDARIES", "CRASH_EXIT", "Call", "CrashAt", "Injector", "Observed",
           "Observer", "Point", "PointKind", "UNDO_BOUNDARIES"]
