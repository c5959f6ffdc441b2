"""A framework tool keeps its JSON schema when RAC routes to it (``rac.adapters.framework_tool``):
the model proposing a mapping sees the compensator's argument types and descriptions, and a
mapping of the wrong type is refused before the framework would refuse the call."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel, Field

import rac
from rac.adapters import framework_tool
from rac.resolver import LLMResolver, ScriptedModel
from rac.testing import TravelWorld, assert_no_live_effects

from .conftest import RIGHT_MAPPING, RIGHT_PAIR, trip_that_fails

Make = Callable[..., rac.RAC]


class VoidArgs(BaseModel):
    reference: str = Field(description="the booking's reference")
    reason: str = "trip cancelled"


def undone_on_a_models_word(report: Any) -> bool:
    """Everything undone, through a pair policy="auto" put in use that nobody reviewed: the
    report names it and is not clean on its account (issue #27)."""
    return (not report.left_live and not report.in_flight and bool(report.unreviewed)
            and not report.clean)


def test_framework_tool_keeps_the_schema_it_is_given() -> None:
    def call(args: dict[str, Any]) -> Any:
        return args

    from_model = framework_tool("void_booking", call=call, schema=VoidArgs)
    assert from_model.schema == VoidArgs.model_json_schema()
    assert (from_model.params, from_model.required) == (["reference", "reason"], ["reference"])
    as_json = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}},
               "required": ["n"]}
    assert framework_tool("t", call=call, schema=as_json).schema == as_json
    unknown = framework_tool("t", call=call)
    assert (unknown.schema, unknown.params) == (None, None)


def langchain_void_booking(world: TravelWorld) -> rac.Tool:
    """``void_booking`` as a LangChain tool, routed the way rac-langgraph routes it."""
    pytest.importorskip("rac_langgraph")
    from langchain_core.tools import StructuredTool

    from rac_langgraph.tools import as_rac_tool

    def void_booking(reference: str, reason: str = "trip cancelled") -> dict[str, Any]:
        return world.cancel_hotel(booking_id=reference)

    return as_rac_tool(StructuredTool.from_function(
        void_booking, args_schema=VoidArgs, description="Void a hotel booking."))


def test_the_model_sees_the_framework_schema_and_the_right_mapping_undoes_the_hotel(
        resolver_engine: Make, world: TravelWorld) -> None:
    model = ScriptedModel([RIGHT_PAIR, RIGHT_MAPPING])
    engine = resolver_engine(LLMResolver(model, policy="auto"),
                             tools=[*world.tools(), langchain_void_booking(world)])
    assert undone_on_a_models_word(trip_that_fails(engine, world))
    assert_no_live_effects(world)
    asked_mapping = model.prompts[1]
    assert "the booking's reference" in asked_mapping and '"type": "string"' in asked_mapping


def test_a_mapping_of_the_wrong_type_is_refused_as_the_framework_would(
        resolver_engine: Make, world: TravelWorld, caplog: pytest.LogCaptureFixture) -> None:
    # `nights` is an integer; the framework's VoidArgs takes a string reference.
    model = ScriptedModel([RIGHT_PAIR, json.dumps({"args": {"reference": "args.nights"}})])
    engine = resolver_engine(LLMResolver(model, policy="auto"),
                             tools=[*world.tools(), langchain_void_booking(world)])
    with caplog.at_level(logging.WARNING, logger="rac"):
        report = trip_that_fails(engine, world)
    [failed] = report.compensation_failed
    assert (failed.tool, failed.compensator) == ("book_hotel", "void_booking")
    assert "is a int, but 'void_booking' takes 'string'" in (failed.error or "")
    assert not report.clean
    assert [b["kind"] for b in world.live()] == ["hotel"]
