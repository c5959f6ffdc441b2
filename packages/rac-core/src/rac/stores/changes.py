"""The changes of one step, committed together: what :meth:`rac.stores.CommitStore.commit`
takes, and :func:`commit`, which writes them to any store.

A step of a run (a call's intent, a call's outcome with the next call's intent, a
compensation's status changes) is a short list of changes. A store with the ``commit``
capability writes the list in one transaction: all of it or none of it, one durable commit
(one fsync on SQLite, one ``COMMIT`` on PostgreSQL). A store without it (a third-party store
written against the plain :class:`rac.stores.Store` protocol) gets the same changes as the
calls of that protocol, one by one, as before ``commit`` existed.

``durable=False`` asks for a commit that survives the crash of the process but may be lost in
a power cut or an operating-system crash (SQLite: no fsync; PostgreSQL: ``synchronous_commit``
off). RAC asks for it only for what it can afford to lose: what such a commit held is, after a
power cut, read by recovery as "may have happened" (an intent without an outcome), never as
"did not happen" (see docs/reliability.md, "What a power cut can lose").
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rac.errors import ConflictError, LeaseLostError
from rac.models import Record, RecordStatus, RunInfo

# The changes are plain slotted classes, not frozen ones: a frozen dataclass sets each field
# through object.__setattr__, which costs a step of a call more than the rest of its change.
# Nothing changes a change once it is made.

__all__ = ["Append", "Change", "CreateRun", "Fence", "UpdateRecord", "UpdateRun", "coalesce",
           "commit",
           "expect_fallback", "fence_fallback", "status_changed"]


@dataclass(slots=True)
class CreateRun:
    """Add a run (a ConflictError if its id exists)."""

    run: RunInfo


@dataclass(slots=True)
class Append:
    """Add a record (a ConflictError if ``(run_id, seq)`` exists)."""

    record: Record


@dataclass(slots=True)
class UpdateRecord:
    """Change fields of a record (a KeyError if it does not exist; a
    :class:`rac.LifecycleError` for a status change the lifecycle tables forbid).

    ``expect``: compare-and-set, the change applies only while the record's status is still
    ``expect`` (else a :class:`rac.errors.ConflictError` naming the status found): two
    writers that read the same status cannot both write over it (``rac resolve`` twice)."""

    run_id: str
    seq: int
    fields: Mapping[str, Any] = field(default_factory=dict)
    expect: RecordStatus | None = None


@dataclass(slots=True)
class UpdateRun:
    """Change fields of a run (a KeyError if it does not exist; a :class:`rac.LifecycleError`
    for a status change the lifecycle tables forbid)."""

    run_id: str
    fields: Mapping[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Fence:
    """Refuse the whole commit unless ``owner`` still holds the run, and renew its lease to
    ``lease_until`` (None: leave it). A process whose lease expired and whose run another
    process claimed gets :class:`rac.errors.LeaseLostError`: its late writes never reach the
    log."""

    run_id: str
    owner: str
    lease_until: float | None = None


Change = CreateRun | Append | UpdateRecord | UpdateRun | Fence


def coalesce(changes: Sequence[Change]) -> list[Change]:
    """The same changes with fewer statements: an :class:`Append` followed, in the same
    commit, by updates of the record it adds becomes one ``Append`` of the record as updated
    (a new record needs no status check against the log: the writer checked its changes).
    Everything else stays as it is, in order."""
    out: list[Change] = []
    added: dict[tuple[str, int], int] = {}
    for change in changes:
        if type(change) is Append:
            added[(change.record.run_id, change.record.seq)] = len(out)
        elif type(change) is UpdateRecord and change.expect is None:
            at = added.get((change.run_id, change.seq))
            if at is not None:
                first = out[at]
                assert isinstance(first, Append)
                if all(getattr(first.record, k) == v for k, v in change.fields.items()):
                    continue  # the record appended holds the update already (a writer's own)
                merged = copy.copy(first.record)
                for name, value in change.fields.items():
                    setattr(merged, name, value)
                out[at] = Append(merged)
                continue
        out.append(change)
    return out


def commit(store: Any, changes: Sequence[Change], *, durable: bool = True) -> None:
    """Write ``changes`` to ``store``: in one transaction when it has the ``commit``
    capability, else with the :class:`rac.stores.Store` calls one by one (not atomic: a
    third-party store keeps the guarantees it had)."""
    if not changes:
        return
    own = getattr(store, "commit", None)
    if own is not None and "commit" in getattr(store, "capabilities", ()):
        own(changes, durable=durable)
        return
    for change in changes:
        if type(change) is Append:
            store.append(change.record)
        elif type(change) is UpdateRecord:
            if change.expect is not None:
                expect_fallback(store, change)
            store.update_record(change.run_id, change.seq, **change.fields)
        elif type(change) is UpdateRun:
            store.update_run(change.run_id, **change.fields)
        elif type(change) is CreateRun:
            store.create_run(change.run)
        elif type(change) is Fence:
            fence_fallback(store, change)
        else:
            raise TypeError(f"not a change of the log: {change!r}")


def fence_fallback(store: Any, fence: Fence) -> None:
    """A :class:`Fence` on a store without the ``commit`` capability: read the owner, refuse if
    it changed, renew the lease (two calls, not atomic with the writes that follow)."""
    info = store.get_run(fence.run_id)
    if info is None:
        raise KeyError(fence.run_id)
    if info.owner != fence.owner:
        raise lease_lost(fence.run_id, fence.owner, info.owner)
    if fence.lease_until is not None:
        store.update_run(fence.run_id, lease_until=fence.lease_until)


def expect_fallback(store: Any, change: UpdateRecord) -> None:
    """An :class:`UpdateRecord` with ``expect`` on a store without the ``commit`` capability:
    read the record's status, refuse if it changed (not atomic with the write that follows)."""
    rec = next((r for r in store.get_records(change.run_id) if r.seq == change.seq), None)
    if rec is None:
        raise KeyError(f"{change.run_id}#{change.seq}")
    if rec.status is not change.expect:
        raise status_changed(change, rec.status)


def status_changed(change: UpdateRecord, found: Any) -> ConflictError:
    """The error of a refused compare-and-set: the status expected, the status found."""
    return ConflictError(
        f"record {change.run_id}#{change.seq} is {found} now, no longer {change.expect}: "
        "another writer changed it since it was read, so this write was refused")


def lease_lost(run_id: str, owner: str, holder: str | None) -> LeaseLostError:
    """The error of a refused fence: who wrote, who holds the run now."""
    now = f"it is now held by {holder}" if holder else "it was released"
    return LeaseLostError(
        f"run {run_id}: this process ({owner}) no longer holds the run ({now}); its lease ran "
        "out and another process took the run over, so this write was refused. Whatever this "
        "process did since is the new holder's to settle.")
