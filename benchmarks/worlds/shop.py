"""Shop: stock holds, orders, card charges, and shipping, which is a pivot (cannot be undone)."""

from __future__ import annotations

from typing import Any, ClassVar

from benchmarks.harness.clock import VirtualClock
from benchmarks.harness.scenario import Option, Scenario, Slot
from benchmarks.worlds.base import CompSpec, World

STOCK = {"LAMP": (3, 40), "DESK": (2, 210)}


class ShopWorld(World):
    """Two warehouses hold stock; an order references holds; a charge references an order."""

    name = "shop"
    compensations: ClassVar[dict[str, CompSpec]] = {
        "reserve_stock": CompSpec("release_stock", {"hold_id": "result.hold_id"}),
        "reserve_stock_backup": CompSpec("release_stock", {"hold_id": "result.hold_id"}),
        "create_order": CompSpec("cancel_order", {"order_id": "result.order_id"}),
        "charge_order": CompSpec("refund_order", {"charge_id": "result.charge_id"}),
    }
    alternatives: ClassVar[dict[str, list[str]]] = {"reserve_stock": ["reserve_stock_backup"]}
    read_only = frozenset({"check_stock"})
    irreversible = frozenset({"ship_order"})
    keyed_tools = frozenset({"create_order", "charge_order", "refund_order"})
    effect_field: ClassVar[dict[str, str]] = {
        "reserve_stock": "hold_id", "reserve_stock_backup": "hold_id",
        "create_order": "order_id", "charge_order": "charge_id", "ship_order": "shipment_id"}

    def __init__(self, clock: VirtualClock) -> None:
        super().__init__(clock)
        self.available = {("main", s): n for s, (n, _) in STOCK.items()}
        self.available.update({("backup", s): n for s, (n, _) in STOCK.items()})
        self.capacity = dict(self.available)
        self.charged = 0
        self.refunded = 0

    def check_stock(self, sku: str) -> dict[str, int]:
        """Units free per warehouse."""
        return self.once("check_stock", lambda: {w: n for (w, s), n in self.available.items()
                                                 if s == sku})

    def _reserve(self, tool: str, warehouse: str, sku: str, qty: int) -> dict[str, Any]:
        if sku not in STOCK:
            raise ValueError(f"unknown sku {sku}")
        if self.available[(warehouse, sku)] < qty:
            raise ValueError(f"not enough {sku} in {warehouse}")
        self.available[(warehouse, sku)] -= qty
        eid = self.new_id("HD")
        self.ledger.create(eid, tool, f"{sku}:{qty}", warehouse=warehouse, sku=sku, qty=qty,
                           price=STOCK[sku][1] * qty)
        return {"hold_id": eid, "sku": sku, "qty": qty, "price": STOCK[sku][1] * qty}

    def reserve_stock(self, sku: str, qty: int) -> dict[str, Any]:
        """Hold units in the main warehouse."""
        return self.once("reserve_stock", lambda: self._reserve("reserve_stock", "main", sku, qty))

    def reserve_stock_backup(self, sku: str, qty: int) -> dict[str, Any]:
        """Hold units in the backup warehouse (alternative to ``reserve_stock``)."""
        return self.once("reserve_stock_backup",
                         lambda: self._reserve("reserve_stock_backup", "backup", sku, qty))

    def release_stock(self, hold_id: str) -> dict[str, Any]:
        """Release a hold."""
        def do() -> dict[str, Any]:
            eff = self.ledger.effects.get(hold_id)
            if eff is None or not eff.tool.startswith("reserve_stock"):
                raise ValueError(f"no hold {hold_id}")
            if not eff.live:
                raise ValueError(f"hold {hold_id} already released")
            self.ledger.undo(hold_id)
            self.available[(eff.data["warehouse"], eff.data["sku"])] += eff.data["qty"]
            return {"released": hold_id}
        return self.once("release_stock", do)

    def create_order(self, customer: str, holds: list[str]) -> dict[str, Any]:
        """An order over live holds."""
        def do() -> dict[str, Any]:
            effs = [self.ledger.effects.get(h) for h in holds]
            if any(e is None or not e.live for e in effs):
                raise ValueError(f"order refers to a hold that is not live: {holds}")
            eid = self.new_id("OR")
            total = sum(int(e.data["price"]) for e in effs if e is not None)
            self.ledger.create(eid, "create_order", f"{customer}:{','.join(holds)}",
                               depends_on=list(holds), total=total)
            return {"order_id": eid, "total": total}
        return self.once("create_order", do)

    def cancel_order(self, order_id: str) -> dict[str, Any]:
        """Cancel an order that has not shipped."""
        def do() -> dict[str, Any]:
            eff = self.ledger.effects.get(order_id)
            if eff is None or eff.tool != "create_order":
                raise ValueError(f"no order {order_id}")
            if not eff.live:
                raise ValueError(f"order {order_id} already cancelled")
            self.ledger.undo(order_id)
            return {"cancelled": order_id}
        return self.once("cancel_order", do)

    def charge_order(self, order_id: str, amount: int) -> dict[str, Any]:
        """Charge the customer for an order."""
        def do() -> dict[str, Any]:
            if order_id not in self.ledger.effects:
                raise ValueError(f"no order {order_id}")
            eid = self.new_id("PY")
            self.charged += amount
            self.ledger.create(eid, "charge_order", f"{order_id}:{amount}",
                               depends_on=[order_id], amount=amount)
            return {"charge_id": eid, "amount": amount}
        return self.once("charge_order", do)

    def refund_order(self, charge_id: str) -> dict[str, Any]:
        """Refund a charge (not idempotent: a second call refunds again)."""
        def do() -> dict[str, Any]:
            eff = self.ledger.effects.get(charge_id)
            if eff is None or eff.tool != "charge_order":
                raise ValueError(f"no charge {charge_id}")
            self.ledger.undo(charge_id)
            self.refunded += eff.data["amount"]
            return {"refunded": charge_id}
        return self.once("refund_order", do)

    def ship_order(self, order_id: str) -> dict[str, Any]:
        """Dispatch the parcel: the pivot, after which nothing can be undone."""
        def do() -> dict[str, Any]:
            eff = self.ledger.effects.get(order_id)
            if eff is None or not eff.live:
                raise ValueError(f"order {order_id} cannot ship")
            eid = self.new_id("SH")
            self.ledger.create(eid, "ship_order", order_id, reversible=False,
                               depends_on=[order_id])
            return {"shipment_id": eid}
        return self.once("ship_order", do)

    def conservation_errors(self) -> list[str]:
        """Stock free plus held equals capacity; charges minus refunds equal live orders."""
        errors = []
        live = self.ledger.live_effects()
        for (wh, sku), cap in self.capacity.items():
            held = sum(e.data["qty"] for e in live if e.tool.startswith("reserve_stock")
                       and e.data["warehouse"] == wh and e.data["sku"] == sku)
            if self.available[(wh, sku)] + held != cap:
                errors.append(f"{sku}@{wh}: {self.available[(wh, sku)]} free + {held} held "
                              f"!= {cap}")
        if any(e.tool == "charge_order" for e in live):
            kept = sum(e.data["total"] for e in live if e.tool == "create_order")
        else:
            kept = 0
        if self.charged - self.refunded != kept:
            errors.append(f"charged {self.charged} - refunded {self.refunded} != kept {kept}")
        return errors


