"""Optional store capabilities: what a store may offer beyond the :class:`rac.stores.Store`
protocol, declared by name and checked with :func:`supports`.

A store declares what it offers in a ``capabilities`` attribute (a frozenset of names) and
implements the matching protocol. Code that needs a capability asks :func:`supports` first and
falls back (or refuses clearly) when the store lacks it. The conformance suite
(:mod:`rac.testing.conformance`) runs each capability's tests on every store that declares it.

=============  =======================  ====================================================="""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from rac.models import PairRecord, RunInfo, RunStatus

if TYPE_CHECKING:
    from rac.stores.changes import Change

__all__ = ["CAPABILITIES", "COMMIT", "PAIRS", "CommitStore", "PairStore", "RUN_QUERY",
           "RunFilter", "RunQueryStore", "declared", "supports"]

#: The capability name of :class:`PairStore`.
PAIRS = "pairs"
#: The capability name of :class:`RunQueryStore`.
RUN_QUERY = "run_query"
#: The capability name of :class:`CommitStore`.
COMMIT = "commit"


@dataclass(frozen=True, slots=True)
class RunFilter:
    """Which runs a page of :meth:`RunQueryStore.query_runs` holds: every field that is set must
    match (``tool``: the run has a record of that tool; ``since``/``until``: its
    ``created_at`` in ``[since, until)``), newest first; ``after`` is the ``(created_at,
    run_id)`` of the last run of the previous page (keyset paging: a page costs the same on the
    hundredth page as on the first)."""

    status: frozenset[RunStatus] | None = None
    agent: str | None = None
    tool: str | None = None
    since: float | None = None
    until: float | None = None
    after: tuple[float, str] | None = None

    @classmethod
    def of(cls, *, status: RunStatus | str | Iterable[RunStatus | str] | None = None,
           agent: str | None = None, tool: str | None = None, since: float | None = None,
           until: float | None = None, after: tuple[float, str] | None = None) -> RunFilter:
        """A filter from loose arguments (a status name or several)."""
        statuses = None if status is None else frozenset(
            {RunStatus(status)} if isinstance(status, str) else {RunStatus(s) for s in status})
        return cls(statuses, agent or None, tool or None, since, until, after)

    def matches(self, run: RunInfo, tools: Iterable[str] = ()) -> bool:
        """True if ``run`` (with records of ``tools``) is on a page of this filter, the cursor
        aside (the reference implementation every store's answer must equal)."""
        return ((self.status is None or run.status in self.status)
                and (self.agent is None or run.agent_id == self.agent)
                and (self.tool is None or self.tool in set(tools))
                and (self.since is None or run.created_at >= self.since)
                and (self.until is None or run.created_at < self.until)
                and (self.after is None or (run.created_at, run.run_id) < self.after))


@runtime_checkable
class RunQueryStore(Protocol):
    """A store that answers filtered, paged queries over its runs."""

    def query_runs(self, where: RunFilter, limit: int = 50) -> list[RunInfo]:
        """At most ``limit`` runs matching ``where``, newest first (by ``created_at``, then
        ``run_id``, both descending)."""
        ...
if TYPE_CHECKING:
    from rac.stores.changes import Change

__all__ = ["CAPABILITIES", "COMMIT", "PAIRS", "CommitStore", "PairStore", "declared",
           "supports"]

#: The capability name of :class:`PairStore`.
PAIRS = "pairs"
#: The capability name of :class:`CommitStore`.
COMMIT = "commit"


@runtime_checkable
class PairStore(Protocol):
    """A store that keeps compensation pairs (:class:`rac.models.PairRecord`) by key."""

    def put_pair(self, pair: PairRecord) -> None:
        """Write ``pair``, replacing every field of any pair with the same ``key``."""
        ...

    def get_pair(self, key: str) -> PairRecord | None:
        """The pair with this key, or None. A copy the caller may change freely."""
        ...

    def list_pairs(self) -> list[PairRecord]:
        """Every pair, oldest first (by ``created_at``, then ``key``)."""
        ...


@runtime_checkable
class CommitStore(Protocol):
    """A store that writes the changes of one step (:mod:`rac.stores.changes`) in one
    transaction: all of them or none. Status changes are checked against the lifecycle tables
    in that transaction (:class:`rac.LifecycleError`, nothing written); a
    :class:`~rac.stores.changes.Fence` that fails refuses the whole commit
    (:class:`rac.errors.LeaseLostError`). ``durable=False``: the commit survives a crash of the
    process but not necessarily a power cut."""

    def commit(self, changes: Sequence[Change], *, durable: bool = True) -> None:
        """Write ``changes`` in order, in one transaction."""
        ...


#: Every capability RAC knows, by name, with the protocol a store declaring it implements.
CAPABILITIES: dict[str, type] = {PAIRS: PairStore, RUN_QUERY: RunQueryStore,
                                 COMMIT: CommitStore}


def declared(store: object) -> frozenset[str]:
    """The capability names ``store`` declares (none when it has no ``capabilities``)."""
    names: frozenset[str] = getattr(store, "capabilities", frozenset())
    return frozenset(names)


def supports(store: object, capability: str) -> bool:
    """True when ``store`` declares ``capability`` and implements its protocol.

    Raises ValueError for a name RAC does not know (a typo is a bug, not "unsupported").
    """
    protocol = CAPABILITIES.get(capability)
    if protocol is None:
        raise ValueError(f"unknown store capability {capability!r}; known: "
                         f"{', '.join(sorted(CAPABILITIES))}")
    return capability in declared(store) and isinstance(store, protocol)
