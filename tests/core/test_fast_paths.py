"""The streamlined paths (a call's first attempt, a rollback's inline compensation, the
in-memory log that holds the run's own records) behave exactly like the general ones."""

from __future__ import annotations

import logging
from typing import Any

import pytest

import rac
from rac.testing import TravelWorld, VirtualClock


@pytest.fixture
def log_engine(tmp_path: Any) -> Any:
    """Engines on the default store, a SQLite log, in this test's own folder (never the
    current directory's .rac/rac.db); closed at the end."""
    made: list[rac.RAC] = []

    def make(**kw: Any) -> rac.RAC:
        engine = rac.RAC(store=f"sqlite:///{tmp_path / 'rac.db'}", load_entrypoints=False,
                         **kw)
        made.append(engine)
        return engine

    yield make
    for engine in made:
        engine.close()


def test_a_compensation_that_fails_once_is_retried_inline_rollback(
        engine: rac.RAC, world: TravelWorld, clock: VirtualClock) -> None:
    world.fail("cancel_flight", "transient", times=1, message="flaky")
    world.fail("book_car", "permanent")
    with engine.run() as run, pytest.raises(rac.ToolCallFailed) as failed:
        run.call("book_flight", passenger="a", origin="X", dest="Y")
        run.call("book_car", driver="a", city="Rome")
    assert world.live() == []
    assert world.calls["cancel_flight"] == 2
    assert clock.sleeps == [1.0]
    assert [u.tool for u in failed.value.report.compensated] == ["book_flight"]
    flight, _car, comp = run.records()
    assert (flight.status, comp.status, comp.attempts) == (
        rac.RecordStatus.COMPENSATED, rac.RecordStatus.COMPLETED, 2)
    assert comp.compensates == flight.seq
    assert run.status is rac.RunStatus.COMPENSATED


def test_an_async_only_compensator_in_a_blocking_rollback(make_engine: Any) -> None:
    cancelled: list[str] = []

    def book(passenger: str) -> dict[str, Any]:
        return {"booking_id": f"B-{passenger}1"}

    async def cancel(booking_id: str) -> dict[str, Any]:
        cancelled.append(booking_id)
        return {"cancelled": booking_id}

    engine = make_engine(tools=[book, cancel], compensations={"book": "cancel"}, read_only=[])
    with engine.run() as run:
        run.call("book", passenger="x")
        report = run.rollback()
    assert cancelled == ["B-x1"]
    assert [(u.tool, u.compensator, u.ref) for u in report.compensated] == [
        ("book", "cancel", "B-x1")]
    assert run.status is rac.RunStatus.COMPENSATED


def test_the_log_holds_what_the_run_holds_and_reads_are_copies(engine: rac.RAC, world: TravelWorld) -> None:
    world.fail("book_car", "permanent")
    with engine.run() as run, pytest.raises(rac.ToolCallFailed):
        run.call("book_flight", passenger="a", origin="X", dest="Y")
        run.call("book_hotel", guest="a", city="Rome", nights=1)
        run.call("book_car", driver="a", city="Rome")
    logged = engine.store.get_records(run.run_id)
    assert logged == run.records()
    assert [(r.tool, r.status) for r in logged] == [
        ("book_flight", rac.RecordStatus.COMPENSATED),
        ("book_hotel", rac.RecordStatus.COMPENSATED),
        ("book_car", rac.RecordStatus.FAILED),
        ("cancel_hotel", rac.RecordStatus.COMPLETED),
        ("cancel_flight", rac.RecordStatus.COMPLETED)]
    logged[0].args["passenger"] = "mallory"  # reads are copies
    logged[0].depends_on.append(99)
    assert engine.store.get_records(run.run_id)[0].args["passenger"] == "a"
    assert [r.depends_on for r in engine.store.get_records(run.run_id)] == [[]] * 5


def test_a_secret_named_compensation_parameter_is_redacted_in_the_log(make_engine: Any) -> None:
    got: list[str] = []

    def create_key(owner: str) -> dict[str, Any]:
        return {"key_id": "k-123"}

    def revoke(api_key: str) -> dict[str, Any]:
        got.append(api_key)
        return {"revoked": True}

    engine = make_engine(tools=[create_key, revoke], read_only=[], compensations={
        "create_key": rac.Compensation(tool="revoke", args={"api_key": "result.key_id"})})
    with engine.run() as run:
        run.call("create_key", owner="o")
        run.rollback()
    assert got == ["k-123"]
    comp = engine.store.get_records(run.run_id)[-1]
    assert comp.args == {"api_key": "[REDACTED]"}


