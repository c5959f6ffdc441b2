"""SEP-3172's recovery annotation (``annotations.recovery``, "optional recovery metadata in
ToolAnnotations") on both mcp lines: read from a real mcp 1.x server and undone through it; lost
on the mcp 2.x shape, whose ``ToolAnnotations`` drops keys it does not know, and then never
reported as undone; followed where the proposal says what a client must do."""

from __future__ import annotations

from typing import Any

import pytest
from structlog.testing import capture_logs

import rac
import rac.mcp
from tests.mcp import mcp2

pytest.importorskip("mcp")
from mcp.server.fastmcp import FastMCP  # noqa: E402
from mcp.shared.memory import create_connected_server_and_client_session  # noqa: E402
from mcp.types import ToolAnnotations  # noqa: E402

RECOVERY = {"strategy": "compensation",
            "compensatingOperation": {"operationId": "refund_payment",
                                      "parameters": {"transaction_id":
                                                     "$response.body#/transaction_id"}}}
#: The shop's charges still in force, by transaction id.
CHARGES: dict[str, int] = {}


def charge(amount: int) -> dict[str, Any]:
    txn = f"TXN-{len(CHARGES) + 1}"
    CHARGES[txn] = amount
    return {"transaction_id": txn, "amount": amount}


def refund(transaction_id: str) -> dict[str, Any]:
    return {"refunded": CHARGES.pop(transaction_id, None) is not None}


def ship(order: str) -> dict[str, Any]:
    raise RuntimeError(f"no courier for {order}")


app = FastMCP("shop")


@app.tool(annotations=ToolAnnotations(destructiveHint=False, recovery=RECOVERY))
def charge_payment(amount: int) -> dict[str, Any]:
    """Charge the card."""
    return charge(amount)


@app.tool(annotations=ToolAnnotations(destructiveHint=True, idempotentHint=True))
def refund_payment(transaction_id: str) -> dict[str, Any]:
    """Refund a charge."""
    return refund(transaction_id)


@app.tool()
def create_shipment(order: str) -> dict[str, Any]:
    """Ship the order."""
    return ship(order)


@pytest.fixture(autouse=True)
def _fresh_shop() -> None:
    CHARGES.clear()


WIRE: list[dict[str, Any]] = [
    {"name": "charge_payment", "inputSchema": {"type": "object", "properties": {
        "amount": {"type": "integer"}}, "required": ["amount"]},
     "annotations": {"destructiveHint": False, "recovery": RECOVERY}},
    {"name": "refund_payment", "inputSchema": {"type": "object", "properties": {
        "transaction_id": {"type": "string"}}, "required": ["transaction_id"]},
     "annotations": {"destructiveHint": True, "idempotentHint": True}},
    {"name": "create_shipment", "inputSchema": {"type": "object", "properties": {
        "order": {"type": "string"}}, "required": ["order"]}},
]
HANDLERS = {"charge_payment": lambda a: charge(a["amount"]),
            "refund_payment": lambda a: refund(a["transaction_id"]),
            "create_shipment": lambda a: ship(a["order"])}


#: Shipping fails before it does anything (the user's declaration: an MCP server's error
#: result may come after an effect, so RAC needs to be told, issue 25).
SHIP_FAILS_FIRST = {"create_shipment": (rac.ResultError,)}


async def checkout(engine: rac.RAC) -> tuple[rac.Run, str]:
    """Charge, then fail to ship: the rollback's sentence."""
    async with engine.run() as run:
        await run.acall("charge_payment", amount=60)
        with pytest.raises(rac.ToolCallFailed) as failed:
            await run.acall("create_shipment", order="O-1")
    return run, str(failed.value)


async def test_on_mcp_1x_the_recovery_annotation_drives_the_refund_through_the_server() -> None:
    async with create_connected_server_and_client_session(app._mcp_server) as session:
        listed = (await session.list_tools()).tools
        assert listed[0].annotations is not None
        assert listed[0].annotations.model_dump()["recovery"] == RECOVERY  # 1.x keeps it
        engine = rac.RAC(store="memory://", load_entrypoints=False,
                     errors_before_effect=SHIP_FAILS_FIRST)
        found = await rac.mcp.register_session_tools(engine, session, server="shop")
        engine.register_tools(rac.mcp.session_tools(session, listed, timeout=30))
        assert found.tools["charge_payment"].declaration.source == "SEP-3172"
        assert engine.registry.pairs["charge_payment"] == rac.Compensation(
            tool="refund_payment", args={"transaction_id": "result.transaction_id"})
        run, _ = await checkout(engine)
    assert CHARGES == {}
    assert run.status is rac.RunStatus.COMPENSATED


