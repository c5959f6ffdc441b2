"""RAC under the same ReAct policy: each step runs in its own nested scope, so a step that fails
for good is undone alone and the policy replans; when the policy gives up, the whole run is
rolled back."""

from __future__ import annotations

import atexit
import contextlib
import inspect
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import rac
from benchmarks.approaches.base import (
    ABORT,
    ATTENTION,
    GOAL,
    LogView,
    RunResult,
    Setup,
    drive,
)
from benchmarks.harness.policies import Abort, Call, Finish, Observation, ReActPolicy
from benchmarks.worlds.base import World
from rac.adapters import batches
from rac.stores import open_store

#: one call plus two retries, as the prompted baseline and the saga get
RETRY = rac.RetryPolicy(max_attempts=3, initial_delay=0.5, multiplier=2.0, max_delay=8.0,
                        jitter=0.1)


def scenario_db_dir() -> str | None:
    """Where the scenario runs keep their SQLite files: ``$RAC_BENCH_SQLITE_DIR``, else
    ``/dev/shm`` when present (invariants do not depend on fsync; the overhead figures use the
    ordinary temp directory), else the temp directory."""
    env = os.environ.get("RAC_BENCH_SQLITE_DIR")
    if env:
        return env
    return "/dev/shm" if os.path.isdir("/dev/shm") else None


def compensations(world: type[World] | World, *,
                  lookups: bool = False) -> dict[str, rac.Compensation]:
    """A world's compensation table in RAC's terms (argument paths, nothing guessed), plus the
    updates a before-image can undo, where the core offers ``rac.BeforeImage``; with
    ``lookups``, the forward tools the world can find again get their ``rac.Lookup``."""
    out = {fwd: rac.Compensation(tool=spec.tool, args=dict(spec.params),
                                 lookup=lookup(world, fwd) if lookups else None)
           for fwd, spec in world.compensations.items()}
    before_image = getattr(rac, "BeforeImage", None)
    if before_image is not None:
        for tool, (read, read_args, args) in world.restores.items():
            out[tool] = rac.Compensation(tool=tool, args=dict(args),
                                         before=before_image(read, args=dict(read_args)))
    return out


def lookup(world: type[World] | World, tool: str) -> rac.Lookup | None:
    """The ``rac.Lookup`` that reconciles ``tool``'s calls in ``world``, or None."""
    spec = world.lookups.get(tool)
    if spec is None:
        return None
    return rac.Lookup(spec.tool, args=dict(spec.args), items=spec.items,
                      match=dict(spec.match))


def declarations(world: type[World] | World) -> dict[str, Any]:
    """What a careful user declares beyond the pairs, where the core offers it: each tool's
    effect class (a repeat of ``idempotent`` tools does nothing more; tools that take a key are
    found ``keyed`` by their parameter; the rest are ``unsafe``) and the irreversible tools."""
    if not hasattr(rac, "Effect"):
        return {}
    effects = {t: "idempotent" for t in world.idempotent_tools}
    return {"effects": effects, "irreversible": sorted(world.irreversible)}


class ResultSchema:
    """The application's response check, through RAC's ``rac_detect_result_error`` hook: a
    forward tool's result must carry a non-empty id of the effect it made. A response without
    one (truncated or garbled) is an error. A careful user asks for a retry only where the
    tool takes an idempotency key (``keyed``: the retry carries the same key, so the API returns
    the original reply instead of acting twice); elsewhere a retry would act again, so the
    error is permanent. Either way the reply came after the tool acted, which it says with
    ``ambiguous`` where the core offers it."""

    def __init__(self, id_fields: dict[str, str], keyed: frozenset[str] = frozenset()) -> None:
        self.id_fields = dict(id_fields)
        #: the tools that take a key in the run at hand (set per run)
        self.keyed = keyed

    @rac.hookimpl
    def rac_detect_result_error(self, tool: str, result: Any) -> BaseException | None:
        field = self.id_fields.get(tool)
        if field is None:
            return None
        value = result.get(field) if isinstance(result, dict) else None
        if isinstance(value, str) and value:
            return None
        error = rac.ResultError(f"{tool}: response has no valid {field}", result,
                                transient=tool in self.keyed)
        if hasattr(error, "ambiguous"):  # a 200 came back: the tool acted (core >= issue 13)
            error.ambiguous = True
        return error