def test_info_events_follow_the_level_of_the_rac_logger(
        engine: rac.RAC, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="rac"), engine.run() as quiet:
        quiet.call("book_flight", passenger="a", origin="X", dest="Y")
    assert not [r for r in caplog.records if quiet.run_id in r.getMessage()]
    with caplog.at_level(logging.INFO, logger="rac"), engine.run() as loud:
        loud.call("book_flight", passenger="a", origin="X", dest="Y")
    events = [r.getMessage() for r in caplog.records if loud.run_id in r.getMessage()]
    assert sum("event='rac.record'" in e for e in events) == 2  # pending, then completed
    assert any("status='completed'" in e for e in events)


def test_idempotency_keys_are_stable_per_step_and_differ_across_runs(engine: rac.RAC) -> None:
    with engine.run() as a:
        a.call("book_flight", passenger="a", origin="X", dest="Y")
        a.rollback()
    with engine.run() as b:
        b.call("book_flight", passenger="a", origin="X", dest="Y")
    action, comp = a.records()
    assert action.idempotency_key == rac.run.idempotency_key(a.run_id, 1, "action")
    assert comp.idempotency_key == rac.run.idempotency_key(a.run_id, 1, "compensate")
    assert len({action.idempotency_key, comp.idempotency_key,
                b.records()[0].idempotency_key}) == 3
    assert all(len(k) == 24 for k in (action.idempotency_key, comp.idempotency_key))


def test_an_intent_record_has_every_field_of_a_record(engine: rac.RAC) -> None:
    import dataclasses

    with engine.run() as run:
        run.call("book_flight", passenger="a", origin="X", dest="Y")
    rec = run.log.records[1]  # the run's own copy of the record
    values = {f.name: getattr(rec, f.name) for f in dataclasses.fields(rac.Record)}
    assert rac.Record(**values) == rec.copy()
    assert (values["kind"], values["status"], values["attempts"], values["depends_on"]) == (
        rac.RecordKind.ACTION, rac.RecordStatus.COMPLETED, 1, [])


def _booking_tools(cancelled: list[str]) -> list[rac.Tool]:
    def book(passenger: str) -> dict[str, Any]:
        return {"booking_id": f"BK-{passenger}"}

    def cancel(booking_id: str) -> dict[str, Any]:
        cancelled.append(booking_id)
        return {"cancelled": booking_id}

    return [rac.Tool.from_function(book), rac.Tool.from_function(cancel)]


def test_a_tool_set_offered_to_many_runs_lets_each_compensate(log_engine: Any) -> None:
    cancelled: list[str] = []
    engine = log_engine(compensations={"book": "cancel"})
    tools = engine.tool_set(_booking_tools(cancelled))
    assert sorted(t.name for t in tools) == ["book", "cancel"] and len(tools) == 2
    for who in ("ann", "bob"):
        run = engine.run()
        run.add_tools(tools)
        run.execute("book", {"passenger": who}, lambda n, a: tools.by_name[n].invoke(a))
        run.rollback("the user cancelled")
        assert run.status is rac.RunStatus.COMPENSATED
    assert cancelled == ["BK-ann", "BK-bob"]
    assert tools.checked_at == engine.registry.version  # checked once, then trusted


def test_a_tool_set_is_checked_again_after_the_declarations_change(log_engine: Any) -> None:
    engine = log_engine(compensations={"book": "cancel"})
    tools = engine.tool_set(_booking_tools([]))
    engine.run().add_tools(tools)
    engine.registry.add("book", "refund")  # a compensator neither the set nor the engine has
    with pytest.raises(rac.ConfigurationError, match="unknown compensating tool 'refund'"):
        engine.run().add_tools(tools)


def test_a_tool_set_completed_by_tools_the_run_already_has_passes_its_check(
        log_engine: Any) -> None:
    engine = log_engine(compensations={"book": "cancel"})
    book, cancel = _booking_tools([])
    run = engine.run()
    run.add_tools([cancel])  # another agent of the turn offered the compensator
    run.add_tools(engine.tool_set([book]))
    assert run.tool("book") is book and run.tool("cancel") is cancel


def test_a_tool_set_holds_rac_tools_only(log_engine: Any) -> None:
    with pytest.raises(TypeError, match="RAC.tool_set"):
        rac.ToolSet([print], engine=log_engine())  # type: ignore[list-item]


