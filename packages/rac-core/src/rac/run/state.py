"""A run's bookkeeping in one object: :class:`RunState`, the one owner of what this process
knows of a run beyond its log (the calls under way, the rollbacks under way and what they
doom or claim, the model turns seen, the values calls had, the dependency index).

It is a state machine without I/O, in the manner of h11's connection state: the run's driver
(:class:`rac.run.Run` and the modules of :mod:`rac.run`) tells it what happened through its
event methods, and the methods that decide the run's next status return it for the driver to
write (read from :data:`rac.lifecycle.RUN_EVENTS` and
:func:`rac.lifecycle.status_after_rollback`, the only places a run's status is decided). The
driver writes first, then applies: an event that needs a write (a call's intent, a rollback's
start) is applied once the write succeeded, so a failed write leaves the bookkeeping as it
was. The one exception is a call's end: it is no longer under way once it returned, whether
or not its outcome reached the log (the log then holds its intent: in doubt for recovery).

Nothing here takes a lock: the driver calls it under the run's lock (``Run.lock``). Tests can
drive it alone.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection, Iterable, Mapping, Set
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from rac.dependencies import DependencyIndex
from rac.lifecycle import RUN_EVENTS, RunEvent, in_scope, run_after, status_after_rollback
from rac.models import Record, RecordKind, RecordStatus, RunStatus
from rac.run.planning import RollbackPlan, plan_rollback

if TYPE_CHECKING:
    from rac.report import RecoveryReport

_CALL_BEGAN = RunEvent.CALL_BEGAN  # (a member off its class costs a lookup at each use)
#: How many parallel batches (model turns) a run remembers.
BATCH_MEMORY = 1024
#: What a call's undo may read: its argument and result fields (see values.needed_fields).
Needed = tuple[frozenset[str] | None, frozenset[str] | None]


class RunState:
    """What one process knows of a run beyond its log; see the module docstring.

    Reading: :attr:`busy`, :attr:`in_flight`, :attr:`rolling_back`,
    :attr:`rollbacks_started`, :attr:`interrupted`, :attr:`last_report`, :attr:`live`,
    :meth:`dependencies`. Deciding (no change made): :meth:`reopens`, :meth:`step_done`,
    :meth:`rollback_status`, :meth:`rollback_outcome`, :meth:`resolved`. Events: a call
    began (:meth:`call_began`), ended (:meth:`call_succeeded`, :meth:`call_ended`,
    :meth:`call_interrupted`), its effect was found (:meth:`effect_found`), a doomed call
    settled (:meth:`doom_lifted`), a rollback began and ended (:meth:`rollback_began`,
    :meth:`rollback_ended`, :meth:`rollback_reported`), a batch was seen
    (:meth:`batch_refusal`).
    """

    __slots__ = ("_batches", "_claimed", "_deps", "_doomed", "_in_flight", "_interrupted",
                 "_last_report", "_live", "_needs", "_next_seq", "_rollbacks",
                 "_rollbacks_started")

    def __init__(self, *, next_seq: int = 1) -> None:
        self._next_seq = next_seq
        self._in_flight: set[int] = set()
        #: seq -> scope of a rollback that began while the call ran (undone when it returns)
        self._doomed: dict[int, str] = {}
        #: seqs a rollback is undoing (no two rollbacks undo one effect)
        self._claimed: set[int] = set()
        #: the scopes of the rollbacks under way, oldest first
        self._rollbacks: list[str] = []
        self._rollbacks_started = 0
        #: calls an interruption (not control flow) left pending: in doubt until recovery
        self._interrupted: set[int] = set()
        #: seq -> (args, value) as the call had them, in this process
        self._live: dict[int, tuple[dict[str, Any], Any]] = {}
        #: batch -> how many rollbacks had begun when its first call came
        self._batches: OrderedDict[Any, int] = OrderedDict()
        #: seq -> the argument and result fields its undo may read
        self._needs: dict[int, Needed] = {}
        self._deps = DependencyIndex()
        self._last_report: RecoveryReport | None = None

    # -- reading ---------------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        """True while a call is under way (its intent written, its outcome not yet)."""
        return bool(self._in_flight)

    @property
    def in_flight(self) -> Set[int]:
        """The seqs of the calls under way (a read-only view)."""
        return self._in_flight

    @property
    def rolling_back(self) -> bool:
        """True while a rollback is under way, or a call it doomed has not settled."""
        return bool(self._rollbacks or self._doomed)

    @property
    def rollbacks_started(self) -> int:
        """How many rollbacks of the run began in this process."""
        return self._rollbacks_started

    @property
    def interrupted(self) -> bool:
        """True once an interruption left a call of the run in doubt."""
        return bool(self._interrupted)

    @property
    def last_report(self) -> RecoveryReport | None:
        """The report of the run's last rollback in this process, if any."""
        return self._last_report

    @property
    def live(self) -> Mapping[int, tuple[dict[str, Any], Any]]:
        """seq -> (args, value) as the call had them in this process (a read-only view)."""
        return MappingProxyType(self._live)

    def dependencies(self, args: Mapping[str, Any], *, owned: bool = False) -> list[int]:
        """The seqs of earlier calls whose results ``args`` use (see
        :meth:`rac.dependencies.DependencyIndex.dependencies`)."""
        return self._deps.dependencies(args, owned=owned)

    # -- deciding: the run's next status -----------------------------------------------------
    def reopens(self, status: RunStatus) -> RunStatus | None:
        """The run's status once a call begins, or None for no change: an idle run
        (completed, rolled back cleanly, resolved) is running again; ``needs_attention``
        stays, and so does a run whose rollback waits for a doomed call."""
        new = RUN_EVENTS.get((status, _CALL_BEGAN), status)  # run_after, inlined: every call
        return new if new is not status and not self._doomed else None

    def step_done(self, status: RunStatus) -> RunStatus:
        """The run's status once a step of it is done (its block closed, its adapter finished
        it): completed if it was running, unless an interruption left a call in doubt (it
        stays running, for recovery). Whether a busy run may be marked is its driver's
        choice."""
        return status if self._interrupted else run_after(status, RunEvent.STEP_DONE)

    @staticmethod
    def rollback_status(status: RunStatus) -> RunStatus:
        """The run's status while a rollback is under way."""
        return run_after(status, RunEvent.ROLLBACK_BEGAN)

    def rollback_outcome(self, scope: str, records: Iterable[Record]) -> RunStatus:
        """The run's status once the rollback of ``scope`` did what it could (see
        :func:`rac.lifecycle.status_after_rollback`)."""
        return status_after_rollback(records, scope, running=self._in_flight,
                                     unsettled=set(self._doomed) | self._claimed)

    @staticmethod
    def resolved(status: RunStatus, clear: bool) -> RunStatus | None:
        """The run's status once an operator resolved a record of it, or None for no change:
        resolved once nothing of it is live (``clear``)."""
        if not clear:
            return None
        new = run_after(status, RunEvent.RESOLVED)
        return new if new is not status else None

    # -- a call ----------------------------------------------------------------------------------
    def next_seq(self) -> int:
        """Number a new record."""
        seq = self._next_seq
        self._next_seq = seq + 1
        return seq

    def batch_refusal(self, batch: Any, tool: str) -> str | None:
        """Why a call of ``batch`` may not start (a rollback began after the batch's first
        call), or None; remembers the batch."""
        epoch = self._batches.get(batch)
        if epoch is None:
            self._batches[batch] = self._rollbacks_started
            if len(self._batches) > BATCH_MEMORY:
                self._batches.popitem(last=False)
            return None
        if self._rollbacks_started > epoch:
            report = self._last_report
            what = f" ({report.failed_tool} failed)" if report and report.failed_tool else ""
            return (f"not run: {tool} was asked for in the same model turn as a call that "
                    f"failed{what}, and this run was rolled back; nothing of {tool} happened. "
                    "Replan from the report.")
        return None

    def call_began(self, seq: int, scope: str, needed: Needed | None) -> None:
        """The intent of call ``seq`` of ``scope`` is written: it is under way; ``needed``
        says what its undo may read. A call that begins while a rollback of its scope is
        under way is doomed: undone when it returns."""
        self._in_flight.add(seq)
        if needed is not None:
            self._needs[seq] = needed
        for active in self._rollbacks:
            if in_scope(scope, active):
                self._doomed[seq] = active
                return

    def note_needed(self, seq: int, needed: Needed) -> None:
        """What the undo of call ``seq``, under way, may read (noted after its intent)."""
        self._needs[seq] = needed

    def needed(self, seq: int) -> Needed | None:
        """What the undo of call ``seq`` may read, forgotten as it is read (its call ended)."""
        return self._needs.pop(seq, None)

    def call_succeeded(self, rec: Record, args: dict[str, Any], value: Any, *,
                       keep_live: bool, produces: Iterable[str] | None = None,
                       owned: bool = False) -> bool:
        """Call ``rec`` returned ``value`` (``args``: what it was called with): it is no longer
        under way, its result is indexed for the calls that use it, and with ``keep_live``
        this process keeps its exact arguments and value. ``owned``: ``args`` and ``value``
        are the log's own exact copies, which nobody changes, so indexing them may wait for
        the next lookup. True if a rollback doomed it: it is claimed for its undo (the caller
        undoes it, then :meth:`doom_lifted`)."""
        seq = rec.seq
        self._in_flight.discard(seq)
        if self._needs:  # what its undo may read, unless the driver read it already
            self._needs.pop(seq, None)
        if keep_live:
            self._live[seq] = (args, value)
        if not rec.read_only:
            if owned:
                self._deps.add_result_later(seq, value, args, fields=produces)
            else:
                self._deps.add_result(seq, value, args, fields=produces)
        if seq in self._doomed:
            self._claimed.add(seq)
            return True
        return False

    def call_succeeded_later(self, seq: int, stored: Any, args: Mapping[str, Any],
                             produces: Iterable[str] | None) -> None:
        """:meth:`call_succeeded` of a plain call whose log copies are exact (the shortcut of
        :mod:`rac.run.fast`): its result is indexed when a later call needs it."""
        self._in_flight.discard(seq)
        self._deps.add_result_later(seq, stored, args, fields=produces)

    def call_ended(self, seq: int) -> None:
        """Call ``seq`` ended without a success (it failed, or may have happened): it is no
        longer under way. Its driver then settles it (:meth:`doom_lifted`)."""
        self._in_flight.discard(seq)

    def call_interrupted(self, seq: int, *, in_doubt: bool) -> None:
        """An interruption stopped call ``seq``: it is no longer under way; ``in_doubt``: it
        left the call pending (a crash, a cancellation, not a declared pass-through), so a
        finished step leaves the run running, for recovery. Its driver then settles it
        (:meth:`doom_lifted`)."""
        self._in_flight.discard(seq)
        if in_doubt:
            self._interrupted.add(seq)

    def effect_found(self, rec: Record, args: dict[str, Any], value: Any) -> None:
        """A lookup found the effect of call ``rec`` (made with ``args``): ``value`` is its
        result, as if the call had returned it."""
        self._live[rec.seq] = (args, value)
        if not rec.read_only:
            self._deps.add_result(rec.seq, value, args)

    def loaded(self, rec: Record) -> None:
        """A record read back from the log (a rebuilt run): a completed action's result is
        indexed for the calls that use it."""
        if rec.kind is RecordKind.ACTION and rec.status is RecordStatus.COMPLETED \
                and not rec.read_only:
            self._deps.add_result(rec.seq, rec.result, rec.args)

    def doom_lifted(self, seq: int, status: RunStatus, records: Iterable[Record]
                    ) -> tuple[bool, RunStatus | None]:
        """Call ``seq`` settled (its call ended, or its undo is done): it is neither doomed nor
        claimed any more. Returns whether it was doomed, and the run's final status once no
        rollback is under way and nothing doomed or claimed is left (None: no change)."""
        self._claimed.discard(seq)
        scope = self._doomed.pop(seq, None)
        if scope is None:
            return False, None
        if self._rollbacks or status is not RunStatus.COMPENSATING:
            return True, None
        new = status_after_rollback(records, scope, running=self._in_flight,
                                    unsettled=set(self._doomed) | self._claimed)
        return True, (new if new is not status else None)

    # -- a rollback ------------------------------------------------------------------------------
    def rollback_began(self, scope: str, records: Iterable[Record], *,
                       statuses: Collection[RecordStatus],
                       keep: Mapping[int, str] | None = None) -> RollbackPlan:
        """A rollback of ``scope`` began (its status is written): plan it over ``records``,
        claim what it undoes, doom the calls of the scope still under way."""
        self._rollbacks.append(scope)
        self._rollbacks_started += 1
        plan = plan_rollback(records, scope, running=self._in_flight, claimed=self._claimed,
                             statuses=statuses, keep=keep)
        self._claimed.update(r.seq for r in plan.order)
        for r in plan.running:
            self._doomed.setdefault(r.seq, scope)
        return plan

    def rollback_ended(self, scope: str, plan: RollbackPlan) -> None:
        """The rollback of ``scope`` (planned as ``plan``) stopped, done or not: what it
        claimed is free again."""
        self._rollbacks.remove(scope)
        self._claimed.difference_update(r.seq for r in plan.order)

    def rollback_reported(self, report: RecoveryReport, undone: Iterable[int]) -> None:
        """The rollback's outcome is written: ``report`` is the run's last report, and the
        results of the ``undone`` calls point at nothing any more."""
        self._deps.forget(list(undone))
        self._last_report = report


__all__ = ["BATCH_MEMORY", "Needed", "RunState"]
