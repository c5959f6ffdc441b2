"""Optional store capabilities: what a store may offer beyond the :class:`rac.stores.Store`
protocol, declared by name and checked with :func:`supports`.

A store declares what it offers in a ``capabilities`` attribute (a frozenset of names) and
implements the matching protocol. Code that needs a capability asks :func:`supports` first and
falls back (or refuses clearly) when the store lacks it. The conformance suite
(:mod:`rac.testing.conformance`) runs each capability's tests on every store that declares it.

=========  ====================  ===============================================================
Name       Protocol              What it is for
=========  ====================  ===============================================================
``pairs``  :class:`PairStore`    compensation pairs remembered durably (proposed, approved ...)
=========  ====================  ===============================================================
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from rac.models import PairRecord

__all__ = ["CAPABILITIES", "PAIRS", "PairStore", "declared", "supports"]

#: The capability name of :class:`PairStore`.
PAIRS = "pairs"


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


#: Every capability RAC knows, by name, with the protocol a store declaring it implements.
CAPABILITIES: dict[str, type] = {PAIRS: PairStore}


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
