"""The declaration format: RAC's `_meta` key, SEP-3172's recovery annotation, the reference
implementation's x-compensation-pair, and the errors that name server, tool and field."""

from __future__ import annotations

from typing import Any

import pytest

import rac
import rac.mcp

KEY = rac.mcp.META_KEY
CANCEL = {"name": "cancel_flight", "inputSchema": {"type": "object"}}
FIND = {"name": "find_bookings", "inputSchema": {"type": "object"}}
SEAT = {"name": "get_seat", "inputSchema": {"type": "object"}}


def tool(name: str = "book_flight", meta: dict[str, Any] | None = None,
         annotations: dict[str, Any] | None = None, schema: dict[str, Any] | None = None
         ) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "inputSchema": schema or {"type": "object"}}
    if meta is not None:
        out["_meta"] = meta
    if annotations is not None:
        out["annotations"] = annotations
    return out


def test_the_full_rac_entry_is_read() -> None:
    meta = rac.mcp.recovery_meta(
        compensation="cancel_flight", args={"booking_id": "result.booking_id"},
        lookup={"tool": "find_bookings", "args": {"passenger": "args.passenger"},
                "items": "result.bookings", "match": {"request_key": "key"}},
        effect="unsafe", meta={"com.example/other": 1})
    assert meta["com.example/other"] == 1
    found = rac.mcp.declarations_from_mcp([tool(meta=meta), CANCEL, FIND], server="travel")
    lookup = rac.Lookup(tool="find_bookings", args={"passenger": "args.passenger"},
                        items="result.bookings", match={"request_key": "key"})
    assert found.compensations["book_flight"] == rac.Compensation(
        tool="cancel_flight", args={"booking_id": "result.booking_id"}, lookup=lookup)
    t = found.tools["book_flight"]
    assert t.lookup == lookup
    assert t.declaration.source == "_meta"
    assert found.effects == {"book_flight": "unsafe"}


def test_sep_3172_recovery_annotation_is_read() -> None:
    recovery = {"strategy": "compensation",
                "compensatingOperation": {"operationId": "cancel_flight",
                                          "parameters": {"booking_id": "$response.body#/booking/id",
                                                         "who": "$request.body#/passenger"}}}
    found = rac.mcp.declarations_from_mcp([tool(annotations={"recovery": recovery}), CANCEL])
    assert found.compensations["book_flight"].args == {"booking_id": "result.booking.id",
                                                       "who": "args.passenger"}
    assert found.tools["book_flight"].declaration.source == "SEP-3172"


@pytest.mark.parametrize("where", ["annotations", "schema"])
def test_reference_x_compensation_pair_is_read(where: str) -> None:
    t = tool(annotations={"x-compensation-pair": "cancel_flight"}) if where == "annotations" \
        else tool(schema={"type": "object", "x-compensation-pair": "cancel_flight"})
    found = rac.mcp.declarations_from_mcp([t, CANCEL])
    assert found.compensations["book_flight"].tool == "cancel_flight"


def test_rac_entry_wins_over_the_other_shapes_and_the_legacy_key_still_reads() -> None:
    t = tool(meta={KEY: {"compensation": "cancel_flight"}},
             annotations={"x-compensation-pair": "refund"})
    assert rac.mcp.declarations_from_mcp([t, CANCEL]).compensations["book_flight"].tool \
        == "cancel_flight"
    legacy = tool(meta={"rac": {"compensation": "cancel_flight"}})
    assert rac.mcp.declarations_from_mcp([legacy, CANCEL]).tools["book_flight"] \
        .declaration.source == "_meta.rac"


def test_a_before_image_lets_compensation_args_refer_to_before() -> None:
    meta = rac.mcp.recovery_meta(compensation="set_seat", args={"seat": "before.seat",
                                                                "booking_id": "args.booking_id"},
                                 before={"tool": "get_seat",
                                         "args": {"booking_id": "args.booking_id"}})
    found = rac.mcp.declarations_from_mcp([tool("set_seat", meta=meta), SEAT])
    assert found.tools["set_seat"].before == rac.BeforeImage(
        tool="get_seat", args={"booking_id": "args.booking_id"})


@pytest.mark.parametrize(("listed", "message"), [
    ([tool(meta={KEY: "cancel"})], f"field '_meta.{KEY}' must be an object"),
    ([tool(meta={KEY: {"compensation": 3}})], "compensation' must be a tool name"),
    ([tool(meta={KEY: {"compensation": {"tool": "cancel_flight", "args": {"x": 1}}}}), CANCEL],
     "compensation.args.x' must be a path"),
    ([tool(meta={KEY: {"compensation": {"tool": "cancel_flight", "args": {"x": "res.id"}}}}),
      CANCEL], "must start with one of 'result', 'args'"),
    ([tool(meta={KEY: {"compensation": {"tool": "cancel_flight",
                                        "args": {"x": "before.id"}}}}), CANCEL],
     "must start with one of 'result', 'args'"),
    ([tool(meta={KEY: {"alternatives": "b"}})], "alternatives' must be a list"),
    ([tool(meta={KEY: {"compensate": "c"}})], "unknown field(s) ['compensate']"),
    ([tool(meta={KEY: {"effect": "safe"}})], "effect' must be one of"),
    ([tool(meta={KEY: {"compensation": "book_flight"}})], "refers to the tool itself"),
    ([tool(meta={KEY: {"compensation": "cancel_fligth"}}), CANCEL],
     f"field '_meta.{KEY}.compensation.tool' names 'cancel_fligth', which the server does "
     "not list"),
    ([tool(meta={KEY: {"lookup": {"tool": "find", "args": {"p": "result.x"}}}})],
     "lookup.args.p' = 'result.x' must start with one of 'args', 'key'"),
    ([tool(meta={KEY: {"lookup": {"tool": "find_bookings"}}})], "lookup.tool' names"),
    ([tool(annotations={"recovery": {"strategy": "compensation", "compensatingOperation": {
        "operationId": "cancel_flight", "parameters": {"id": "$response.header.X"}}}}), CANCEL],
     "not a runtime expression RAC can follow"),
    ([tool(annotations={"recovery": {"compensatingOperation": {"operationId": "c"}}})],
     "strategy' must name a recovery strategy"),
    ([tool(annotations={"x-compensation-pair": "nope"})],
     "field 'annotations.x-compensation-pair' names 'nope'"),
])
def test_bad_metadata_is_an_error_naming_server_tool_and_field(listed: list[Any],
                                                                message: str) -> None:
    engine = rac.RAC(store="memory://", load_entrypoints=False)
    with pytest.raises(rac.ConfigurationError) as err:
        engine.register_mcp_tools(listed, server="travel")
    text = str(err.value)
    assert message in text
    assert "MCP server 'travel', tool 'book_flight'" in text


def test_recovery_meta_checks_its_fields_when_the_server_is_written() -> None:
    with pytest.raises(rac.ConfigurationError, match="effect"):
        rac.mcp.recovery_meta(effect="sometimes")
    with pytest.raises(rac.ConfigurationError, match="compensation.tool"):
        rac.mcp.recovery_meta(args={"booking_id": "result.booking_id"})


def test_code_declarations_win_over_mcp_metadata() -> None:
    engine = rac.RAC(store="memory://", load_entrypoints=False,
                     compensations={"book_flight": "refund_everything"})
    engine.register_mcp_tools([tool(meta={KEY: {"compensation": "cancel_flight"}}), CANCEL])
    assert engine.registry.pairs["book_flight"].tool == "refund_everything"