#: what ``rac-memory+declared`` declares: the worlds' tools refuse a request with a
#: ``ValueError`` in their own words before they act (their validation, as tau2's tools do).
#: The ``error_after_write`` fault class breaks that promise on purpose.
ERRORS_BEFORE_EFFECT: tuple[type[BaseException], ...] = (ValueError,)


def can_declare_errors_before_effect() -> bool:
    """Whether the core takes ``errors_before_effect=`` (issue 25)."""
    return "errors_before_effect" in inspect.signature(rac.RAC).parameters


def make_engine(world: World, store: str, clock: Any,
                schema: ResultSchema | None = None, *, lookups: bool = False,
                declared: bool = False) -> rac.RAC:
    """An engine configured for ``world`` (with ``lookups``: its lookups declared too; with
    ``declared``: the errors its tools raise before any effect, :data:`ERRORS_BEFORE_EFFECT`)."""
    extra: dict[str, Any] = {"errors_before_effect": ERRORS_BEFORE_EFFECT} if declared else {}
    return rac.RAC(compensations=compensations(world, lookups=lookups),
                   alternatives=world.alternatives,
                   read_only=world.read_only, retry=RETRY, store=store, clock=clock,
                   plugins=[schema or ResultSchema(world.effect_field)], load_entrypoints=False,
                   **declarations(world), **extra)


def log_view(world: World, records: list[rac.Record]) -> LogView:
    """What RAC's log believes about the world's effects."""
    view = LogView()
    for rec in records:
        if rec.kind is not rac.RecordKind.ACTION or rec.read_only:
            continue
        eid = world.effect_id(rec.tool, rec.result)
        if eid is None:
            continue
        if rec.status in (rac.RecordStatus.COMPLETED, rac.RecordStatus.COMPENSATION_FAILED):
            view.live.add(eid)
        elif rec.status is rac.RecordStatus.COMPENSATED:
            view.undone.add(eid)
    return view


class SwitchClock:
    """The clock of a reused engine: forwards to the virtual clock of the run in progress."""

    def __init__(self) -> None:
        self.target: Any = None

    def now(self) -> float:
        """Now on the current run's clock."""
        return float(self.target.now())

    def sleep(self, seconds: float) -> None:
        """Wait on the current run's clock."""
        self.target.sleep(seconds)

    async def asleep(self, seconds: float) -> None:
        """Async form of :meth:`sleep`."""
        self.target.sleep(seconds)