async def test_the_2x_sdks_objects_have_lost_the_annotation_and_it_is_never_reported_undone(
        ) -> None:
    # The same listing, parsed by the 2.x SDK: its ToolAnnotations drops `recovery`.
    tools = mcp2.listed(WIRE)
    assert tools[0].annotations == mcp2.ToolAnnotations(destructive_hint=False)
    session = mcp2.ClientSession([WIRE], HANDLERS)
    engine = rac.RAC(store="memory://", load_entrypoints=False,
                     errors_before_effect=SHIP_FAILS_FIRST)
    found = engine.register_mcp_tools(tools, server="shop")
    engine.register_tools(rac.mcp.session_tools(session, tools, timeout=30))
    assert found.compensations == {}
    run, told = await checkout(engine)
    # The charge stays in force and RAC says so: not compensated, the charge named.
    assert CHARGES == {"TXN-1": 60}
    assert run.status is not rac.RunStatus.COMPENSATED
    assert "charge_payment" in told and "world is back" not in told


async def test_a_2x_session_is_read_as_json_so_the_annotation_drives_the_refund() -> None:
    # register_session_tools asks the 2.x session for the listing's JSON (every page), which
    # still carries what the SDK's objects drop.
    session = mcp2.ClientSession([WIRE[:1], WIRE[1:]], HANDLERS)
    engine = rac.RAC(store="memory://", load_entrypoints=False,
                     errors_before_effect=SHIP_FAILS_FIRST)
    found = await rac.mcp.register_session_tools(engine, session, server="shop")
    assert session.requests == [None, "1"]
    assert found.tools["charge_payment"].declaration.source == "SEP-3172"
    engine.register_tools(rac.mcp.session_tools(
        session, await rac.mcp.list_session_tools(session), timeout=30))
    run, _ = await checkout(engine)
    assert CHARGES == {}
    assert run.status is rac.RunStatus.COMPENSATED


class StrictSession(mcp2.ClientSession):
    """A 2.x session whose send_request takes the SDK's own request types only."""

    async def send_request(self, request: Any, result_type: Any) -> Any:
        if not isinstance(request, mcp2.ListToolsRequest):
            raise TypeError(f"not a request: {type(request).__name__}")
        return await super().send_request(request, result_type)


async def test_a_2x_session_that_refuses_the_json_request_falls_back_to_the_sdks_objects(
        ) -> None:
    session = StrictSession([WIRE], HANDLERS)
    engine = rac.RAC(store="memory://", load_entrypoints=False,
                     errors_before_effect=SHIP_FAILS_FIRST)
    with capture_logs() as events:
        found = await rac.mcp.register_session_tools(engine, session, server="shop")
    assert found.compensations == {} and set(found.tools) == {t["name"] for t in WIRE}
    [warned] = [e for e in events if e["event"] == "rac.mcp.raw_listing_failed"]
    assert "not a request" in warned["error"]


async def test_on_the_mcp_2x_shape_a_declaration_in_meta_survives_and_every_page_is_read(
        ) -> None:
    # What a server does for 2.x clients: the same recovery in RAC's _meta entry (2.x keeps
    # `_meta`), listed over two pages (2.x's list_tools takes params=, not cursor=).
    charge_tool = dict(WIRE[0], _meta=rac.mcp.recovery_meta(
        compensation="refund_payment", args={"transaction_id": "result.transaction_id"}))
    session = mcp2.ClientSession([[charge_tool], WIRE[1:]], HANDLERS)
    engine = rac.RAC(store="memory://", load_entrypoints=False,
                     errors_before_effect=SHIP_FAILS_FIRST)
    await rac.mcp.register_session_tools(engine, session, server="shop")
    assert session.requests == [None, "1"]
    tools = await rac.mcp.list_session_tools(session)
    assert [t.name for t in tools] == ["charge_payment", "refund_payment", "create_shipment"]
    engine.register_tools(rac.mcp.session_tools(session, tools, timeout=30))
    run, _ = await checkout(engine)
    assert CHARGES == {}
    assert run.status is rac.RunStatus.COMPENSATED


