"""Every hookspec is documented and exercised: third-party plugins replace each built-in piece."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import pytest

import rac
from rac import hookspecs
from rac.classify import Classification, ErrorKind
from rac.testing import TravelWorld, assert_no_live_effects

ROOT = Path(__file__).resolve().parents[2]
HOOKS = sorted(n for n, f in inspect.getmembers(hookspecs, inspect.isfunction)
               if n.startswith("rac_"))


def test_every_hookspec_has_a_docstring_and_a_docs_entry() -> None:
    docs = (ROOT / "docs" / "hooks.md").read_text()
    assert len(HOOKS) >= 11
    for name in HOOKS:
        assert (getattr(hookspecs, name).__doc__ or "").strip(), name
        assert f"`{name}`" in docs, f"{name} is not documented in docs/hooks.md"


def test_every_hookspec_is_exercised_by_a_test() -> None:
    sources = "\n".join(p.read_text() for p in (ROOT / "tests").rglob("*.py"))
    for name in HOOKS:
        assert re.search(rf"def {name}\(", sources), f"no test implements {name}"


class Recorder:
    """Implements every notification hook."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    @rac.hookimpl
    def rac_record_written(self, record: rac.Record, previous: str | None) -> None:
        self.events.append(("record", record.seq, record.tool, str(record.status), previous))

    @rac.hookimpl
    def rac_run_status_changed(self, run_id: str, status: rac.RunStatus,
                               previous: rac.RunStatus | None) -> None:
        self.events.append(("run", str(status), previous and str(previous)))

    @rac.hookimpl
    def rac_rollback_started(self, run_id: str, scope: str, seqs: list[int], reason: str) -> None:
        self.events.append(("rollback_started", seqs, reason))

    @rac.hookimpl
    def rac_rollback_finished(self, run_id: str, scope: str, report: rac.RecoveryReport) -> None:
        self.events.append(("rollback_finished", str(report.status), len(report.compensated)))


def test_notifications_cover_every_state_change(make_engine: Any, world: TravelWorld) -> None:
    rec = Recorder()
    engine = make_engine(plugins=[rec])
    world.fail("book_car", "permanent")
    with engine.run() as run, pytest.raises(rac.ToolCallFailed):
        run.call("book_flight", passenger="a", origin="X", dest="Y")
        run.call("book_car", driver="a", city="Rome")
    assert rec.events == [
        ("run", "running", None),
        ("record", 1, "book_flight", "pending", None),
        ("record", 1, "book_flight", "completed", "pending"),
        ("record", 2, "book_car", "pending", None),
        ("record", 2, "book_car", "failed", "pending"),
        ("run", "compensating", "running"),
        ("rollback_started", [1], "book_car failed"),
        ("record", 1, "book_flight", "compensating", "completed"),
        ("record", 3, "cancel_flight", "pending", None),
        ("record", 3, "cancel_flight", "completed", "pending"),
        ("record", 1, "book_flight", "compensated", "compensating"),
        ("run", "compensated", "compensating"),
        ("rollback_finished", "compensated", 1),
    ]


def test_plugins_replace_decisions(make_engine: Any, world: TravelWorld) -> None:
    class Policy:
        """Every first-result hook, overriding the defaults."""

        @rac.hookimpl
        def rac_resolve_compensation(self, engine: rac.RAC, record: rac.Record) -> Any:
            if record.tool == "charge_card":
                return rac.Compensation(tool="refund_charge")
            return None

        @rac.hookimpl
        def rac_map_compensation_args(self, engine: rac.RAC, record: rac.Record,
                                      compensation: rac.Compensation, tool: Any,
                                      args: dict[str, Any], result: Any,
                                      idempotency_key: str) -> dict[str, Any] | None:
            if compensation.tool == "refund_charge":
                return {"booking_id": result["booking_id"]}
            return None

        @rac.hookimpl
        def rac_classify_error(self, tool: str, error: BaseException) -> Classification | None:
            if "slow down" in str(error):  # this team's API says "slow down" for 429
                return Classification(ErrorKind.TRANSIENT, 2.0)
            return None

        @rac.hookimpl
        def rac_detect_result_error(self, tool: str, result: Any) -> BaseException | None:
            if isinstance(result, dict) and result.get("amount") == 0:
                return rac.PermanentError("zero booking")
            return None

        @rac.hookimpl
        def rac_normalize_result(self, tool: str, result: Any) -> Any:
            if isinstance(result, tuple) and result and result[0] == "wrapped":
                return result[1]
            return None

        @rac.hookimpl
        def rac_render_report(self, report: rac.RecoveryReport) -> str:
            return f"undone: {[u.tool for u in report.compensated]}"

    calls = {"n": 0}

    def ping(x: int) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("slow down")
        return ("wrapped", {"amount": 0})

    engine = make_engine(plugins=[Policy()], compensations={},
                         tools=[*world.tools(), ping], read_only=["ping"])
    with engine.run() as run:
        run.call("charge_card", customer="a", amount=10.0)
        with pytest.raises(rac.ToolCallFailed) as failed:
            run.call(ping, x=1)
    assert str(failed.value) == "undone: ['charge_card']"
    assert calls["n"] == 2 and engine.clock.sleeps == [2.0]  # type: ignore[attr-defined]
    assert failed.value.report.error == "zero booking"
    assert_no_live_effects(world)


