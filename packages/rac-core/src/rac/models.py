"""The records of the transaction log: one per tool call and one per compensating call, plus runs."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class RecordStatus(StrEnum):
    """Where a log record stands.

    An action goes ``pending`` (intent written, outcome unknown) to ``completed`` or ``failed``;
    a completed action that is rolled back goes ``compensating`` then ``compensated`` or
    ``compensation_failed`` (a dead letter that ``rac resume`` retries). A compensation record
    goes ``pending`` to ``completed`` or ``failed``.
    """

    PENDING = "pending"
    COMPLETED = "completed"
    FAILED = "failed"
    COMPENSATING = "compensating"
    COMPENSATED = "compensated"
    COMPENSATION_FAILED = "compensation_failed"
    #: The call may or may not have taken effect (an ambiguous failure nothing could settle).
    IN_DOUBT = "in_doubt"
    #: An operator settled a record by hand (``rac resolve``), with who and why in ``note``.
    RESOLVED = "resolved"


class RunStatus(StrEnum):
    """Where a run (a transaction scope) stands."""

    RUNNING = "running"
    COMPLETED = "completed"
    COMPENSATING = "compensating"
    COMPENSATED = "compensated"
    NEEDS_ATTENTION = "needs_attention"
    #: An operator settled what a rollback left live (``rac resolve``).
    RESOLVED = "resolved"


class RecordKind(StrEnum):
    """An ``action`` is a tool call the agent made; a ``compensation`` undoes one."""

    ACTION = "action"
    COMPENSATION = "compensation"


@dataclass(slots=True)
class Record:
    """One entry of the transaction log.

    ``(run_id, seq)`` identifies it. ``args`` and ``result`` are JSON-safe, redacted copies.
    ``compensable`` is False for a side effect RAC cannot undo (no compensator);
    ``read_only`` marks a call with no side effect. ``compensates`` is the seq of the action a
    compensation undoes; ``alternative_of`` the seq of the call an alternative stood in for.
    """

    run_id: str
    seq: int
    tool: str
    kind: RecordKind = RecordKind.ACTION
    status: RecordStatus = RecordStatus.PENDING
    agent_id: str = "agent"
    scope: str = "0"
    args: dict[str, Any] = field(default_factory=dict)
    result: Any = None
    error: str | None = None
    attempts: int = 0
    idempotency_key: str = ""
    depends_on: list[int] = field(default_factory=list)
    compensates: int | None = None
    alternative_of: int | None = None
    compensable: bool = True
    read_only: bool = False
    note: str | None = None
    created_at: float = 0.0
    updated_at: float = 0.0
    #: The tool's effect class when it was called (``read_only``, ``idempotent``, ``keyed``,
    #: ``unsafe``; see :class:`rac.Effect`); empty in logs written before effect classes
    #: existed. An irreversible tool's record also has ``compensable`` False.
    effect: str = ""
    #: What undoing this record needs, exactly as the call had it (mapped fields of the
    #: arguments and result, the before-image): never redacted or truncated, kept out of
    #: displays and events, encrypted at rest when the store has a key. None when nothing is
    #: needed beyond ``args``/``result``.
    undo: dict[str, Any] | None = None
    #: The framework's own id of the call (a model's ``tool_call_id``), when the adapter gave
    #: one: a resumed agent that repeats a call is matched to its record by it, in any process,
    #: so two identical calls are two calls. Empty for calls with no such id, and in logs
    #: written before it existed.
    call_id: str = ""
    #: Whether the call's effect happened, as evidence stands: ``"yes"``, ``"no"`` (evidence
    #: says it did not: an error before any effect, a refusal, a lookup), ``"maybe"`` (it may
    #: have: an intent with no outcome, an ambiguous failure nothing settled), kept through
    #: compensation, dead letters, crashes and resumes (the reason is in ``note``/``error``).
    #: Written with every status change (see :func:`rac.lifecycle.happened_after`); empty in
    #: logs written before it existed and on the fast path's plain successes: then
    #: :func:`rac.lifecycle.happened_of` derives it. For a compensation record: whether the
    #: undo took effect.
    happened: str = ""

    def copy(self) -> Record:
        """A shallow copy whose lists are not shared."""
        return Record(self.run_id, self.seq, self.tool, self.kind, self.status, self.agent_id,
                      self.scope, self.args, self.result, self.error, self.attempts,
                      self.idempotency_key, list(self.depends_on), self.compensates,
                      self.alternative_of, self.compensable, self.read_only, self.note,
                      self.created_at, self.updated_at, self.effect,
                      dict(self.undo) if self.undo is not None else None, self.call_id,
                      self.happened)

    def shown(self) -> Record:
        """A copy to hand out (to plugins, listeners, displays): without the undo data, which
        may hold secrets."""
        shown = self.copy()
        shown.undo = None
        return shown

    def to_dict(self) -> dict[str, Any]:
        """The record as a JSON-safe dict (enums as their values), ``undo`` included: this is
        what stores write. Never display or emit it as is (``rac show`` uses
        :func:`rac.cli.render.record_json`, which leaves the undo data out)."""
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["kind"] = str(self.kind)
        d["status"] = str(self.status)
        d["depends_on"] = list(self.depends_on)
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Record:
        """Build a record from :meth:`to_dict` output (unknown keys are ignored)."""
        names = {f.name for f in dataclasses.fields(cls)}
        kw = {k: v for k, v in data.items() if k in names}
        kw["kind"] = RecordKind(kw.get("kind", "action"))
        kw["status"] = RecordStatus(kw.get("status", "pending"))
        kw["depends_on"] = list(kw.get("depends_on") or [])
        return cls(**kw)


#: ``RunInfo.lease_until`` of a run its owner has left (its ``with`` block ended while the run
#: was not completed, or a recoverer finished with it): nobody works on it any more.
RELEASED = -1.0


@dataclass(slots=True)
class RunInfo:
    """A run as the log knows it: who owns it, its status, and a lease: 0 for none, a time
    until which a holder works on it, or :data:`RELEASED` once its owner has left it."""

    run_id: str
    agent_id: str = "agent"
    status: RunStatus = RunStatus.RUNNING
    created_at: float = 0.0
    updated_at: float = 0.0
    owner: str | None = None
    lease_until: float = 0.0
    summary: str | None = None
    #: The text of the run's last rollback report as the agent reads it (redacted): what it
    #: was told when a call of the run failed, or what recovery or an undo reported.
    report: str | None = None

    def copy(self) -> RunInfo:
        """A copy that can be changed without touching the original."""
        return RunInfo(self.run_id, self.agent_id, self.status, self.created_at, self.updated_at,
                       self.owner, self.lease_until, self.summary, self.report)

    def to_dict(self) -> dict[str, Any]:
        """The run as a JSON-safe dict."""
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["status"] = str(self.status)
        return d


@dataclass(slots=True)
class PairRecord:
    """A compensation pair kept in the log's store (pairs proposed by a model, with the
    operator's verdict), so that it is asked for once per tool pair and recovery needs no model.

    ``key`` identifies the pair: the tool, its compensator and ``schema_hash`` (a hash of both
    tools' schemas: a changed schema is a new pair). ``args`` maps each compensator parameter to
    a path (``"result.booking_id"``). ``status`` is ``proposed`` (waiting for approval),
    ``approved`` (in use), ``rejected`` or ``recorded`` (kept, never used).
    """

    key: str
    tool: str
    compensator: str
    args: dict[str, str] = field(default_factory=dict)
    source: str = "llm"
    status: str = "proposed"
    schema_hash: str = ""
    note: str | None = None
    created_at: float = 0.0
    updated_at: float = 0.0

    def copy(self) -> PairRecord:
        """A copy that can be changed without touching the original."""
        return PairRecord(self.key, self.tool, self.compensator, dict(self.args), self.source,
                          self.status, self.schema_hash, self.note, self.created_at,
                          self.updated_at)

    def to_dict(self) -> dict[str, Any]:
        """The pair as a JSON-safe dict."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
