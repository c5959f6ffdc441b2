"""A hypothesis state machine over random tool sequences, faults and crash points: compensation
order newest first, a net-zero world after every abort, only legal status transitions."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import rac
from rac.demo.crash import CRASH_POINTS, CrashPlugin, KeyedTravelWorld
from rac.lifecycle import RECORD_TRANSITIONS as LEGAL_TRANSITIONS
from rac.models import Record, RecordKind, RecordStatus, RunStatus
from rac.stores import MemoryStore
from rac.testing import VirtualClock, abandon_runs
from tests.reliability.support import check_world_after_abort, keyed_engine

BOOKINGS = {
    "book_flight": {"passenger": "p", "origin": "X", "dest": "Y"},
    "book_hotel": {"guest": "p", "city": "Y", "nights": 1},
    "book_car": {"driver": "p", "city": "Y"},
    "charge_card": {"customer": "p", "amount": 10.0},
}


class Crash(BaseException):
    pass


class Transitions:
    """Records every status change the engine writes and checks it against LEGAL_TRANSITIONS."""

    def __init__(self) -> None:
        self.last: dict[tuple[str, int], RecordStatus] = {}
        self.illegal: list[str] = []

    @rac.hookimpl
    def rac_record_written(self, record: Record, previous: str | None) -> None:
        key = (record.run_id, record.seq)
        before = self.last.get(key)
        if before is not None and before is not record.status \
                and record.status not in LEGAL_TRANSITIONS[before]:
            self.illegal.append(f"{record.tool}#{record.seq}: {before} -> {record.status}")
        self.last[key] = record.status


class RollbackMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.world = KeyedTravelWorld()
        self.store = MemoryStore()
        self.clock = VirtualClock()
        self.watch = Transitions()
        self.plan: list[str] = []
        self.finished = False

    def _engine(self, crash: CrashPlugin | None = None) -> rac.RAC:
        engine = keyed_engine(self.world, self.store, self.clock)
        engine.register_plugin(self.watch)
        if crash is not None:
            engine.register_plugin(crash)
        return engine

    @precondition(lambda self: not self.finished and len(self.plan) < 5)
    @rule(tool=st.sampled_from(sorted(BOOKINGS)))
    def add_step(self, tool: str) -> None:
        self.plan.append(tool)

    @precondition(lambda self: not self.finished and self.plan)
    @rule(fail_at=st.integers(0, 4), transient=st.integers(0, 3),
          crash=st.one_of(st.none(), st.sampled_from(CRASH_POINTS)))
    def run_and_recover(self, fail_at: int, transient: int, crash: str | None) -> None:
        self.finished = True
        failing = self.plan[min(fail_at, len(self.plan) - 1)]
        self.world.fail(failing, "permanent", skip=self.plan.count(failing) - 1)
        if transient:
            self.world.fail("cancel_flight", "transient", times=transient)
        plugin = None
        if crash is not None:
            plugin = CrashPlugin(crash, action=lambda p: (_ for _ in ()).throw(Crash(p)))
            plugin.watch(self.world)
        engine = self._engine(plugin)
        run = engine.run()
        run.start()
        crashed = False
        try:
            for tool in self.plan:
                run.call(tool, **BOOKINGS[tool])
        except rac.ToolCallFailed:
            pass
        except Crash:
            crashed = True
        self.world.after_effect = None
        if crashed:
            abandon_runs(engine)  # killed: its lease runs out
            (out,) = self._engine().recover([run.run_id])
            status = out.status
        else:
            run.finish()  # the agent stops: an operator may act on its run
            status = run.status
        records = self.store.get_records(run.run_id)
        if status is RunStatus.NEEDS_ATTENTION:
            # Only a compensation that ran out of retries may leave it so; a resume fixes it.
            assert any(r.status is RecordStatus.COMPENSATION_FAILED for r in records)
            self.world.faults.clear()
            status = self._engine().resume(run.run_id).status
            records = self.store.get_records(run.run_id)
        assert status is RunStatus.COMPENSATED, (status, records)
        self._check_order(records)
        check_world_after_abort(self.world)

    @precondition(lambda self: self.finished)
    @rule()
    def world_stays_clean(self) -> None:
        check_world_after_abort(self.world)

    @staticmethod
    def _check_order(records: list[Record]) -> None:
        # Compensations that succeeded undid their actions newest first (no declared
        # dependencies in this world's calls besides the results they consumed).
        by_seq = {r.seq: r for r in records}
        undone = [r.compensates for r in records if r.kind is RecordKind.COMPENSATION
                  and r.status is RecordStatus.COMPLETED and r.compensates is not None]
        firsts: list[int] = []
        for s in undone:
            if s not in firsts:
                firsts.append(s)
        assert all(by_seq[s].kind is RecordKind.ACTION for s in firsts)
        assert len(firsts) == len(undone), f"an action was compensated twice: {undone}"
        # A rollback interrupted by a crash is finished by recovery in the same order; a dead
        # letter is retried later by resume, so it is left out of the order.
        dead = {r.compensates for r in records if r.kind is RecordKind.COMPENSATION
                and r.status is RecordStatus.FAILED and r.note != "in_doubt"}
        ordered = [s for s in firsts if s not in dead]
        assert ordered == sorted(ordered, reverse=True), firsts

    @invariant()
    def only_legal_transitions(self) -> None:
        assert self.watch.illegal == []

    def teardown(self) -> None:
        self.world.close()


RollbackMachine.TestCase.settings = settings(
    max_examples=60, stateful_step_count=8, deadline=None,
    suppress_health_check=[HealthCheck.too_slow])
test_rollback_state_machine = RollbackMachine.TestCase