@dataclass
class RACApproach:
    """RAC with a memory or SQLite store under the ReAct policy (or a forgetful one); with
    ``lookups``, the world's lookups are declared as well (``rac-memory+lookup``), and the
    approach runs only in worlds that have one (elsewhere it is ``rac-memory`` itself)."""

    store: str = "memory"
    p_forget: float = 0.0
    name: str = ""
    lookups: bool = False
    #: declare the errors the worlds' tools raise before any effect (``rac-memory+declared``)
    declared: bool = False
    _tmp: Path | None = field(default=None, repr=False)
    #: one engine per world class, reused by every run of this process (building an engine
    #: registers its plugins, which costs more than a whole run); each run gets its own store
    _engines: dict[type, tuple[rac.RAC, SwitchClock, ResultSchema]] = field(
        default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not self.name:
            self.name = f"rac-{self.store}" + (f"+forgetful-p{self.p_forget:g}"
                                               if self.p_forget else "") \
                + ("+lookup" if self.lookups else "") + ("+declared" if self.declared else "")

    def applies(self, world: type[World]) -> bool:
        """Whether this approach runs in ``world``'s cells (the lookup variant only where the
        world declares a lookup)."""
        if self.declared and not can_declare_errors_before_effect():
            return False
        return not self.lookups or bool(world.lookups)

    def _store_url(self, run_id: str) -> str:
        if self.store == "memory":
            return "memory://"
        if self._tmp is None:
            self._tmp = Path(tempfile.mkdtemp(prefix="rac-bench-", dir=scenario_db_dir()))
            atexit.register(shutil.rmtree, self._tmp, True)
        return f"sqlite:///{self._tmp / (run_id.replace('/', '_') + '.db')}"

    def _drop_store(self, run_id: str) -> None:
        if self._tmp is not None:
            for f in self._tmp.glob(run_id.replace("/", "_") + ".db*"):
                f.unlink(missing_ok=True)

    def run(self, setup: Setup) -> RunResult:
        """Run the policy with every call under RAC."""
        world = setup.world
        # a run id fixed by the episode makes RAC's backoff jitter reproducible
        run_id = f"{setup.scenario.key}:{setup.fault_class.name}:{setup.seed}"
        if type(world) not in self._engines:
            clock = SwitchClock()
            schema = ResultSchema(world.effect_field)
            self._engines[type(world)] = (make_engine(world, "memory://", clock, schema,
                                                      lookups=self.lookups,
                                                      declared=self.declared), clock, schema)
        engine, clock, schema = self._engines[type(world)]
        clock.target = setup.clock
        schema.keyed = setup.layer.keyed
        engine.store = open_store(self._store_url(run_id))
        tools = [rac.Tool.from_function(fn, name=name) for name, fn in setup.tools.items()]
        try:
            return drive_under_rac(engine, setup, run_id, tools, p_forget=self.p_forget)
        finally:
            engine.store.close()
            self._drop_store(run_id)


def drive_under_rac(engine: rac.RAC, setup: Setup, run_id: str, tools: list[rac.Tool], *,
                    p_forget: float = 0.0) -> RunResult:
    """The ReAct policy with every call under ``engine``, one nested scope per step; the whole
    run is rolled back when the policy gives up."""
    world = setup.world
    policy = ReActPolicy(setup.scenario, world, setup.seed, p_forget=p_forget)
    report_text = ""
    told: set[int] = set()
    claims_clean = False
    #: every report the agent was given during the run (a step's rollback names what it left)
    said: list[str] = []
    with engine.run(run_id=run_id, tools=tools) as run:
        def invoke(name: str, args: dict[str, Any]) -> Any:
            return setup.tools[name](**args)

        batch: list[Any] = [None]

        @contextlib.contextmanager
        def turn() -> Iterator[None]:
            # the calls of one model turn: one scope, one batch (as an adapter runs them)
            with run.scope():
                batch[0] = ("turn", policy.steps)
                try:
                    yield
                finally:
                    batch[0] = None

        def execute(call: Call) -> Observation:
            first = setup.layer.stats.tool_calls + 1
            if batch[0] is not None:
                out = batches.execute(run, call.tool, call.args, invoke, batch=batch[0])
            else:
                with run.scope():
                    out = run.execute(call.tool, call.args, invoke)
            if out.ok:
                return Observation(True, value=out.result)
            if out.message:
                said.append(out.message)
            if (out.report is not None and out.report.clean) or (
                    out.report is None and out.undone and "was undone" in (out.message or "")):
                # RAC told the agent this step is undone and the world is back
                told.update(range(first, setup.layer.stats.tool_calls + 1))
            return Observation(False, error=str(out.error or out.message), undone=True,
                               report=out.message or "")

        end = drive(policy, setup, execute, turn=turn)
        if isinstance(end, Abort):
            report = run.rollback(reason=end.reason, scope="0")
            report_text = engine.render(report)
            claims_clean = report.clean
    records = engine.store.get_records(run.run_id)
    status = {rac.RunStatus.COMPLETED: GOAL, rac.RunStatus.COMPENSATED: ABORT,
              rac.RunStatus.NEEDS_ATTENTION: ATTENTION}.get(run.status, str(run.status))
    if isinstance(end, Finish) and run.status is rac.RunStatus.COMPLETED:
        status = GOAL
    claims_clean = claims_clean or run.status is rac.RunStatus.COMPENSATED
    report_text = "\n".join([*said, report_text]).strip()
    return RunResult(status, policy.steps, report=report_text, log=log_view(world, records),
                     claims_clean=claims_clean, claimed_undone=told)
