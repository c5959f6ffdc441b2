"""I8: crash a RAC-sqlite run at every enumerated point, recover it in a fresh process, and
check I1-I7 against the world.

For one (scenario, fault class, seed) a traced run first lists every crash point it passes, in
order (``<tool>:after_intent``, ``<tool>:after_effect``, ``<tool>:after_outcome``,
``rollback:after_status``, ``<undo>:before_intent`` ... ``rollback:after_end``, as
:class:`rac.demo.crash.CrashPlugin` names them). Then, for the k-th point, a forked process
runs the same episode and ends with ``os._exit`` when it reaches that point: no ``finally``, no
rollback, nothing flushed. The world is an external service, so its state survives the crash
(it is saved after every effect). A second forked process, with a new engine on the same SQLite
log, calls ``engine.recover()`` and the invariants are checked against the world's ledger.

In-doubt calls (intent logged, outcome not) are undone by idempotency key: the compensators
accept ``action_key`` and look up what the forward call with that key did, or do nothing if it
never took effect (as the crash demo's keyed travel world does). In the ``lookup`` variant (the
real tau2 airline domain, whose tools take no key) the engine declares the world's lookups, and
recovery asks them whether an in-doubt call took effect (found: compensated; absent: it did not
happen); tau2's database is saved after every write and reloaded in the recovering process.
"""

from __future__ import annotations

import inspect
import json
import os
import pickle
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import rac
from benchmarks.approaches.base import (
    ABORT,
    ATTENTION,
    GOAL,
    Episode,
    RunResult,
    Setup,
    make_setup,
)
from benchmarks.approaches.rac_engine import (
    RETRY,
    ResultSchema,
    compensations,
    declarations,
    drive_under_rac,
    log_view,
)
from benchmarks.harness import catalog
from benchmarks.harness.classify import classify
from benchmarks.harness.invariants import INVARIANTS, check
from benchmarks.worlds.base import CompSpec, World
from rac.demo.crash import CRASH_EXIT_CODE, CrashPlugin

#: (scenario, fault class, world variant, seeds in quick mode, seeds in full mode)
CASES: list[tuple[str, str, str, int, int]] = [
    ("travel/trip_budget", "clean", "keyed", 0, 1),
    ("travel/trip_budget", "unsolvable", "keyed", 1, 1),
    ("travel/trip_budget", "comp_transient", "keyed", 0, 4),
    ("travel/trip_budget", "transient", "keyed", 0, 4),
    ("travel/group_of_3", "unsolvable", "keyed", 0, 1),
    # no tool takes a key: an in-doubt call cannot be looked up after the crash
    ("travel/trip_budget", "unsolvable", "plain", 0, 1),
    ("travel/group_of_3", "unsolvable", "plain", 1, 1),
    # the real tau2 airline domain: no key; recovery without and with the booking's lookup
    ("tau2_airline/three_passengers", "unsolvable", "plain", 0, 1),
    ("tau2_airline/three_passengers", "unsolvable", "lookup", 1, 1),
]
#: crash-case variants: the world variants, and ``lookup`` (``plain`` with lookups declared)
LOOKUP_VARIANT = "lookup"
ACTION_KEY = "action_key"
_SKIP = ("clock", "idempotency_key", "once")


class NthPoint(CrashPlugin):
    """Records every crash point passed; ends the process at the ``n``-th (1-based; 0: never)."""

    def __init__(self, n: int, undo: dict[str, str]) -> None:
        super().__init__("", undo=undo)
        self.n = n
        self.seen: list[str] = []

    def reached(self, point: str) -> None:
        self.seen.append(point)
        if len(self.seen) == self.n:
            self.action(point)


# -- the world as a durable external service ----------------------------------------------------
def save_world(world: World, path: Path) -> None:
    """Write the world's state (ledger, inventory, stored replies; a database world's changed
    records) atomically."""
    own = getattr(world, "state", None)
    if own is not None:
        data: Any = own()
    else:
        data = (world.clock.now(), {k: v for k, v in world.__dict__.items() if k not in _SKIP})
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(pickle.dumps(data))
    os.replace(tmp, path)


