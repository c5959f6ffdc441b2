"""The store protocol: what a transaction log backend must do. ``rac.testing.store_conformance``
checks any implementation against it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol, runtime_checkable

from rac.models import Record, RunInfo, RunStatus

__all__ = ["Store", "status_set"]


@runtime_checkable
class Store(Protocol):
    """A durable (or, for tests, in-memory) transaction log.

    Writes are atomic per call. ``append`` never overwrites: a second record at the same
    ``(run_id, seq)`` raises :class:`rac.errors.ConflictError`. ``update_record`` takes any
    record field by keyword (``status``, ``result``, ``effect``, ``undo``, ...); ``undo`` is
    stored exactly as given, never redacted or truncated. Reads return copies the caller may
    change freely. What a store offers beyond this protocol it declares as a capability
    (:mod:`rac.stores.capabilities`).
    """

    url: str

    def create_run(self, run: RunInfo) -> None:
        """Add a run; raises ConflictError if the run id exists."""
        ...

    def get_run(self, run_id: str) -> RunInfo | None:
        """The run with this id, or None."""
        ...

    def list_runs(self, status: RunStatus | Iterable[RunStatus] | None = None,
                  limit: int | None = None) -> list[RunInfo]:
        """Runs, newest first, optionally only those with the given status(es)."""
        ...

    def update_run(self, run_id: str, **fields: Any) -> None:
        """Change fields of a run (status, summary, owner, lease_until, updated_at)."""
        ...

    def claim_run(self, run_id: str, owner: str, now: float, lease_seconds: float) -> bool:
        """Atomically make ``owner`` the run's owner if nobody holds an unexpired lease
        (compare-and-set). True if the claim succeeded."""
        ...

    def append(self, record: Record) -> None:
        """Add a record; raises ConflictError if ``(run_id, seq)`` exists."""
        ...

    def update_record(self, run_id: str, seq: int, **fields: Any) -> None:
        """Change fields of an existing record; raises KeyError if it does not exist."""
        ...

    def get_records(self, run_id: str) -> list[Record]:
        """All records of a run in seq order."""
        ...

    def close(self) -> None:
        """Release connections and files."""
        ...


def status_set(status: RunStatus | Iterable[RunStatus] | str | None) -> set[RunStatus] | None:
    """The run statuses a ``list_runs(status=...)`` argument asks for (None: every status)."""
    if status is None:
        return None
    if isinstance(status, str):
        return {RunStatus(status)}
    return {RunStatus(s) for s in status}