def test_approval_hook_can_hold_a_compensation(make_engine: Any, world: TravelWorld) -> None:
    class HoldFlights:
        @rac.hookimpl
        def rac_approve_compensation(self, engine: rac.RAC, record: rac.Record,
                                     compensation: rac.Compensation,
                                     args: dict[str, Any]) -> bool | None:
            return False if record.tool == "book_flight" else None

    engine = make_engine(plugins=[HoldFlights()])
    world.fail("book_car", "permanent")
    with engine.run() as run, pytest.raises(rac.ToolCallFailed) as failed:
        run.call("book_flight", passenger="a", origin="X", dest="Y")
        run.call("book_hotel", guest="a", city="Rome", nights=1)
        run.call("book_car", driver="a", city="Rome")
    report = failed.value.report
    assert [u.tool for u in report.held] == ["book_flight"]
    assert [u.tool for u in report.compensated] == ["book_hotel"]
    assert "undo held for approval" in str(failed.value)
    assert run.status is rac.RunStatus.NEEDS_ATTENTION
    assert [b["kind"] for b in world.live()] == ["flight"]


def test_default_plugins_can_be_removed_by_name(make_engine: Any) -> None:
    engine = make_engine()
    names = {engine.plugin_manager.get_name(p) for p in engine.plugin_manager.get_plugins()}
    assert {"rac.default.compensations", "rac.default.classify", "rac.default.render"} <= names
    engine.plugin_manager.unregister(name="rac.default.result_errors")

    def tool(x: int) -> dict[str, Any]:
        return {"error": "ignored now"}

    engine.register_tools([tool])
    with engine.run() as run:
        assert run.call("tool", x=1) == {"error": "ignored now"}


def test_bad_plugin_is_a_clear_error(make_engine: Any) -> None:
    class Wrong:
        @rac.hookimpl
        def rac_classify_error(self, tool: str, error: BaseException, color: str) -> None:
            return None

    with pytest.raises(rac.ConfigurationError, match="does not match the hookspecs"):
        make_engine(plugins=[Wrong()])


class FrameworkTool:
    """A stand-in for a framework's tool type: a name, a schema and a run method."""

    def __init__(self, name: str, fn: Any, schema: dict[str, Any]) -> None:
        self.name, self.fn, self.schema = name, fn, schema

    def run(self, payload: dict[str, Any]) -> Any:
        return self.fn(**payload)


class FrameworkTools:
    @rac.hookimpl
    def rac_adapt_tool(self, tool: Any) -> rac.Tool | None:
        if not isinstance(tool, FrameworkTool):
            return None
        return rac.Tool(tool.name, call=tool.run, params=list(tool.schema),
                        required=list(tool.schema))


def test_adapters_teach_the_engine_their_tool_type(world: TravelWorld) -> None:
    tools = [FrameworkTool("book_hotel", world.book_hotel, {"guest": 1, "city": 1, "nights": 1}),
             FrameworkTool("cancel_hotel", world.cancel_hotel, {"booking_id": 1})]
    engine = rac.RAC(plugins=[FrameworkTools()], tools=tools, store="memory://",
                     compensations={"book_hotel": "cancel_hotel"})
    assert engine.tools["cancel_hotel"].params == ["booking_id"]
    with engine.run() as run:
        run.call("book_hotel", guest="a", city="Rome", nights=2)
        assert run.rollback().clean
    assert_no_live_effects(world)
    with pytest.raises(TypeError, match="expected a rac.Tool or a function"):
        engine.register_tools([object()])


def test_runs_can_be_finished_and_joined_again(engine: rac.RAC, world: TravelWorld) -> None:
    run = engine.run()
    run.call("book_hotel", guest="a", city="Rome", nights=1)
    run.finish()
    assert engine.store.get_run(run.run_id).status is rac.RunStatus.COMPLETED  # type: ignore[union-attr]
    run.call("book_hotel", guest="b", city="Rome", nights=1)
    assert run.status is rac.RunStatus.RUNNING
    engine.extensions["my_adapter"] = {"turns": 1}
    assert engine.extensions == {"my_adapter": {"turns": 1}}