def load_world(world: World, path: Path) -> None:
    """Restore ``world`` (freshly made for the same scenario) from ``path``."""
    data = pickle.loads(path.read_bytes())
    own = getattr(world, "load_state", None)
    if own is not None:
        own(data)
        return
    now, state = data
    world.__dict__.update(state)
    world.clock.advance(now - world.clock.now())


def make_durable(world: World, path: Path, plugin: NthPoint) -> None:
    """Save the world right after every effect, then pass ``<tool>:after_effect``."""
    if hasattr(world, "after_effect"):  # a database world calls back after each write
        def saved(tool: str) -> None:
            save_world(world, path)
            plugin.reached(f"{tool}:after_effect")

        world.after_effect = saved
        return
    plain = world.once

    def once(tool: str, do: Callable[[], Any]) -> Any:
        def effect() -> Any:
            out = do()
            key = world.idempotency_key()
            if key is not None:  # what ``once`` stores on return, stored with the effect
                world._replies[(tool, key)] = out
            save_world(world, path)
            plugin.reached(f"{tool}:after_effect")
            return out
        return plain(tool, effect)

    world.once = once  # type: ignore[method-assign]


# -- compensation by id, or by the idempotency key of an in-doubt call --------------------------
def _keyed_mapper(spec: CompSpec, idfield: str) -> Callable[[dict[str, Any], Any], Any]:
    def mapper(args: dict[str, Any], result: Any) -> dict[str, Any]:
        if isinstance(result, dict) and result.get(idfield):
            return spec.build(args, result)
        return {ACTION_KEY: str(args.get("idempotency_key") or "")}
    return mapper


def _keyed_compensator(world: World, forward: str, spec: CompSpec, idfield: str,
                       fn: Callable[..., Any]) -> Callable[..., Any]:
    (param,) = spec.params

    def undo(**kw: Any) -> Any:
        key = kw.pop(ACTION_KEY, "")
        if not kw.get(param):
            reply = world._replies.get((forward, key)) if key else None
            if not isinstance(reply, dict) or not reply.get(idfield):
                return {"cancelled": False, "reason": "nothing was done under that key"}
            kw[param] = reply[idfield]
        return fn(**kw)

    sig = inspect.signature(fn)
    params = [p.replace(default="") if p.name == param else p for p in sig.parameters.values()]
    extra = inspect.Parameter(ACTION_KEY, inspect.Parameter.KEYWORD_ONLY, default="")
    undo.__signature__ = sig.replace(parameters=[*params, extra])  # type: ignore[attr-defined]
    undo.__name__ = spec.tool
    return undo


def _engine(world: World, tools: dict[str, Callable[..., Any]], url: str, clock: Any,
            plugins: list[Any], variant: str) -> tuple[rac.RAC, list[rac.Tool]]:
    # the declared paths (and before-images); with ``lookup``, the world's lookups too
    comps = compensations(world, lookups=variant == LOOKUP_VARIANT)
    tools = dict(tools)
    for fwd, spec in world.compensations.items():
        idfield = world.effect_field[fwd]
        if variant == "keyed" and fwd in world.keyed_tools:
            comps[fwd] = rac.Compensation(tool=spec.tool, args=_keyed_mapper(spec, idfield))
            tools[spec.tool] = _keyed_compensator(world, fwd, spec, idfield, tools[spec.tool])
    rtools = [rac.Tool.from_function(fn, name=name) for name, fn in tools.items()]
    engine = rac.RAC(compensations=comps, alternatives=world.alternatives,
                     read_only=world.read_only, retry=RETRY, store=url, clock=clock,
                     plugins=[ResultSchema(world.effect_field,
                                           world.keyed_tools if variant == "keyed"
                                           else frozenset()), *plugins], tools=rtools,
                     load_entrypoints=False, **declarations(world))
    return engine, rtools


