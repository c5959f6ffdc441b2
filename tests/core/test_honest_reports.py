"""Never a false all-clear (issue 18): each case the issue reproduced, as a regression test, and
the declaration mistakes that are now caught when they are made."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

import rac
from rac.testing import TravelWorld, VirtualClock

FLIGHT = {"passenger": "ann", "origin": "SFO", "dest": "CDG"}


def test_a_nested_rollback_keeps_what_a_live_call_outside_the_scope_depends_on(
        make_engine: Any, world: TravelWorld) -> None:
    engine = make_engine()
    with engine.run() as run:
        with run.scope():
            flight = run.call("book_flight", **FLIGHT)
            inner = run.current_scope()
        outside = run.execute("charge_card", {"customer": flight["booking_id"], "amount": 5.0},
                              lambda n, a: run.tool(n).invoke(a))
        assert outside.ok and run.log.records[outside.seq].depends_on == [1]
        report = run.rollback(scope=inner)
    assert [u.tool for u in report.blocked] == ["book_flight"]
    assert "outside this scope" in (report.blocked[0].error or "")
    assert not report.clean and "world is back" not in engine.render(report)
    assert len(world.live("flight")) == 1


def test_a_refused_alternative_does_not_swallow_the_rollback(make_engine: Any,
                                                              world: TravelWorld) -> None:
    world.fail("book_car", "permanent", message="no cars")

    def scooter(driver: str, city: str) -> dict[str, Any]:
        return {"scooter": driver}

    engine = make_engine(tools=[*world.tools(), scooter], no_compensation="refuse",
                         alternatives={"book_car": ["scooter"]})
    with engine.run() as run:
        run.call("book_flight", **FLIGHT)
        with pytest.raises(rac.ToolCallFailed) as failed:
            run.call("book_car", driver="ann", city="Paris")
    report = failed.value.report
    assert world.live() == [] and run.status is rac.RunStatus.COMPENSATED
    assert report.alternatives[0].tool == "scooter"
    assert "refused" in (report.alternatives[0].error or "")


def test_a_mapping_to_none_is_a_dead_letter_naming_the_parameter(make_engine: Any) -> None:
    cancelled: list[Any] = []

    def book(who: str) -> dict[str, Any]:
        return {"booking_id": None, "status": "confirmed"}

    def cancel(booking_id: str) -> dict[str, Any]:
        cancelled.append(booking_id)
        return {"cancelled": True}

    engine = make_engine(tools=[book, cancel], compensations={"book": "cancel"}, read_only=[])
    with engine.run() as run:
        run.call("book", who="a")
        report = run.rollback()
    assert cancelled == []
    assert [u.tool for u in report.compensation_failed] == ["book"]
    assert "booking_id" in (report.compensation_failed[0].error or "")
    assert not report.clean


def test_needs_attention_is_sticky_until_resume_finishes_the_work(make_engine: Any,
                                                                  world: TravelWorld) -> None:
    world.fail("cancel_flight", "permanent", times=1)  # declared permanent: not retried
    engine = make_engine()
    with engine.run() as run:
        run.call("book_flight", **FLIGHT)
        run.rollback()
        assert run.status is rac.RunStatus.NEEDS_ATTENTION
        run.call("book_hotel", guest="ann", city="Paris", nights=1)  # later calls still work
        assert run.status is rac.RunStatus.NEEDS_ATTENTION
        assert run.finish() is False
    assert engine.store.get_run(run.run_id).status is rac.RunStatus.NEEDS_ATTENTION  # type: ignore[union-attr]
    assert len(run.records()) == 3
    done = engine.resume(run.run_id)
    assert done.outcome == "compensated" and world.live() == []


def test_a_plugin_that_raises_never_leaves_a_record_unfinished(make_engine: Any,
                                                              world: TravelWorld) -> None:
    class Broken:
        @rac.hookimpl
        def rac_normalize_result(self, result: Any) -> Any:  # a subset of the arguments
            raise RuntimeError("plugin bug")

        @rac.hookimpl
        def rac_detect_result_error(self, tool: str, result: Any) -> Any:
            raise RuntimeError("another plugin bug")

    engine = make_engine(plugins=[Broken()])
    with capture_logs() as events, engine.run() as run:
        run.call("book_flight", **FLIGHT)
        report = run.rollback()
    assert not run.busy and report.clean and world.live() == []
    assert [r.status for r in run.records()][0] is rac.RecordStatus.COMPENSATED
    failed = [e for e in events if e["event"] == "rac.plugin_failed"]
    assert {e["hook"] for e in failed} == {"rac_normalize_result", "rac_detect_result_error"}
    assert all("Broken" in e["plugin"] or e["plugin"] for e in failed)


def test_a_plugin_may_take_a_subset_of_the_arguments(make_engine: Any) -> None:
    seen: list[Any] = []

    class Reader:
        @rac.hookimpl
        def rac_normalize_result(self, result: Any) -> Any:
            seen.append(result)
            return None

    def one(x: int) -> dict[str, int]:
        return {"x": x}

    engine = make_engine(tools=[one], plugins=[Reader()], read_only=["one"], compensations={})
    with engine.run() as run:
        assert run.call("one", x=3) == {"x": 3}
    assert seen == [{"x": 3}]


def _crash_then_recover(tmp_path: Path, store_url: str, big: bool,
                        fail_first: bool = False) -> tuple[list[Any], Any]:
    got: list[Any] = []
    token = "tok-PLANTED-5e6f"
    failing = [fail_first]

    def book(who: str) -> dict[str, Any]:
        result: dict[str, Any] = {"booking_id": f"BK-{who}", "cancel_token": token}
        if big:
            result["blob"] = "x" * 5000
        return result

    def cancel(booking_id: str, cancel_token: str) -> dict[str, Any]:
        if failing[0]:
            raise rac.PermanentError("the cancel service is down")
        got.append((booking_id, cancel_token))
        return {"cancelled": booking_id}

    def engine() -> rac.RAC:
        return rac.RAC(tools=[book, cancel], store=store_url, clock=VirtualClock(),
                       compensations={"book": rac.Compensation(
                           "cancel", args={"booking_id": "result.booking_id",
                                           "cancel_token": "result.cancel_token"})},
                       max_value_chars=1000 if big else 64_000, load_entrypoints=False)

    first = engine()
    run = first.run()
    run.start()
    run.call("book", who="ann")
    first.owner = "gone-host:1:dead"  # the process "dies": its run is left running, and its
    first.store.update_run(run.run_id, owner="gone-host:1:dead", lease_until=0.0)  # lease ends
    first.store.close()
    second = engine()
    [out] = second.recover([run.run_id])
    second.store.close()
    if fail_first:  # a dead letter: fixed, then resumed by yet another process
        assert out.outcome == "needs_attention"
        failing[0] = False
        third = engine()
        out = third.resume(run.run_id)
        third.store.close()
    last = engine()
    shown = last.store.get_records(run.run_id)[0]
    last.store.close()
    return got, (out, shown, token)


def test_record_listeners_and_rac_show_never_see_undo_data(make_engine: Any) -> None:
    from rac.cli.render import record_json

    seen: list[rac.Record] = []

    class Listener:
        @rac.hookimpl
        def rac_record_written(self, record: rac.Record) -> None:
            seen.append(record)

    def book(who: str) -> dict[str, Any]:
        return {"booking_id": f"BK-{who}", "cancel_token": "tok-SECRET-1"}

    def cancel(booking_id: str, cancel_token: str) -> dict[str, Any]:
        return {"cancelled": booking_id}

    engine = make_engine(tools=[book, cancel], plugins=[Listener()], read_only=[],
                         compensations={"book": "cancel"})
    with engine.run() as run:
        run.call("book", who="a")
    stored = engine.store.get_records(run.run_id)[0]
    assert stored.undo is not None and stored.undo["result"]["cancel_token"] == "tok-SECRET-1"
    assert seen and all(r.undo is None for r in seen)
    assert "tok-SECRET-1" not in repr(seen) and "tok-SECRET-1" not in repr(record_json(stored))


@pytest.mark.parametrize("big", [False, True])
@pytest.mark.parametrize("fail_first", [False, True], ids=["recover", "resume"])
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_undo_data_survives_a_restart_exactly(tmp_path: Path, big: bool, fail_first: bool,
                                              kind: str) -> None:
    from tests.reliability.support import drop, store_url

    url = store_url(kind, tmp_path)
    try:
        got, (out, shown, token) = _crash_then_recover(tmp_path, url, big, fail_first)
    finally:
        drop(url)
    assert out.outcome == "compensated"
    assert got == [("BK-ann", token)]  # the exact secret and id, not "[REDACTED]" or a hash
    assert token not in repr(shown.result)  # what is shown stays redacted


def test_secrets_in_free_text_are_scrubbed_before_storage(make_engine: Any,
                                                          world: TravelWorld) -> None:
    world.fail("book_car", "value", message="GET /cars?api_key=sk-PLANTED-77 failed: "
                                             "Authorization: Bearer abcdef123456")
    engine = make_engine()
    with capture_logs() as events, engine.run() as run, pytest.raises(rac.ToolCallFailed):
        run.call("book_car", driver="ann", city="Paris")
    stored = repr(engine.store.get_records(run.run_id))
    assert "sk-PLANTED-77" not in stored and "abcdef123456" not in stored
    assert "sk-PLANTED-77" not in repr(events)


def test_declaration_mistakes_are_caught_when_declared(world: TravelWorld) -> None:
    with pytest.raises(rac.ConfigurationError, match="no parameter 'bookng_id'"):
        rac.RAC(tools=world.tools(), store="memory://", compensations={
            "book_flight": rac.Compensation("cancel_flight",
                                            args={"bookng_id": "result.booking_id"})})
    comp = rac.Compensation("cancel_x")
    assert comp.tool == "cancel_x"
    assert rac.Classification("transient").kind is rac.ErrorKind.TRANSIENT
    with pytest.raises(ValueError, match="kind must be one of"):
        rac.Classification("sometimes")
    tool = rac.Tool("t", call=lambda a: a, params={"type": "object",
                                                   "properties": {"a": {}}, "required": ["a"]})
    assert tool.params == ["a"] and tool.required == ["a"]
    with pytest.raises(ValueError, match="params must be"):
        rac.Tool("t", call=lambda a: a, params="a")  # type: ignore[arg-type]


def test_the_public_names_the_docs_use_exist() -> None:
    for name in ("UndoneAction", "AttemptedAlternative", "ErrorKind", "Effect", "Lookup",
                 "BeforeImage", "Irreversible", "CallRefused", "AmbiguousError"):
        assert getattr(rac, name) is not None
    assert callable(rac.MemoryStore().get_records)


def test_an_operator_resolution_clears_needs_attention(make_engine: Any,
                                                       world: TravelWorld) -> None:
    world.fail("cancel_flight", "permanent")
    engine = make_engine()
    with engine.run() as run:
        run.call("book_flight", **FLIGHT)
        run.rollback()
    assert run.status is rac.RunStatus.NEEDS_ATTENTION
    with pytest.raises(rac.RACError, match="needs a note"):
        engine.resolve(run.run_id, 1, note=" ")
    info = engine.resolve(run.run_id, 1, note="cancelled by phone with the airline", by="ops")
    assert info.status is rac.RunStatus.RESOLVED
    rec = engine.store.get_records(run.run_id)[0]
    assert rec.status is rac.RecordStatus.RESOLVED and rec.note.startswith("resolved by ops")
    with pytest.raises(rac.RACError, match="nothing to resolve"):
        engine.resolve(run.run_id, 1, note="again")


def test_rac_resolve_on_the_command_line(tmp_path: Path, world: TravelWorld,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    from rac.cli.main import main

    url = f"sqlite:///{tmp_path}/log.db"
    world.fail("cancel_flight", "permanent")
    engine = rac.RAC(tools=world.tools(), store=url, clock=VirtualClock(),
                     compensations={"book_flight": "cancel_flight"}, load_entrypoints=False,
                     compensation_retry=rac.RetryPolicy.none())
    with engine.run() as run:
        run.call("book_flight", **FLIGHT)
        run.rollback()
    engine.store.close()
    assert main(["resolve", run.run_id, "1", "--note", "refunded by hand", "--store", url]) == 0
    assert "the run is resolved" in capsys.readouterr().out


def test_demo_recover_after_the_run_had_finished_says_so(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    import subprocess
    import sys

    url = f"sqlite:///{tmp_path}/demo.db"
    crash = subprocess.run([sys.executable, "-m", "rac.cli.main", "demo", "--store", url,
                            "--crash-at", "rollback:after_end"], capture_output=True,
                           text=True, timeout=120)
    assert crash.returncode != 0
    done = subprocess.run([sys.executable, "-m", "rac.cli.main", "demo", "--store", url,
                           "--recover"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "nothing left to recover" in done.stdout
