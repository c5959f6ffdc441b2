"""Issue 25, errors: a TypeError is evidence that a call did not happen only when Python raised
it binding the arguments to the tool function (an unexpected or a missing keyword argument): the
function's own signature refuses the same arguments and its body never started. A TypeError
from inside the tool, or from a wrapper whose body ran first, stays ambiguous: the tool may have
written before it. Each case checks the travel world itself, the record and the report."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any

import pytest

import rac
from rac.classify import ErrorKind, default_classify
from rac.testing import TravelWorld

CAR = {"driver": "ann", "city": "Paris"}


def engine_for(world: TravelWorld, book_car: Callable[..., Any]) -> rac.RAC:
    return rac.RAC(tools=[rac.Tool.from_function(book_car, name="book_car"),
                          *[t for t in world.tools() if t.__name__ != "book_car"]],
                   store="memory://", load_entrypoints=False,
                   compensations={"book_car": "cancel_car", "rent_car": "return_rental"},
                   alternatives={"book_car": ["rent_car"]})


def the_record(run: rac.Run, tool: str) -> rac.Record:
    return next(r for r in run.records() if r.tool == tool and r.kind is rac.RecordKind.ACTION)


@pytest.mark.parametrize("args", [{**CAR, "colour": "red"}, {"driver": "ann"}],
                         ids=["unexpected", "missing"])
def test_arguments_python_cannot_bind_are_evidence_the_call_did_not_happen(
        world: TravelWorld, args: dict[str, Any]) -> None:
    engine = engine_for(world, world.book_car)
    with pytest.raises(rac.ToolCallFailed) as failed, engine.run() as run:
        run.call("book_car", **args)
    rec = the_record(run, "book_car")
    assert rec.status is rac.RecordStatus.FAILED and rec.happened == "no"
    assert world.calls.get("book_car", 0) == 0 and world.live() == []
    # it did not happen, so its alternative was tried (the same arguments fit it no better)
    assert the_record(run, "rent_car").happened == "no"
    text = str(failed.value)
    assert "book_car failed (permanent: TravelWorld.book_car() " in text
    assert failed.value.report.clean and "world is back" in text


def test_an_async_tool_called_with_arguments_it_does_not_take(world: TravelWorld) -> None:
    async def book_car(driver: str, city: str) -> dict[str, Any]:
        """Book a rental car in city."""
        return world.book_car(driver, city)

    engine = engine_for(world, book_car)
    seen: dict[str, Any] = {}

    async def go() -> None:
        async with engine.run() as run:
            seen["run"] = run
            await run.acall("book_car", driver="ann", city="Paris", seats=4)

    with pytest.raises(rac.ToolCallFailed) as failed:
        asyncio.run(go())
    rec = the_record(seen["run"], "book_car")
    assert rec.status is rac.RecordStatus.FAILED and rec.happened == "no"
    assert world.live() == [] and failed.value.report.clean


def test_a_type_error_from_inside_the_tool_stays_ambiguous(world: TravelWorld) -> None:
    def book_car(driver: str, city: str) -> dict[str, Any]:
        """Book a rental car in city, then format the answer wrongly."""
        booked = world.book_car(driver, city)
        return {"booking_id": booked["booking_id"], "seats": len(4)}  # type: ignore[arg-type]

    engine = engine_for(world, book_car)
    with pytest.raises(rac.ToolCallFailed) as failed, engine.run() as run:
        run.call("book_car", **CAR)
    rec = the_record(run, "book_car")
    assert rec.happened == "maybe" and len(world.live("car")) == 1  # booked, and named
    assert world.calls.get("rent_car", 0) == 0  # no alternative after an ambiguous failure
    assert "world is back" not in str(failed.value) and not failed.value.report.clean


def test_a_wrapper_whose_body_ran_before_the_binding_failed_stays_ambiguous(
        world: TravelWorld) -> None:
    def audited(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(**kwargs: Any) -> Any:
            world.book_car("audit", kwargs.get("city", "?"))  # an effect before the call
            return fn(**kwargs)
        return wrapper

    @audited
    def book_car(driver: str, city: str) -> dict[str, Any]:
        """Book a rental car in city."""
        return world.book_car(driver, city)

    engine = engine_for(world, book_car)
    with pytest.raises(rac.ToolCallFailed) as failed, engine.run() as run:
        run.call("book_car", **CAR, colour="red")
    rec = the_record(run, "book_car")
    assert rec.happened == "maybe" and [b["who"] for b in world.live("car")] == ["audit"]
    assert not failed.value.report.clean


def test_only_the_calling_frame_marks_a_type_error() -> None:
    # the same message, raised by a tool's body or made by hand, is no evidence
    assert default_classify(TypeError("f() got an unexpected keyword argument 'x'")).kind \
        is ErrorKind.AMBIGUOUS

    def f(a: int) -> int:
        return a

    tool = rac.Tool.from_function(f)
    with pytest.raises(TypeError) as raised:
        tool.invoke({"a": 1, "x": 2})
    verdict = default_classify(raised.value)
    assert verdict.kind is ErrorKind.PERMANENT and "do not fit" in verdict.reason
    with pytest.raises(TypeError) as builtin:
        rac.Tool.from_function(len, name="len").invoke({"obj": [1], "x": 2})
    assert default_classify(builtin.value).kind is ErrorKind.AMBIGUOUS  # not a Python function
