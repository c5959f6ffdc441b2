"""``rac.otel``: runs, tool calls, attempts, rollbacks and compensations as OpenTelemetry spans,
checked with the SDK's in-memory exporter."""

from __future__ import annotations

from collections.abc import Callable

import pytest

pytest.importorskip("opentelemetry.sdk")
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)
from opentelemetry.trace import StatusCode  # noqa: E402

import rac  # noqa: E402
from rac.otel import enable_tracing  # noqa: E402
from rac.testing import TravelWorld  # noqa: E402


@pytest.fixture(autouse=True)
def sdk_enabled(monkeypatch: pytest.MonkeyPatch) -> None:
    # frameworks' test setups turn the SDK off process-wide (OTEL_SDK_DISABLED=true, e.g. for
    # CrewAI's telemetry); a TracerProvider made then records nothing
    monkeypatch.delenv("OTEL_SDK_DISABLED", raising=False)


def traced(make_engine: Callable[..., rac.RAC]) -> tuple[rac.RAC, InMemorySpanExporter,
                                                         TracerProvider]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    engine = make_engine()
    enable_tracing(engine, tracer_provider=provider)
    return engine, exporter, provider


def test_a_rollback_is_a_tree_of_spans(make_engine: Callable[..., rac.RAC],
                                       world: TravelWorld) -> None:
    world.fail("book_hotel", "transient", times=1)
    world.fail("book_car", "permanent", message="no cars")
    engine, exporter, _ = traced(make_engine)
    with pytest.raises(rac.ToolCallFailed), engine.run() as run:
        run.call(world.book_flight, passenger="ann", origin="SFO", dest="CDG")
        run.call(world.book_hotel, guest="ann", city="Paris", nights=2)
        run.call(world.book_car, driver="ann", city="Paris")
    spans = {s.name: s for s in exporter.get_finished_spans()}
    names = [s.name for s in exporter.get_finished_spans()]
    root = spans[f"rac.run {run.run_id}"]
    assert root.parent is None and root.attributes["rac.status"] == "compensated"
    hotel = spans["execute_tool book_hotel"]
    assert hotel.parent.span_id == root.context.span_id
    assert hotel.attributes["gen_ai.operation.name"] == "execute_tool"
    assert hotel.attributes["gen_ai.tool.name"] == "book_hotel"
    assert hotel.attributes["rac.seq"] == 2 and hotel.attributes["rac.run_id"] == run.run_id
    attempts = [s for s in exporter.get_finished_spans() if s.name == "attempt 1 book_hotel"
                or s.name == "attempt 2 book_hotel"]
    assert [a.status.status_code for a in attempts] == [StatusCode.ERROR, StatusCode.UNSET]
    assert all(a.parent.span_id == hotel.context.span_id for a in attempts)
    car = spans["execute_tool book_car"]
    assert car.status.status_code is StatusCode.ERROR and "no cars" in car.status.description
    rollback = spans["rac.rollback"]
    assert rollback.parent.span_id == root.context.span_id
    assert rollback.attributes["rac.undone"] == 2 and rollback.attributes["rac.left_live"] == 0
    undo = spans["compensate cancel_hotel"]
    assert undo.parent.span_id == rollback.context.span_id
    assert undo.attributes["rac.compensates"] == 2
    assert names.index("compensate cancel_hotel") < names.index("compensate cancel_flight")
    assert "rac.args" not in hotel.attributes  # values only when asked for


def test_spans_nest_under_the_frameworks_own(make_engine: Callable[..., rac.RAC],
                                             world: TravelWorld) -> None:
    engine, exporter, provider = traced(make_engine)
    framework = provider.get_tracer("some.framework")
    with framework.start_as_current_span("framework.invoke_agent") as outer:
        with engine.run() as run:
            run.call(world.book_flight, passenger="ann", origin="SFO", dest="CDG")
    spans = {s.name: s for s in exporter.get_finished_spans()}
    assert spans[f"rac.run {run.run_id}"].parent.span_id == outer.get_span_context().span_id
    assert spans["execute_tool book_flight"].parent.span_id == \
        outer.get_span_context().span_id


def test_a_run_left_live_ends_in_error_and_values_are_redacted(
        make_engine: Callable[..., rac.RAC], world: TravelWorld) -> None:
    world.fail("book_car", "permanent")
    world.fail("cancel_flight", "permanent")
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    engine = make_engine()
    enable_tracing(engine, tracer_provider=provider, values=True)
    with pytest.raises(rac.ToolCallFailed), engine.run() as run:
        run.call(world.book_flight, passenger="ann 4111 1111 1111 1111", origin="SFO",
                 dest="CDG")
        run.call(world.book_car, driver="ann", city="Paris")
    spans = {s.name: s for s in exporter.get_finished_spans()}
    root = spans[f"rac.run {run.run_id}"]
    assert root.status.status_code is StatusCode.ERROR
    assert root.attributes["rac.status"] == "needs_attention"
    flight = spans["execute_tool book_flight"]
    assert "4111 1111 1111 1111" not in str(flight.attributes["rac.args"])
    assert "REDACTED" in str(flight.attributes["rac.args"])
