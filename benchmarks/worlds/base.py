"""What every world shares: a ledger, tool dispatch with idempotency keys, compensation specs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from benchmarks.harness.clock import TOOL_LATENCY_S, VirtualClock
from benchmarks.harness.ledger import Ledger


def resolve(path: str, args: dict[str, Any], result: Any) -> Any:
    """Follow a path such as ``result.booking_id`` or ``args.passenger``."""
    root, *parts = path.split(".")
    value: Any = result if root == "result" else args
    for part in parts:
        value = value[part]
    return value


@dataclass(frozen=True)
class CompSpec:
    """How a forward tool is undone: the compensating tool and a path per parameter."""

    tool: str
    params: dict[str, str]

    def build(self, args: dict[str, Any], result: Any) -> dict[str, Any]:
        """The compensating call's arguments for a forward call ``args`` -> ``result``."""
        return {name: resolve(path, args, result) for name, path in self.params.items()}


@dataclass(frozen=True)
class LookupSpec:
    """How a forward call that may have happened is found again (RAC's ``rac.Lookup``): a
    read tool, its arguments as paths into the call's arguments, the path to the list of
    candidates in its result, and the candidate fields that must equal paths into the call's
    arguments for a candidate to be the call's effect."""

    tool: str
    args: dict[str, str]
    items: str
    match: dict[str, str]


class World:
    """Base of all worlds. Subclasses define tools as methods and the class-level tables."""

    name: ClassVar[str] = "world"
    compensations: ClassVar[dict[str, CompSpec]] = {}
    alternatives: ClassVar[dict[str, list[str]]] = {}
    read_only: ClassVar[frozenset[str]] = frozenset()
    irreversible: ClassVar[frozenset[str]] = frozenset()
    #: result field holding the id of the effect a forward tool created
    effect_field: ClassVar[dict[str, str]] = {}
    #: tools that accept an idempotency key in the ``keyed`` variant (payments and bookings
    #: behind an API like Stripe's); in the default variant no tool does, and a repeat acts
    keyed_tools: ClassVar[frozenset[str]] = frozenset()
    #: tools a repeat of which does nothing more (declared ``idempotent`` to RAC)
    idempotent_tools: ClassVar[frozenset[str]] = frozenset()
    #: updates undone by calling the same tool with the values read before it ran:
    #: tool -> (read tool, read args, compensation args with ``before.`` paths)
    restores: ClassVar[dict[str, tuple[str, dict[str, str], dict[str, str]]]] = {}
    #: forward tools whose calls a read tool can find again after an in-doubt failure
    #: (declared to RAC only by the approaches that declare lookups)
    lookups: ClassVar[dict[str, LookupSpec]] = {}

    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock
        self.ledger = Ledger()
        #: where the world reads the idempotency key of the call in progress
        self.idempotency_key: Callable[[], str | None] = lambda: None
        self._replies: dict[tuple[str, str], Any] = {}
        self._counter = 0
        self.charged = 0
        self.refunded = 0

    # -- tool table ---------------------------------------------------------------------------
    def tool_names(self) -> list[str]:
        """Every tool this world offers."""
        names = set(self.compensations) | {c.tool for c in self.compensations.values()}
        names |= set(self.read_only) | set(self.irreversible)
        for alts in self.alternatives.values():
            names |= set(alts)
        return sorted(names)

    def tools(self) -> dict[str, Callable[..., Any]]:
        """Name -> bound method, before the fault layer."""
        return {n: getattr(self, n) for n in self.tool_names()}

    def effectful(self) -> set[str]:
        """Tools that create an effect (forward tools, alternatives and irreversible ones)."""
        return set(self.compensations) | set(self.irreversible)

    def compensator_names(self) -> set[str]:
        """Tools that undo an effect."""
        return {c.tool for c in self.compensations.values()}

    # -- helpers for subclasses ---------------------------------------------------------------
    def new_id(self, prefix: str) -> str:
        """A fresh effect id such as ``FL-3``."""
        self._counter += 1
        return f"{prefix}-{self._counter}"

    def once(self, tool: str, do: Callable[[], Any]) -> Any:
        """Apply ``do``; when the call carries an idempotency key (only keyed tools in the
        ``keyed`` variant do) and that key was already applied for ``tool``, return the stored
        reply instead (what a real API does with an Idempotency-Key header)."""
        self.clock.advance(TOOL_LATENCY_S)
        key = self.idempotency_key()
        if key is None:
            return do()
        slot = (tool, key)
        if slot not in self._replies:
            self._replies[slot] = do()
        return self._replies[slot]

    def effect_id(self, tool: str, result: Any) -> str | None:
        """The effect id a forward tool's result names, if any."""
        fieldname = self.effect_field.get(tool)
        if fieldname is None or not isinstance(result, dict):
            return None
        value = result.get(fieldname)
        return str(value) if value is not None else None

    def take_back(self, tool: str, eid: str, what: str) -> Any:
        """Undo the live effect ``eid`` made by ``tool`` in the ledger and return it; an
        unknown or already undone effect is refused (a 4xx)."""
        eff = self.ledger.effects.get(eid)
        if eff is None or eff.tool != tool:
            raise ValueError(f"no {what} {eid}")
        if not eff.live:
            raise ValueError(f"{what} {eid} is already cancelled")
        self.ledger.undo(eid)
        return eff

    # -- money, for worlds that take a payment for what they booked ---------------------------
    def pay(self, tool: str, prefix: str, idfield: str, payer: str, amount: int,
            items: list[str]) -> dict[str, Any]:
        """Take ``amount`` for the listed effects (the payment depends on them)."""
        def do() -> dict[str, Any]:
            eid = self.new_id(prefix)
            self.charged += amount
            self.ledger.create(eid, tool, f"{payer}:{amount}", amount=amount,
                               depends_on=[i for i in items if i in self.ledger.effects])
            return {idfield: eid, "amount": amount}
        return self.once(tool, do)

    def pay_back(self, tool: str, paid_by: str, eid: str, what: str) -> dict[str, Any]:
        """Refund the payment ``eid``. Not idempotent, like many payment APIs: without an
        idempotency key a second call pays out again."""
        def do() -> dict[str, Any]:
            eff = self.ledger.effects.get(eid)
            if eff is None or eff.tool != paid_by:
                raise ValueError(f"no {what} {eid}")
            self.ledger.undo(eid)
            self.refunded += eff.data["amount"]
            return {"refunded": eid, "amount": eff.data["amount"]}
        return self.once(tool, do)

    def money_errors(self, paid_by: str, priced: frozenset[str]) -> list[str]:
        """I5 for money: payments minus refunds equal the price of what is kept (nothing when
        no payment is live)."""
        live = self.ledger.live_effects()
        kept = sum(e.data["price"] for e in live if e.tool in priced)
        net = self.charged - self.refunded
        if any(e.tool == paid_by for e in live):
            return [] if net == kept else [
                f"charged {self.charged} - refunded {self.refunded} != kept {kept}"]
        return [] if net == 0 else [
            f"charged {self.charged} - refunded {self.refunded} with no live payment"]

    # -- judged by invariants -----------------------------------------------------------------
    def conservation_errors(self) -> list[str]:
        """I5: resources and money add up. Subclasses extend."""
        return []
