"""The run's bookkeeping as one object (issue 28, 'one owner of a run's state'): RunState
driven alone, with no engine, no store and no I/O, and Run as its facade: no public mutable
bookkeeping, and no module of rac.run but the state deciding a run's status."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import rac
from rac.models import Record, RecordStatus, RunStatus
from rac.run.planning import UNDOABLE
from rac.run.state import RunState

R = RecordStatus
S = RunStatus


def _action(seq: int, status: RecordStatus = R.COMPLETED, scope: str = "0") -> Record:
    return Record("r1", seq, "book", status=status, scope=scope, args={"who": str(seq)})


def test_a_call_that_begins_during_a_rollback_of_its_scope_is_undone_when_it_returns() -> None:
    state = RunState()
    done = _action(state.next_seq())
    plan = state.rollback_began("0", [done], statuses=UNDOABLE)
    assert [r.seq for r in plan.order] == [1] and state.rolling_back
    late = _action(state.next_seq(), R.PENDING)
    state.call_began(late.seq, late.scope, None)
    assert state.busy and state.in_flight == {2}
    # the rollback ends while the late call still runs: the run waits for it
    state.rollback_ended("0", plan)
    done.status = R.COMPENSATED
    assert state.rollback_outcome("0", [done, late]) is S.COMPENSATING
    # the late call returns: it is claimed for its undo, the run still compensating
    assert state.call_succeeded(late, dict(late.args), {"id": "B-2"}, keep_live=False)
    assert not state.busy and state.rolling_back
    late.status = R.COMPLETED
    doomed, status = state.doom_lifted(late.seq, S.COMPENSATING, [done, late])
    assert doomed and status is S.NEEDS_ATTENTION  # its undo did not happen: it is live
    late.status = R.COMPENSATED
    assert state.doom_lifted(late.seq, S.COMPENSATING, [done, late]) == (False, None)
    assert not state.rolling_back


def test_a_doomed_call_settled_and_undone_leaves_the_run_compensated() -> None:
    state = RunState()
    late = _action(state.next_seq(), R.PENDING)
    state.call_began(late.seq, "0", None)
    plan = state.rollback_began("0", [late], statuses=UNDOABLE)
    assert plan.order == [] and [r.seq for r in plan.running] == [1]
    state.rollback_ended("0", plan)
    assert state.call_succeeded(late, dict(late.args), None, keep_live=False)
    late.status = R.COMPENSATED
    assert state.doom_lifted(late.seq, S.COMPENSATING, [late]) == (True, S.COMPENSATED)


def test_a_call_of_another_scope_is_not_doomed_by_a_nested_rollback() -> None:
    state = RunState()
    plan = state.rollback_began("0.1", [], statuses=UNDOABLE)
    state.call_began(state.next_seq(), "0.2", None)
    state.rollback_ended("0.1", plan)
    assert not state.rolling_back and state.busy


def test_two_rollbacks_never_claim_one_effect() -> None:
    state = RunState()
    recs = [_action(state.next_seq()) for _ in range(2)]
    first = state.rollback_began("0", recs, statuses=UNDOABLE)
    second = state.rollback_began("0", recs, statuses=UNDOABLE)
    assert [r.seq for r in first.order] == [2, 1] and second.order == []
    state.rollback_ended("0", first)
    state.rollback_ended("0", second)
    assert [r.seq for r in state.rollback_began("0", recs, statuses=UNDOABLE).order] == [2, 1]
    assert state.rollbacks_started == 3


def test_a_step_done_completes_a_running_run_unless_a_call_was_interrupted() -> None:
    state = RunState()
    assert state.step_done(S.RUNNING) is S.COMPLETED
    assert state.step_done(S.NEEDS_ATTENTION) is S.NEEDS_ATTENTION  # never cleared so
    seq = state.next_seq()
    state.call_began(seq, "0", None)
    state.call_interrupted(seq, in_doubt=True)
    assert not state.busy and state.interrupted
    assert state.step_done(S.RUNNING) is S.RUNNING  # left for recovery


def test_a_passthrough_interruption_is_no_doubt() -> None:
    state = RunState()
    seq = state.next_seq()
    state.call_began(seq, "0", None)
    state.call_interrupted(seq, in_doubt=False)
    assert not state.interrupted and state.step_done(S.RUNNING) is S.COMPLETED


def test_a_call_reopens_an_idle_run_but_not_one_that_needs_a_person() -> None:
    state = RunState()
    assert state.reopens(S.COMPLETED) is S.RUNNING
    assert state.reopens(S.COMPENSATED) is S.RUNNING
    assert state.reopens(S.RESOLVED) is S.RUNNING
    assert state.reopens(S.RUNNING) is None
    assert state.reopens(S.NEEDS_ATTENTION) is None
    # a run whose rollback waits for a doomed call is not reopened by a new call
    seq = state.next_seq()
    state.call_began(seq, "0", None)
    state.rollback_began("0", [_action(seq, R.PENDING)], statuses=UNDOABLE)
    assert state.reopens(S.COMPLETED) is None


def test_a_resolution_resolves_only_a_run_with_nothing_live() -> None:
    assert RunState.resolved(S.NEEDS_ATTENTION, True) is S.RESOLVED
    assert RunState.resolved(S.NEEDS_ATTENTION, False) is None
    assert RunState.rollback_status(S.COMPLETED) is S.COMPENSATING


def test_a_model_turn_rolled_back_after_its_first_call_refuses_its_later_calls() -> None:
    state = RunState()
    assert state.batch_refusal("turn-1", "book") is None
    assert state.batch_refusal("turn-1", "book") is None  # no rollback since
    state.rollback_ended("0", state.rollback_began("0", [], statuses=UNDOABLE))
    refusal = state.batch_refusal("turn-1", "pay")
    assert refusal is not None and "nothing of pay happened" in refusal
    assert state.batch_refusal("turn-2", "pay") is None  # a later turn may run


def test_a_call_keeps_its_exact_values_when_asked_read_only_and_indexes_its_result() -> None:
    state = RunState()
    rec = _action(state.next_seq(), R.PENDING)
    state.call_began(rec.seq, "0", (frozenset({"who"}), frozenset({"id"})))
    assert state.needed(rec.seq) == (frozenset({"who"}), frozenset({"id"}))
    assert state.needed(rec.seq) is None  # read once, as the call ends
    assert not state.call_succeeded(rec, {"who": "1"}, {"id": "BK-1023"}, keep_live=True)
    assert state.live[rec.seq] == ({"who": "1"}, {"id": "BK-1023"})
    with pytest.raises(TypeError):
        state.live[rec.seq] = ({}, None)  # type: ignore[index]
    # a later call whose arguments carry its id depends on it
    assert state.dependencies({"booking_id": "BK-1023"}) == [rec.seq]


def test_a_run_has_no_public_mutable_bookkeeping(engine: rac.RAC) -> None:
    with engine.run() as run:
        public = {k for k in vars(run) if not k.startswith("_")}
        # references to the run's parts and names, never reassigned
        assert public <= {"engine", "run_id", "key_prefix", "agent_id", "lock", "log"}
        assert run.in_flight == frozenset() and not run.busy
        for name in ("in_flight", "rollbacks_started", "last_report", "live", "started",
                     "state"):
            with pytest.raises(AttributeError):
                setattr(run, name, None)


_RAC = Path(rac.__file__).parent
#: what decides a run's status: only rac.lifecycle (the tables), rac.run.state (the one
#: caller) and rac.run.planning (where plan_rollback is written) may name it
_DECIDERS = {"run_after", "status_after_rollback", "RUN_EVENTS", "RunEvent", "plan_rollback"}
_ALLOWED = {"lifecycle.py", "run/state.py", "run/planning.py"}


def test_no_module_but_the_run_state_decides_a_run_status() -> None:
    offenders = {}
    for path in _RAC.rglob("*.py"):
        module = str(path.relative_to(_RAC))
        if module in _ALLOWED:
            continue
        tree = ast.parse(path.read_text())
        used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
            n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)} | {
            a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        if used & _DECIDERS:
            offenders[module] = sorted(used & _DECIDERS)
    assert not offenders, f"modules that decide a run's status themselves: {offenders}"


def test_the_run_status_sets_are_written_once_and_agree_with_the_tables() -> None:
    """The sets other modules read (the CLI, tracing, the report) come from rac.lifecycle:
    every status is unfinished or at rest, and a rollback that left nothing live ends in
    one of CLEAN_AFTER_ROLLBACK, for the run and for a nested scope."""
    from rac.lifecycle import AT_REST, CLEAN_AFTER_ROLLBACK, IDLE, UNFINISHED, status_after_rollback

    assert AT_REST | UNFINISHED == frozenset(RunStatus) and not AT_REST & UNFINISHED
    assert IDLE < AT_REST and RunStatus.NEEDS_ATTENTION in AT_REST - IDLE
    undone = [Record("r", 1, "book", status=RecordStatus.COMPENSATED, scope="0.1")]
    assert {status_after_rollback(undone, scope) for scope in ("0", "0.1")} \
        == CLEAN_AFTER_ROLLBACK
    sources = {m: (_RAC / m).read_text() for m in ("cli/render.py", "otel.py", "report.py")}
    for module, text in sources.items():
        assert "RunStatus.COMPENSATED, RunStatus" not in text \
            and "RunStatus.RUNNING, RunStatus" not in text, module
