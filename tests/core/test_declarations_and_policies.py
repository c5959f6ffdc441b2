"""Declarations are validated when made; tools without a compensator follow the policy."""

from __future__ import annotations

from typing import Any

import pytest

import rac
from rac.testing import TravelWorld, assert_no_live_effects


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"compensations": {"book_flight": "cancel_flight", "book_boat": "sink_boat"}},
     "compensations['book_boat']: unknown tool 'book_boat'"),
    ({"compensations": {"book_flight": "cancel_flght"}},
     "compensations['book_flight'].tool: unknown compensating tool 'cancel_flght'"),
    ({"compensations": {"book_flight": "book_flight"}},
     "compensation of 'book_flight' refers to itself: field 'tool'"),
    ({"compensations": {"book_flight": rac.Compensation(tool="cancel_flight",
                                                        args={"booking_id": "reslt.id"})}},
     "args['booking_id'] = 'reslt.id' must start with 'result' or 'args'"),
    ({"compensations": {"book_flight": {"tool": "cancel_flight", "argz": {}}}},
     "unknown field(s) ['argz']"),
    ({"compensations": {"book_flight": {"args": {}}}},
     "field 'tool' must name the compensating tool"),
    ({"compensations": {"book_flight": 42}}, "must be a tool name, a rac.Compensation"),
    ({"alternatives": {"book_car": "rent_car"}}, "must be a list of tool names"),
    ({"alternatives": {"book_car": ["book_car"]}}, "list 'book_car' itself"),
    ({"alternatives": {"book_car": ["hire_car"]}}, "alternatives['book_car']: unknown tool"),
    ({"no_compensation": "ignore"}, "no_compensation must be one of"),
    ({"retry": {"max_attempts": 3}}, "retry must be a rac.RetryPolicy"),
    ({"read_only": ["book_flight"]}, "declared read-only and cannot have a compensation"),
])
def test_bad_declarations_fail_at_once_naming_tool_and_field(
        make_engine: Any, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(rac.ConfigurationError) as err:
        make_engine(**kwargs)
    assert message in str(err.value)


def test_unknown_compensator_is_caught_when_an_adapter_registers_tools() -> None:
    engine = rac.RAC(compensations={"book": "unbook"}, store="memory://")

    def book(x: int) -> int:
        return x

    with pytest.raises(rac.ConfigurationError, match="unknown compensating tool 'unbook'"):
        engine.register_tools([book])


def test_bad_store_url_is_a_clear_error() -> None:
    with pytest.raises(rac.StoreError, match="unknown store URL 'mysql://x'"):
        rac.RAC(store="mysql://x")
    with pytest.raises(rac.StoreError, match="names no file"):
        rac.RAC(store="sqlite://")


def test_default_store_is_sqlite_under_dot_rac(tmp_path: Any, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RAC_STORE", raising=False)
    engine = rac.RAC()
    assert isinstance(getattr(engine.store, 'inner', engine.store), rac.SQLiteStore)
    assert (tmp_path / ".rac" / "rac.db").exists()
    monkeypatch.setenv("RAC_STORE", f"sqlite:///{tmp_path}/other.db")
    assert rac.RAC().store.url.endswith("other.db")


def test_warn_policy_runs_the_tool_and_reports_it_as_not_undoable(
        make_engine: Any, world: TravelWorld) -> None:
    engine = make_engine(compensations={"book_flight": "cancel_flight"})
    world.fail("book_hotel", "permanent")
    with engine.run() as run, pytest.raises(rac.ToolCallFailed) as failed:
        run.call("book_flight", passenger="a", origin="X", dest="Y")
        run.call("book_car", driver="a", city="Rome")  # no compensator declared
        run.call("book_hotel", guest="a", city="Rome", nights=1)
    report = failed.value.report
    assert [u.tool for u in report.not_undoable] == ["book_car"]
    assert [u.tool for u in report.compensated] == ["book_flight"]
    assert "book_car CR-102 (cannot be undone)" in str(failed.value)
    assert run.status is rac.RunStatus.NEEDS_ATTENTION
    assert [b["kind"] for b in world.live()] == ["car"]


def test_refuse_policy_blocks_the_call_before_it_runs(make_engine: Any,
                                                      world: TravelWorld) -> None:
    engine = make_engine(compensations={"book_flight": "cancel_flight"},
                         no_compensation="refuse")
    with engine.run() as run:
        run.call("book_flight", passenger="a", origin="X", dest="Y")
        with pytest.raises(rac.NoCompensationError, match="book_car has side effects"):
            run.call("book_car", driver="a", city="Rome")
        run.call("get_weather", city="Rome")  # read-only tools still run
    assert "book_car" not in world.calls
    assert [b["kind"] for b in world.live()] == ["flight"]
    assert run.records()[1].status is rac.RecordStatus.FAILED


def test_assume_read_only_policy(make_engine: Any, world: TravelWorld) -> None:
    engine = make_engine(compensations={"book_flight": "cancel_flight"},
                         no_compensation="assume_read_only")
    world.fail("book_hotel", "permanent")
    with engine.run() as run, pytest.raises(rac.ToolCallFailed) as failed:
        run.call("book_car", driver="a", city="Rome")
        run.call("book_hotel", guest="a", city="Rome", nights=1)
    assert failed.value.report.clean and run.status is rac.RunStatus.COMPENSATED
    assert run.records()[0].read_only


def test_read_only_tools_are_never_compensated(engine: rac.RAC, world: TravelWorld) -> None:
    world.fail("book_car", "permanent")
    with engine.run() as run, pytest.raises(rac.ToolCallFailed) as failed:
        run.call("search_flights", origin="X", dest="Y")
        run.call("book_flight", passenger="a", origin="X", dest="Y")
        run.call("book_car", driver="a", city="Rome")
    assert [u.tool for u in failed.value.report.compensated] == ["book_flight"]
    assert_no_live_effects(world)


def test_wrap_joins_the_active_run_or_opens_its_own(engine: rac.RAC, world: TravelWorld) -> None:
    book_flight = engine.wrap(world.book_flight)
    book_car = engine.wrap(world.book_car)
    assert book_flight.__name__ == "book_flight" and "Book a seat" in (book_flight.__doc__ or "")
    world.fail("book_car", "permanent")
    with engine.run() as run, pytest.raises(rac.ToolCallFailed):
        book_flight("ann", "SFO", dest="CDG")
        book_car(driver="ann", city="Paris")
    assert_no_live_effects(world) is None and len(run.records()) == 3
    alone = book_flight(passenger="bob", origin="A", dest="B")
    assert alone["booking_id"] and len(engine.store.list_runs()) == 2


async def test_wrap_async(engine: rac.RAC) -> None:
    live: list[str] = []

    async def reserve(item: str) -> dict[str, Any]:
        live.append(item)
        return {"reservation_id": f"R-{item}9"}

    wrapped = engine.wrap(reserve)
    async with engine.run() as run:
        assert await wrapped("x") == {"reservation_id": "R-x9"}
    assert run.records()[0].tool == "reserve"


def test_idempotency_keys_are_stable_per_step_and_passed_to_tools(make_engine: Any) -> None:
    seen: list[str] = []
    answers = iter([rac.TransientError("timeout after commit"), {"payment_id": "P-1"}])

    def pay(amount: float, idempotency_key: str = "") -> Any:
        seen.append(idempotency_key)
        a = next(answers)
        if isinstance(a, Exception):
            raise a
        return a

    def refund(payment_id: str) -> dict[str, Any]:
        return {"refunded": payment_id}

    engine = make_engine(tools=[pay, refund], compensations={"pay": "refund"})
    with engine.run() as run1:
        run1.call("pay", amount=3.0)
    with engine.run() as run2:
        answers = iter([{"payment_id": "P-2"}])
        run2.call("pay", amount=3.0)
    assert seen[0] == seen[1] == run1.records()[0].idempotency_key
    assert seen[2] != seen[0] and seen[2] == run2.records()[0].idempotency_key