def _undo_names(world: World) -> dict[str, str]:
    return {fwd: spec.tool for fwd, spec in world.compensations.items()}


def _setup(scenario: str, cls: str, variant: str, seed: int) -> Setup:
    """The episode's setup; the ``lookup`` variant runs in the ``plain`` world."""
    return make_setup(catalog.scenarios()[scenario], catalog.fault_classes()[cls], seed,
                      "plain" if variant == LOOKUP_VARIANT else variant)


def _run_to_point(scenario: str, cls: str, variant: str, seed: int, n: int, db: Path,
                  world_file: Path) -> list[str]:
    """Run the episode under RAC; end the process at the n-th point (n=0: trace only)."""
    setup = _setup(scenario, cls, variant, seed)
    plugin = NthPoint(n, _undo_names(setup.world))
    make_durable(setup.world, world_file, plugin)
    save_world(setup.world, world_file)
    engine, tools = _engine(setup.world, setup.tools, f"sqlite:///{db}", setup.clock, [plugin],
                            variant)
    drive_under_rac(engine, setup, f"{scenario}:{cls}:{variant}:{seed}", tools)
    engine.store.close()
    save_world(setup.world, world_file)
    reset = getattr(setup.world, "reset", None)
    if n == 0 and reset is not None:  # the trace ran in this process: put its database back
        reset()
    return plugin.seen


def _recover_and_check(scenario: str, cls: str, variant: str, seed: int, db: Path,
                       world_file: Path) -> dict[str, Any]:
    """In a fresh process: reload the world, recover the log, check I1-I7."""
    setup = _setup(scenario, cls, variant, seed)
    load_world(setup.world, world_file)
    engine, _ = _engine(setup.world, setup.tools, f"sqlite:///{db}", setup.clock, [], variant)
    recovered = engine.recover()
    run_id = f"{scenario}:{cls}:{variant}:{seed}"
    info = engine.store.get_run(run_id)
    status = {rac.RunStatus.COMPLETED: GOAL, rac.RunStatus.COMPENSATED: ABORT,
              rac.RunStatus.NEEDS_ATTENTION: ATTENTION}.get(info.status, str(info.status)) \
        if info is not None else "missing"
    report = "; ".join(engine.render(r.report) for r in recovered if r.report is not None)
    errors = [r.reason for r in recovered if r.outcome == "error"]
    result = RunResult(status, 0, report=report,
                       log=log_view(setup.world, engine.store.get_records(run_id)),
                       claims_clean=status == ABORT)
    engine.store.close()
    ep = Episode("rac-sqlite", setup, result)
    verdict = check(ep)
    klass = classify(ep, verdict)
    return {"status": status, "recovered": len(recovered), "errors": errors,
            "goal_met": verdict.goal_met, "outcome": klass.outcome,
            "false_clean": klass.false_clean, "silent_residual": klass.silent_residual,
            "violations": {k: (v[0] if v else None) for k, v in verdict.violations.items()}}


