"""A call plan (rac.run.plan) is what was decided about a tool once: a change to what it was
decided from (a declaration, a plugin, the tool a run offers under the name) is seen by the
next call, never hidden behind the plan."""

from __future__ import annotations

from typing import Any

import rac


def book(passenger: str) -> dict[str, Any]:
    return {"booking_id": f"BK-{passenger}"}


def cancel(booking_id: str) -> dict[str, Any]:
    return {"cancelled": booking_id}


def test_a_compensation_declared_after_a_call_is_used_by_the_next() -> None:
    engine = rac.RAC(tools=[book, cancel], store="memory://", load_entrypoints=False)
    with engine.run() as run:
        run.call("book", passenger="ann")
        engine.registry.add("book", "cancel")
        run.call("book", passenger="bob")
        first, second = run.records()
    assert (first.compensable, second.compensable) == (False, True)


def test_a_plugin_that_resolves_compensations_is_asked_once_registered() -> None:
    asked: list[str] = []

    class Resolver:
        @rac.hookimpl
        def rac_resolve_compensation(self, engine: rac.RAC, record: rac.Record) -> Any:
            asked.append(record.args["passenger"])
            return None

    engine = rac.RAC(tools=[book, cancel], compensations={"book": "cancel"},
                     store="memory://", load_entrypoints=False)
    with engine.run() as run:
        run.call("book", passenger="ann")
        engine.register_plugin(Resolver())
        run.call("book", passenger="bob")
    assert asked == ["bob"]


def test_a_run_that_offers_its_own_tool_under_the_name_is_planned_for_it() -> None:
    def keyed_book(passenger: str, idempotency_key: str = "") -> dict[str, Any]:
        return {"booking_id": f"BK-{passenger}", "key": idempotency_key}

    engine = rac.RAC(tools=[book, cancel], compensations={"book": "cancel"},
                     store="memory://", load_entrypoints=False)
    with engine.run() as run:
        run.call("book", passenger="ann")
    with engine.run(tools=[rac.Tool("book", call=lambda a: keyed_book(**a),
                                    params=["passenger", "idempotency_key"])]) as run:
        got = run.call("book", passenger="bob")
        (rec,) = run.records()
    assert rec.effect == "keyed"
    assert got["key"] == rec.idempotency_key


def test_an_effect_class_declared_after_a_call_is_used_by_the_next() -> None:
    engine = rac.RAC(tools=[book, cancel], compensations={"book": "cancel"},
                     store="memory://", load_entrypoints=False)
    with engine.run() as run:
        run.call("book", passenger="ann")
        engine.registry.set_effect("book", "idempotent")
        run.call("book", passenger="bob")
        first, second = run.records()
    assert (first.effect, second.effect) == ("unsafe", "idempotent")
