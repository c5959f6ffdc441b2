"""Job shop (REALM-Bench P11-P13 style): operations on machines with overlap and precedence."""

from __future__ import annotations

from typing import Any, ClassVar

from benchmarks.harness.clock import VirtualClock
from benchmarks.harness.scenario import Option, Scenario, Slot
from benchmarks.worlds.base import CompSpec, World

#: job -> ordered operations (name, duration, eligible machines)
JOBS: dict[str, list[tuple[str, int, tuple[str, ...]]]] = {
    "J1": [("cut", 3, ("M1", "M2")), ("mill", 2, ("M2", "M3")), ("drill", 2, ("M1", "M3"))],
    "J2": [("cut", 2, ("M2", "M1")), ("weld", 3, ("M3", "M1"))],
}
MACHINES = ("M1", "M2", "M3")


class JobShopWorld(World):
    """A schedule of operations; the world refuses overlaps and broken precedence."""

    name = "jobshop"
    compensations: ClassVar[dict[str, CompSpec]] = {
        "schedule_op": CompSpec("cancel_op", {"slot_id": "result.slot_id"}),
    }
    read_only = frozenset({"machine_calendar"})
    effect_field: ClassVar[dict[str, str]] = {"schedule_op": "slot_id"}

    def __init__(self, clock: VirtualClock) -> None:
        super().__init__(clock)

    def _live_slots(self) -> list[Any]:
        return [e for e in self.ledger.live_effects() if e.tool == "schedule_op"]

    def machine_calendar(self, machine: str) -> list[dict[str, Any]]:
        """Busy intervals of a machine."""
        return self.once("machine_calendar", lambda: [
            {"start": e.data["start"], "end": e.data["end"]} for e in self._live_slots()
            if e.data["machine"] == machine])

    def schedule_op(self, job: str, op: str, machine: str, start: int) -> dict[str, Any]:
        """Put operation ``op`` of ``job`` on ``machine`` from ``start``."""
        def do() -> dict[str, Any]:
            ops = JOBS.get(job, [])
            idx = next((i for i, o in enumerate(ops) if o[0] == op), None)
            if idx is None:
                raise ValueError(f"unknown operation {job}/{op}")
            _, duration, eligible = ops[idx]
            if machine not in eligible:
                raise ValueError(f"{job}/{op} cannot run on {machine}")
            end = start + duration
            for e in self._live_slots():
                if e.data["machine"] == machine and start < e.data["end"] and e.data["start"] < end:
                    raise ValueError(f"overlap on {machine} with {e.eid}")
            deps: list[str] = []
            if idx > 0:
                prev = next((e for e in self._live_slots() if e.data["job"] == job
                             and e.data["op"] == ops[idx - 1][0]), None)
                if prev is None or prev.data["end"] > start:
                    raise ValueError(f"precedence: {job}/{ops[idx - 1][0]} must end first")
                deps.append(prev.eid)
            eid = self.new_id("OP")
            self.ledger.create(eid, "schedule_op", f"{job}/{op}", depends_on=deps, job=job,
                               op=op, machine=machine, start=start, end=end)
            return {"slot_id": eid, "job": job, "op": op, "machine": machine, "start": start,
                    "end": end}
        return self.once("schedule_op", do)

    def cancel_op(self, slot_id: str) -> dict[str, Any]:
        """Take an operation off the schedule."""
        def do() -> dict[str, Any]:
            eff = self.ledger.effects.get(slot_id)
            if eff is None or eff.tool != "schedule_op":
                raise ValueError(f"no scheduled operation {slot_id}")
            if not eff.live:
                raise ValueError(f"{slot_id} is not scheduled")
            self.ledger.undo(slot_id)
            return {"cancelled": slot_id}
        return self.once("cancel_op", do)

    def conservation_errors(self) -> list[str]:
        """No overlap on any machine and precedence holds among live operations."""
        errors = []
        live = self._live_slots()
        for i, a in enumerate(live):
            for b in live[i + 1:]:
                if (a.data["machine"] == b.data["machine"] and a.data["start"] < b.data["end"]
                        and b.data["start"] < a.data["end"]):
                    errors.append(f"{a.eid} and {b.eid} overlap on {a.data['machine']}")
        for e in live:
            for dep in e.depends_on:
                if not self.ledger.effects[dep].live:
                    errors.append(f"{e.eid} scheduled after {dep}, which is gone")
        return errors


def _op_options(job: str, idx: int) -> Any:
    name, duration, eligible = JOBS[job][idx]

    def options(done: dict[str, Any]) -> list[Option]:
        ready = done[f"{job}/{JOBS[job][idx - 1][0]}"]["end"] if idx > 0 else 0
        busy = [(r["machine"], r["start"], r["end"]) for r in done.values()
                if isinstance(r, dict) and "machine" in r]
        opts = []
        for m in eligible:
            start = ready
            for bm, bs, be in sorted(busy, key=lambda b: b[1]):
                if bm == m and start < be and bs < start + duration:
                    start = be
            opts.append((start + duration, m, start))
        return [Option("schedule_op", lambda d, m=m, s=s: {"job": job, "op": name,
                                                          "machine": m, "start": s},
                       f"{m}@{s}") for _, m, s in sorted(opts)]
    return options


def scenarios() -> list[Scenario]:
    """Schedule two jobs (five operations) on three machines."""
    slots = [Slot(f"{j}/{JOBS[j][i][0]}", _op_options(j, i))
             for j, i in (("J1", 0), ("J2", 0), ("J1", 1), ("J2", 1), ("J1", 2))]

    def goal(w: World) -> bool:
        live = [e for e in w.ledger.live_effects() if e.tool == "schedule_op"]
        return sorted(e.key for e in live) == sorted(s.name for s in slots)

    return [Scenario("jobshop", "two_jobs", slots,
                     "Schedule jobs J1 (cut, mill, drill) and J2 (cut, weld) on M1-M3.", goal,
                     make_world=JobShopWorld)]