def test_the_memory_log_keeps_the_runs_own_row_and_reads_return_copies(
        engine: rac.RAC) -> None:
    with engine.run(agent_id="a1") as run:
        run.call("book_flight", passenger="a", origin="X", dest="Y")
        info = engine.store.get_run(run.run_id)
        assert info is not None and info.status is rac.RunStatus.RUNNING
        info.status = rac.RunStatus.NEEDS_ATTENTION  # a read is a copy
    row = engine.store.get_run(run.run_id)
    assert row is not None and (row.status, row.agent_id) == (rac.RunStatus.COMPLETED, "a1")
    assert row.updated_at >= row.created_at
    with pytest.raises(rac.ConflictError, match="already exists"):
        engine.run(run_id=run.run_id).finish()


def test_a_run_is_busy_while_one_of_its_calls_is_under_way(engine: rac.RAC) -> None:
    seen: list[bool] = []
    run = engine.run()

    def invoke(name: str, args: dict[str, Any]) -> Any:
        seen.append(run.busy)
        return {"ok": True}

    assert not run.busy
    run.execute("get_weather", {"city": "Rome"}, invoke)
    assert seen == [True] and not run.busy


@pytest.mark.parametrize(("text", "read"), [
    ('{"a": [1, 2]}', {"a": [1, 2]}),
    ('  [1, "x"]\n', [1, "x"]),
    ("{}", {}),
    ('{"a": 1} trailing}', '{"a": 1} trailing}'),
    ("[1] [2]", "[1] [2]"),
    ("{not json}", "{not json}"),
    ("[", "["),
    ("", ""),
    ("plain text", "plain text"),
])
def test_tool_results_given_as_text_are_read_as_json_only_when_they_are(
        text: str, read: Any) -> None:
    from rac.serialize import as_fields

    assert as_fields(text) == read


@pytest.mark.parametrize(("result", "failed"), [
    ({"booking_id": "B1", "status": "confirmed"}, None),
    ({"status": "failed"}, "status 'failed'"),
    ({"status": "Error", "message": "card declined"}, "card declined"),
    ({"status": "fine", "ok": False}, "ok is false"),
    ({"status": "done", "error": "no seats"}, "no seats"),
    ({"status": 3}, None),
    ({"status": None, "success": False, "detail": "closed"}, "closed"),
])
def test_a_result_that_reports_its_own_failure_is_a_failure(
        result: dict[str, Any], failed: str | None) -> None:
    from rac.classify import default_detect_result_error

    err = default_detect_result_error(result)
    assert (None if err is None else str(err)) == failed


def test_a_tool_set_is_checked_once_while_the_declarations_stay(
        monkeypatch: pytest.MonkeyPatch, log_engine: Any) -> None:
    engine = log_engine(compensations={"book": "cancel"})
    checks: list[object] = []
    check = engine.registry.check_known

    def counted(*args: Any, **kwargs: Any) -> None:
        checks.append(args)
        check(*args, **kwargs)

    monkeypatch.setattr(engine.registry, "check_known", counted)
    tools = engine.tool_set(_booking_tools([]))
    for _ in range(3):
        engine.run().add_tools(tools)
    assert len(checks) == 1
    engine.registry.add_read_only("lookup")
    engine.run().add_tools(tools)
    assert len(checks) == 2


def test_runs_started_by_several_threads_at_once_are_started_once(engine: rac.RAC) -> None:
    import threading

    for _ in range(20):
        run = engine.run()
        together = threading.Barrier(3, timeout=60)
        errors: list[BaseException] = []

        def first_call(city: str, run: rac.Run = run, together: threading.Barrier = together,
                       errors: list[BaseException] = errors) -> None:
            together.wait()
            try:
                run.execute("get_weather", {"city": city}, lambda n, a: {"sky": "clear"})
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=first_call, args=(c,)) for c in ("A", "B", "C")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert len(engine.store.get_records(run.run_id)) == 3
    assert len(engine.store.list_runs()) == 20


def test_finish_leaves_a_run_with_a_call_in_doubt_running(engine: rac.RAC) -> None:
    run = engine.run()
    run.execute("get_weather", {"city": "Rome"}, lambda n, a: {"sky": "clear"})

    def crash(name: str, args: dict[str, Any]) -> Any:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run.execute("book_flight", {"passenger": "a", "origin": "X", "dest": "Y"}, crash)
    assert run.finish() is False
    assert run.status is rac.RunStatus.RUNNING  # for rac recover
    assert [r.status for r in run.records()] == [
        rac.RecordStatus.COMPLETED, rac.RecordStatus.PENDING]
    ok = engine.run()
    assert ok.finish() is True and ok.status is rac.RunStatus.COMPLETED