def scenarios() -> list[Scenario]:
    """Order a lamp and a desk, pay, ship."""
    def hold_opts(sku: str, qty: int) -> Any:
        return lambda done: [Option(t, lambda d: {"sku": sku, "qty": qty}, t)
                             for t in ("reserve_stock", "reserve_stock_backup")]

    def order_opts(done: dict[str, Any]) -> list[Option]:
        return [Option("create_order", lambda d: {
            "customer": "dan", "holds": [d["lamp"]["hold_id"], d["desk"]["hold_id"]]}, "order")]

    def charge_opts(done: dict[str, Any]) -> list[Option]:
        return [Option("charge_order", lambda d: {"order_id": d["order"]["order_id"],
                                                  "amount": d["order"]["total"]}, "card")]

    def ship_opts(done: dict[str, Any]) -> list[Option]:
        return [Option("ship_order", lambda d: {"order_id": d["order"]["order_id"]}, "ship")]

    def goal(w: World) -> bool:
        live = w.ledger.live_effects()
        tools = sorted(e.tool.replace("_backup", "") for e in live)
        return tools == sorted(["reserve_stock", "reserve_stock", "create_order",
                                "charge_order", "ship_order"])

    return [Scenario(
        "shop", "order_and_ship",
        [Slot("lamp", hold_opts("LAMP", 2)), Slot("desk", hold_opts("DESK", 1)),
         Slot("order", order_opts), Slot("charge", charge_opts), Slot("ship", ship_opts)],
        "Sell Dan two lamps and a desk, charge him and ship the parcel.", goal,
        make_world=ShopWorld)]
