"""The world's own ground truth: every side effect that took place, independent of any log.

Invariants are checked against this ledger, never against RAC's (or anyone's) log.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Effect:
    """One side effect in a world: a booking, a charge, a scheduled operation, a voucher sent.

    ``key`` identifies the logical request (same tool, same arguments) so duplicates can be seen;
    ``depends_on`` lists effects this one builds on (undo it before them); ``pre_existing`` marks
    effects that existed before the run and must never be touched by a compensation.
    """

    eid: str
    tool: str
    key: str
    reversible: bool
    created_seq: int
    data: dict[str, Any] = field(default_factory=dict)
    depends_on: list[str] = field(default_factory=list)
    pre_existing: bool = False
    #: the number of the tool call that made it (counted by the fault layer), for attribution
    call_no: int = 0
    live: bool = True
    undo_count: int = 0
    undone_seq: int | None = None


@dataclass
class LedgerViolation:
    """A wrong compensation seen as it happened (I2, I3 or I4)."""

    invariant: str
    detail: str


class Ledger:
    """Effects and the order in which they were created and undone."""

    def __init__(self) -> None:
        self.effects: dict[str, Effect] = {}
        self.violations: list[LedgerViolation] = []
        self.seq = 0
        #: counts the tool calls (the fault layer's stats: anything with ``tool_calls``)
        self.counter: Any = None

    def _next(self) -> int:
        self.seq += 1
        return self.seq

    def create(self, eid: str, tool: str, key: str, *, reversible: bool = True,
               depends_on: list[str] | None = None, pre_existing: bool = False,
               **data: Any) -> Effect:
        """Record a new effect and return it."""
        eff = Effect(eid=eid, tool=tool, key=key, reversible=reversible,
                     created_seq=0 if pre_existing else self._next(), data=dict(data),
                     depends_on=list(depends_on or []), pre_existing=pre_existing,
                     call_no=0 if pre_existing or self.counter is None
                     else self.counter.tool_calls)
        self.effects[eid] = eff
        return eff

    def undo(self, eid: str) -> Effect | None:
        """Record that ``eid`` was undone, noting I2/I3/I4 violations as they happen.

        Undoing a pre-existing effect is judged later against the scenario (a rebooking cancels
        the old booking on purpose).

        Returns the effect, or None if it does not exist (a phantom compensation).
        """
        eff = self.effects.get(eid)
        if eff is None:
            self.violations.append(LedgerViolation("I3", f"compensated unknown effect {eid}"))
            return None
        if not eff.live:
            self.violations.append(LedgerViolation("I2", f"{eid} compensated twice"))
        for other in self.effects.values():
            if other.live and eid in other.depends_on and other.eid != eid:
                self.violations.append(LedgerViolation(
                    "I4", f"{eid} compensated while its dependent {other.eid} was live"))
        eff.live = False
        eff.undo_count += 1
        eff.undone_seq = self._next()
        return eff

    def live_effects(self, *, include_pre_existing: bool = False) -> list[Effect]:
        """Effects still in place, in creation order."""
        return [e for e in self.effects.values()
                if e.live and (include_pre_existing or not e.pre_existing)]

    def created_in_run(self) -> list[Effect]:
        """Every effect the run created (live or undone)."""
        return [e for e in self.effects.values() if not e.pre_existing]