class Recovery(mcp2.MCPModel):
    """SEP-3172's field as the 2.x SDK would type it if it adopts the proposal: nested
    models with snake_case attributes."""

    class Operation(mcp2.MCPModel):
        operation_id: str
        parameters: dict[str, str]

    strategy: str
    compensating_operation: Operation


class AnnotationsWithRecovery(mcp2.ToolAnnotations):
    recovery: Recovery | None = None


@pytest.mark.parametrize("as_objects", [False, True])
def test_a_2x_typed_recovery_field_is_read_as_models_and_as_plain_objects(
        as_objects: bool) -> None:
    ann = AnnotationsWithRecovery.model_validate({"destructiveHint": False,
                                                  "recovery": RECOVERY})
    assert ann.recovery is not None
    assert ann.recovery.compensating_operation.operation_id == "refund_payment"
    charge_tool: Any = mcp2.Tool(name="charge_payment", annotations=ann)
    if as_objects:  # no model_dump: attributes only, snake_case all the way down
        charge_tool = type("PlainTool", (), {"name": "charge_payment", "input_schema": {},
                                             "annotations": PlainAnnotations(ann)})()
    found = rac.mcp.declarations_from_mcp([charge_tool, *mcp2.listed(WIRE[1:])])
    assert found.compensations["charge_payment"] == rac.Compensation(
        tool="refund_payment", args={"transaction_id": "result.transaction_id"})


class PlainAnnotations:
    def __init__(self, ann: AnnotationsWithRecovery) -> None:
        assert ann.recovery is not None
        self.destructive_hint = ann.destructive_hint
        self.recovery = type("R", (), {})()
        self.recovery.strategy = ann.recovery.strategy
        self.recovery.compensating_operation = ann.recovery.compensating_operation.__dict__


async def test_a_runtime_expression_the_response_cannot_resolve_calls_no_compensator() -> None:
    # SEP-3172 4.2: an unresolvable expression makes the recovery unavailable for that call;
    # the compensator is never called with partial or default arguments.
    refunds: list[dict[str, Any]] = []
    lost = [dict(WIRE[0], annotations={"recovery": {
        "strategy": "compensation", "compensatingOperation": {
            "operationId": "refund_payment",
            "parameters": {"transaction_id": "$response.body#/receipt/id"}}}}), *WIRE[1:]]
    handlers = dict(HANDLERS, refund_payment=lambda a: refunds.append(a) or refund(
        a["transaction_id"]))
    session = mcp2.ClientSession([lost], handlers)
    engine = rac.RAC(store="memory://", load_entrypoints=False,
                     errors_before_effect=SHIP_FAILS_FIRST)
    engine.register_mcp_tools(lost, server="shop")
    engine.register_tools(rac.mcp.session_tools(session, mcp2.listed(lost)))
    run, told = await checkout(engine)
    assert refunds == []
    assert CHARGES == {"TXN-1": 60}
    assert run.status is not rac.RunStatus.COMPENSATED
    assert "receipt" in told and "world is back" not in told


def test_a_strategy_other_than_compensation_declares_nothing_and_is_logged() -> None:
    # The proposal keeps `strategy` open for later values; one RAC does not follow is not a
    # broken listing: the tool keeps RAC's default protection.
    later = [dict(WIRE[0], annotations={"recovery": {"strategy": "manual-only"}}), *WIRE[1:]]
    engine = rac.RAC(store="memory://", load_entrypoints=False,
                     errors_before_effect=SHIP_FAILS_FIRST)
    with capture_logs() as events:
        found = engine.register_mcp_tools(later, server="shop")
    assert found.compensations == {}
    assert "charge_payment" not in engine.registry.read_only
    [event] = [e for e in events if e["event"] == "rac.mcp.recovery_strategy_unknown"]
    assert event["tool"] == "charge_payment" and event["strategy"] == "manual-only"
