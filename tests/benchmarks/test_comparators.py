"""The comparators: the reference (react-agent-compensation 0.2.0) reproduces whatever a worker
process ran before, and never guesses compensation arguments; agent-saga 2.3 runs through its
public API, with its retry on every tool or only where a repeat is safe, on the virtual clock.
And ``python -m benchmarks --quick`` writes a scratch file, never the committed figures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("react_agent_compensation")
pytest.importorskip("agent_saga")

from benchmarks import cli  # noqa: E402
from benchmarks.approaches import reference  # noqa: E402
from benchmarks.approaches.agent_saga import AgentSaga  # noqa: E402
from benchmarks.approaches.base import make_setup  # noqa: E402
from benchmarks.harness import report, runner  # noqa: E402
from benchmarks.harness.catalog import fault_classes, scenarios  # noqa: E402


@pytest.fixture(autouse=True)
def _quiet() -> None:
    runner.quiet()


def test_the_reference_row_does_not_depend_on_what_the_process_ran_before() -> None:
    # a worker that had run a keyed cell first used to give the reference that variant's
    # argument schema (with an idempotency key) in the plain cells, and its tools then failed
    cell = ("reference", "travel/trip_budget", "transient", 1)
    reference._SCHEMAS.clear()
    alone = runner.run_episode(*cell, "plain")
    reference._SCHEMAS.clear()
    runner.run_episode(*cell, "keyed")
    after_keyed = runner.run_episode(*cell, "plain")
    assert after_keyed == alone
    assert alone["crashed"] is None


def test_the_references_state_mapper_never_falls_back_to_a_guess() -> None:
    setup = make_setup(scenarios()["travel/trip_budget"], fault_classes()["clean"], 0)
    middleware, wrapped = reference.build_middleware(setup.world, setup.tools)
    wrapped["book_flight"].func(passenger="ann", flight="AF12")
    (record,) = middleware.transaction_log.snapshot().values()
    assert middleware.rc_manager._extract_compensation_params(record) == {"booking_id": "FL-1"}
    record.result = {"flight": "AF12", "passenger": "ann"}  # a body that lost its id
    params = middleware.rc_manager._extract_compensation_params(record)
    # no guess (the flight number, or the whole result as keyword arguments): a value no
    # compensator takes, naming what was missing
    assert list(params) == [reference.MISSING] and "booking_id" in params[reference.MISSING]
    with pytest.raises(TypeError):
        setup.world.cancel_flight(**params)


def run_saga(retry_all: bool, cls: str, scenario: str, seed: int) -> dict[str, Any]:
    return runner.run_episode("agent-saga" if retry_all else "agent-saga-noretry", scenario,
                              cls, seed)


def timed_out_after_commit(scenario: str, attempts: int | None):  # type: ignore[no-untyped-def]
    """A setup whose bookings commit and then time out (on the first ``attempts``)."""
    from benchmarks.harness.faults import FaultLayer, FaultRule

    setup = make_setup(scenarios()[scenario], fault_classes()["clean"], 0)
    setup.layer = FaultLayer([FaultRule("book_flight", "timeout", "after_effect",
                                        attempts=attempts)],
                             seed=0, scenario=scenario, clock=setup.clock)
    setup.tools = setup.layer.wrap_all(setup.world.tools())
    return setup


def test_agent_saga_with_its_retry_books_again_after_a_commit_then_timeout() -> None:
    setup = timed_out_after_commit("travel/trip_budget", 1)
    result = AgentSaga(retry_all=True).run(setup)
    flights = [e for e in setup.world.ledger.live_effects() if e.tool == "book_flight"]
    # the retry acted again: two seats for one passenger, and the run says it reached its goal
    assert result.status == "goal" and len(flights) == 2
    assert setup.clock.slept > 0  # its backoff waited on the virtual clock, not the wall
    assert runner.run_episode("agent-saga", "travel/trip_budget", "ambiguous_first",
                              0)["approach"] == "agent-saga"


def test_agent_saga_without_retry_names_the_call_it_cannot_undo() -> None:
    setup = timed_out_after_commit("travel/group_of_3", None)
    result = AgentSaga(retry_all=False).run(setup)
    # the booking is live and its id never came back: agent-saga names it orphaned
    assert len(setup.world.ledger.live_effects()) == 1
    assert setup.layer.stats.per_tool["book_flight"] == 1  # not retried
    assert result.status == "needs_attention" and not result.claims_clean
    assert "book_flight" in result.report and "ORPHANED" in result.report


def test_agent_saga_undoes_what_it_did_and_names_the_refused_step() -> None:
    # cid's booking is refused for good: agent-saga takes every failed step as UNKNOWN, so it
    # undoes ann's and bob's and names cid's as orphaned (nothing of it is live)
    row = run_saga(True, "unsolvable", "travel/group_of_3", 0)
    assert row["compensations"] == 2 and row["outcome"] == "equivalent_clean"
    assert row["status"] == "needs_attention" and not row["claims_clean"]


def test_quick_writes_the_scratch_file_and_full_the_committed_figures(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    calls: list[dict[str, Any]] = []

    def fake_run(**kwargs: Any) -> dict[str, Any]:
        calls.append(kwargs)
        return {"targets": {}, "meta": {"seconds": 0.0}}

    monkeypatch.setattr(cli, "run", fake_run)
    cli.main(["--quick"])
    cli.main(["--full"])
    cli.main([])
    cli.main(["--full", "--no-docs"])
    cli.main(["--full", "--out", str(tmp_path / "x.json")])
    assert [(c["quick"], c["out"], c["docs"]) for c in calls] == [
        (True, report.QUICK_RESULTS, False), (False, report.RESULTS, True),
        (False, report.RESULTS, True), (False, report.RESULTS, False),
        (False, tmp_path / "x.json", False)]
    assert report.QUICK_RESULTS != report.RESULTS
    ignored = (report.ROOT / ".gitignore").read_text().splitlines()
    assert "benchmarks/results/quick.json" in ignored
    assert "wrote benchmarks/results/quick.json in" in capsys.readouterr().out


def test_the_committed_figures_come_from_a_full_run() -> None:
    data = json.loads(report.RESULTS.read_text())
    assert data["meta"]["mode"] == "full"


def test_the_declared_variant_says_its_tools_refuse_before_they_act() -> None:
    from benchmarks.approaches.rac_engine import can_declare_errors_before_effect
    from benchmarks.harness.catalog import runs_in

    if not can_declare_errors_before_effect():
        assert not runs_in("rac-memory+declared", "travel/trip_budget")
        pytest.skip("this core takes no errors_before_effect")
    # rent_car is refused for good with a ValueError: declared, that is "did not happen",
    # so the rollback of the rest is the whole story and the run ends compensated
    for seed in range(2):
        row = runner.run_episode("rac-memory+declared", "travel/trip_budget", "unsolvable",
                                 seed)
        assert (row["status"], row["outcome"], row["claims_clean"]) == (
            "abort", "equivalent_clean", True), row
