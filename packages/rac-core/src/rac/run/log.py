"""A run's writes to the transaction log: records and the run's own row, each status change
checked against the lifecycle tables, written to the store first, then to the run's copy, then
announced (one structlog event, and the notification hooks)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from rac.events import info_enabled, run_logger
from rac.lifecycle import check_record, check_run
from rac.models import Record, RecordStatus, RunInfo, RunStatus

if TYPE_CHECKING:
    from rac.engine import RAC

_BAD = (RecordStatus.FAILED, RecordStatus.COMPENSATION_FAILED, RecordStatus.IN_DOUBT)


class RunLog:
    """The records of one run as it writes them, and its status.

    The store is the truth; ``records`` is this process's copy (seq -> record), changed only
    after the store accepted the write. Thread-safe under ``lock`` (the run's lock).
    """

    def __init__(self, engine: RAC, run_id: str, agent_id: str,
                 lock: threading.RLock) -> None:
        self.engine = engine
        self.run_id = run_id
        self.agent_id = agent_id
        self.lock = lock
        self.records: dict[int, Record] = {}
        self.status = RunStatus.RUNNING
        self._events: Any = None
        #: whether info-level events go anywhere (decided when the run starts)
        self.info = True

    # -- the run's row -----------------------------------------------------------------------
    def create(self) -> None:
        """Write the run's row (``running``) and announce it."""
        now = self.engine.clock.now()
        self.engine.store.create_run(RunInfo(self.run_id, self.agent_id, RunStatus.RUNNING,
                                             now, now, self.engine.owner))
        self.info = info_enabled()
        self.event("rac.run", status=str(RunStatus.RUNNING), agent_id=self.agent_id)
        hooks = self.engine.hooks
        if hooks.listened("rac_run_status_changed"):
            hooks.notify("rac_run_status_changed", run_id=self.run_id,
                         status=RunStatus.RUNNING, previous=None)

    def set_status(self, status: RunStatus) -> None:
        """Change the run's status (a legal change only; the same status is no change)."""
        previous = self.status
        if previous is status:
            return
        check_run(self.run_id, previous, status)
        self.engine.store.update_run(self.run_id, status=status,
                                     updated_at=self.engine.clock.now())
        self.status = status
        attention = status is RunStatus.NEEDS_ATTENTION
        self.event("rac.run", level="warning" if attention else "info", status=str(status),
                   previous=str(previous))
        hooks = self.engine.hooks
        if hooks.listened("rac_run_status_changed"):
            hooks.notify("rac_run_status_changed", run_id=self.run_id, status=status,
                         previous=previous)

    # -- records -------------------------------------------------------------------------------
    def append(self, rec: Record) -> None:
        """Write a new record (the intent of a call, or a refusal)."""
        self.engine.store.append(rec)
        self.records[rec.seq] = rec
        self._announce(rec, None)

    def update(self, rec: Record, **fields: Any) -> None:
        """Change fields of a record; a status change must be legal (see
        :mod:`rac.lifecycle`)."""
        previous = rec.status
        new = fields.get("status")
        if new is not None:
            check_record(rec, previous, new)
        fields["updated_at"] = self.engine.clock.now()
        self.engine.store.update_record(self.run_id, rec.seq, **fields)
        for k, v in fields.items():
            setattr(rec, k, v)
        if new is not None and (new is not previous or new is RecordStatus.COMPENSATING):
            self._announce(rec, previous)

    def _announce(self, rec: Record, previous: RecordStatus | None) -> None:
        bad = rec.status in _BAD
        if bad or self.info:
            self.event("rac.record", level="warning" if bad else "info", seq=rec.seq,
                       tool=rec.tool, kind=str(rec.kind), status=str(rec.status),
                       agent_id=rec.agent_id, attempts=rec.attempts, error=rec.error)
        hooks = self.engine.hooks
        if hooks.listened("rac_record_written"):
            shown = rec.copy()
            shown.undo = None  # undo data is never handed out: it may hold secrets
            hooks.notify("rac_record_written", record=shown,
                         previous=str(previous) if previous is not None else None)

    # -- events --------------------------------------------------------------------------------
    def event(self, event: str, *, level: str = "info", **fields: Any) -> None:
        """Emit one event on this run's logger (``run_id`` is bound)."""
        if level == "info" and not self.info:
            return
        if self._events is None:
            self._events = run_logger(run_id=self.run_id)[0]
        getattr(self._events, level)(event, **fields)