def _in_child(fn: Callable[[], Any]) -> tuple[int, Any]:
    """Run ``fn`` in a forked process; return its exit code and what it sent back."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(r)
        code = 0
        try:
            out = json.dumps(fn()).encode()
            with os.fdopen(w, "wb") as f:
                f.write(out)
        except BaseException as e:  # noqa: BLE001 - reported to the parent
            with os.fdopen(w, "wb") as f:
                f.write(json.dumps({"child_error": f"{type(e).__name__}: {e}"}).encode())
            code = 1
        os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), (json.loads(data) if data else None)


def crash_case(task: tuple[str, str, str, int]) -> list[dict[str, Any]]:
    """Every crash point of one (scenario, class, seed): crash there, recover, check."""
    scenario, cls, variant, seed = task
    from benchmarks.harness.runner import quiet

    quiet()
    tmp = Path(tempfile.mkdtemp(prefix="rac-i8-"))
    rows: list[dict[str, Any]] = []
    try:
        points = _run_to_point(scenario, cls, variant, seed, 0, tmp / "trace.db",
                               tmp / "trace.world")
        for k, point in enumerate(points, start=1):
            db, wf = tmp / f"{k}.db", tmp / f"{k}.world"
            code, _ = _in_child(lambda k=k, db=db, wf=wf: _run_to_point(scenario, cls, variant, seed,
                                                                        k, db, wf))
            _, row = _in_child(lambda db=db, wf=wf: _recover_and_check(scenario, cls, variant, seed,
                                                                       db, wf))
            row = row or {"child_error": "no answer"}
            row.update({"scenario": scenario, "cls": cls, "variant": variant, "seed": seed,
                        "point": point,
                        "index": k, "crashed": code == CRASH_EXIT_CODE})
            rows.append(row)
            for f in tmp.glob(f"{k}.*"):
                f.unlink(missing_ok=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


def tasks(quick: bool) -> list[tuple[str, str, str, int]]:
    """(scenario, class, seed) per case."""
    return [(sc, cls, v, s) for sc, cls, v, nq, nf in CASES
            for s in range(nq if quick else nf)]


def run(quick: bool, *, workers: int = 2,
        progress: Callable[[], Any] | None = None) -> dict[str, Any]:
    """The I8 figures for ``latest.json``."""
    rows: list[dict[str, Any]] = []
    todo = tasks(quick)
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for chunk in pool.map(crash_case, todo):
            rows.extend(chunk)
            if progress is not None:
                progress()
    return summarise(rows)


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts per invariant, per case and per kind of crash point, with examples."""
    def bad(r: dict[str, Any]) -> bool:
        return bool(r.get("child_error") or r.get("errors")
                    or any((r.get("violations") or {}).values()) or not r["crashed"])

    viol = {k: sum(1 for r in rows if (r.get("violations") or {}).get(k)) for k in INVARIANTS}
    kinds = Counter(r["point"].split(":", 1)[1] for r in rows)
    cases: dict[str, Any] = {}
    for r in rows:
        c = cases.setdefault(f"{r['scenario']} [{r['cls']}/{r['variant']}]",
                             {"schedules": set(), "crash_points": 0, "violating": 0,
                              "residual": 0, "silent_residual": 0, "false_clean": 0})
        c["schedules"].add(r["seed"])
        c["crash_points"] += 1
        c["violating"] += bad(r)
        c["residual"] += r.get("outcome") == "residual"
        c["silent_residual"] += bool(r.get("silent_residual"))
        c["false_clean"] += bool(r.get("false_clean"))
    for c in cases.values():
        c["schedules"] = len(c["schedules"])
    examples = [f"{r['scenario']} [{r['cls']}/{r['variant']}] seed {r['seed']} at {r['point']} (#{r['index']}): "
                + "; ".join(f"{k}: {v}" for k, v in (r.get("violations") or {}).items() if v)
                + (f" {r.get('child_error') or ''}{r.get('errors') or ''}" if bad(r) else "")
                for r in rows if bad(r)][:5]
    ends = Counter(r.get("status", "?") for r in rows)
    return {"approach": "rac-sqlite", "crash_points": len(rows),
            "residual": sum(1 for r in rows if r.get("outcome") == "residual"),
            "false_clean": sum(1 for r in rows if r.get("false_clean")),
            "silent_residual": sum(1 for r in rows if r.get("silent_residual")),
            "by_variant": {v: {"crash_points": sum(1 for r in rows if r["variant"] == v),
                               "violating": sum(1 for r in rows if r["variant"] == v and bad(r)),
                               "false_clean": sum(1 for r in rows if r["variant"] == v
                                                  and r.get("false_clean"))}
                           for v in sorted({r["variant"] for r in rows})},
            "violating": sum(1 for r in rows if bad(r)), "violations": viol,
            "ends": dict(ends), "point_kinds": dict(sorted(kinds.items())),
            "cases": cases, "examples": examples}
