"""``rac.testing.prove``: prove that YOUR declarations undo YOUR tools' effects.

RAC's own tests prove RAC on RAC's worlds. :func:`prove` runs your scenario (your code driving
your agent or your tools under your engine) once without failures to learn its calls, then once
per injection point (see :mod:`rac.testing.proof_points`): each call failing before it runs,
each call timing out after it took effect, each compensation failing or timing out after its
effect, and (with ``crash=True``) the process killed at every boundary of the log and recovered
in a fresh one. After each, your ``check`` looks at your world, and prove compares what it found
with what RAC said:

* **clean**: the world is back, as RAC said;
* **named**: something is live and RAC's report named it, with its reason (not a bug in RAC, but
  a gap in your declarations: a lookup, a key or a pair would close it);
* **FALSE CLEAN**: the world is not clean and RAC said it was (or a compensator reported success
  while its effect stayed: "compensator did nothing");
* **completed**: the run finished anyway (a retry, an alternative or a lookup recovered it); the
  check is shown, not judged.

``Proof.table()`` is the one-look summary; ``rac prove`` prints it from the command line and
``rac.testing.pytest_plugin`` turns each point into a test.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rac.errors import RACError
from rac.models import Record, RecordKind, RecordStatus, RunStatus
from rac.testing.proof_points import (
    ACTION_BOUNDARIES,
    CRASH_EXIT,
    UNDO_BOUNDARIES,
    Call,
    Injector,
    Observed,
    Observer,
    Point,
)

if TYPE_CHECKING:
    from rac.engine import RAC
    from rac.report import RecoveryReport

CLEAN, NAMED, FALSE_CLEAN, COMPLETED = "clean", "named", "FALSE CLEAN", "completed"
_WORDS = re.compile(r"[^A-Za-z0-9_.:/#-]+")
NOT_REACHED, ERROR = "not reached", "error"
#: How long one child process of a crash point may take (a loaded machine, framework imports).
CHILD_TIMEOUT = 600.0


class ProveError(RACError):
    """``prove`` cannot give a verdict you could trust (a check that cannot fail, a scenario
    that makes no call under the engine, a crash point asked of something not importable)."""


@dataclass(slots=True)
class Found:
    """What the user's check (and compare) found after a point: ``clean``, the live items or
    the differences it named, and per item the id-like values it holds (what ties an item to
    the record of the call that made it)."""

    clean: bool
    items: list[str] = field(default_factory=list)
    ids: list[frozenset[str]] = field(default_factory=list)

    def __str__(self) -> str:
        if self.clean:
            return "nothing live"
        return "; ".join(self.items) if self.items else "not clean"


@dataclass(slots=True)
class PointResult:
    """One injection point, run: what RAC did and said, what the check found, the verdict."""

    point: Point
    verdict: str
    did: str
    found: Found | None
    said_clean: bool = False
    named: list[str] = field(default_factory=list)
    statuses: dict[str, str] = field(default_factory=dict)
    note: str = ""
    #: what RAC reported undone, as (action, its ref) pairs
    undone: list[tuple[str, str | None]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True unless the verdict is FALSE CLEAN, an error, or the point was never reached
        (a scenario whose calls change from run to run cannot be proved point by point)."""
        return self.verdict not in (FALSE_CLEAN, ERROR, NOT_REACHED)

    @property
    def gap(self) -> bool:
        """True when an effect stayed live (named) where a declaration could have undone it."""
        return self.verdict == NAMED and not self.point.faults_an_undo

    def explain(self) -> str:
        """The result in a few lines (a failing test's message)."""
        lines = [f"{self.point.name}: {self.verdict}", f"  injected: {self.point.describe()}",
                 f"  RAC did: {self.did}",
                 f"  check found: {self.found if self.found is not None else '-'}"]
        if self.note:
            lines.append(f"  note: {self.note}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe form."""
        return {"point": self.point.name, "describe": self.point.describe(),
                "spec": self.point.to_dict(), "verdict": self.verdict, "rac_did": self.did,
                "check_found": str(self.found) if self.found is not None else None,
                "live": self.found.items if self.found is not None else [],
                "said_clean": self.said_clean, "named": self.named,
                "undone": [f"{t} {r}" if r else t for t, r in self.undone],
                "statuses": self.statuses, "note": self.note or None}


@dataclass(slots=True)
class Proof:
    """The results of every point, and the compensators that reported success while their
    effect stayed."""

    results: list[PointResult]
    calls: list[Call] = field(default_factory=list)
    did_nothing: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def false_clean(self) -> list[PointResult]:
        """Points where the world was not clean and RAC said it was."""
        return [r for r in self.results if r.verdict == FALSE_CLEAN]

    @property
    def named(self) -> list[PointResult]:
        """Points where something stayed live and RAC named it, where a declaration could
        have undone it (a compensation made to fail is expected to leave its effect named)."""
        return [r for r in self.results if r.verdict == NAMED and not r.point.faults_an_undo]

    @property
    def errors(self) -> list[PointResult]:
        """Points prove could not judge, or never reached."""
        return [r for r in self.results if r.verdict in (ERROR, NOT_REACHED)]

    @property
    def ok(self) -> bool:
        """True when no point was a false clean, no compensator did nothing, every point was
        reached and judged, and no point asked for was skipped. Named points are reported, not
        failed (see :attr:`exit_code`)."""
        return not self.false_clean and not self.did_nothing and not self.errors \
            and not self.skipped

    @property
    def exit_code(self) -> int:
        """``rac prove``'s exit status: 0 every point clean (or completed), 1 a false clean or a
        compensator that did nothing, 3 something left live but named, 4 a point that could
        not be judged, was never reached, or was asked for and skipped (crash points that
        cannot run here)."""
        if self.false_clean or self.did_nothing:
            return 1
        if self.errors or self.skipped:
            return 4
        return 3 if self.named else 0

    def table(self) -> str:
        """The results as a table a person reads in one look."""
        from rac.testing.proof_table import proof_table

        return proof_table(self)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe form (``rac prove --json``)."""
        return {"ok": self.ok, "exit_code": self.exit_code,
                "calls": [str(c) for c in self.calls],
                "results": [r.to_dict() for r in self.results],
                "false_clean": [r.point.name for r in self.false_clean],
                "compensator_did_nothing": self.did_nothing, "skipped": self.skipped,
                "notes": self.notes}


Check = Callable[[], Any]


def _load(target: Any, what: str) -> Any:
    """``target`` itself, or the object a ``"module:attr"`` string names."""
    if not isinstance(target, str):
        return target
    module, sep, attr = target.partition(":")
    if not sep or not module or not attr:
        raise ProveError(f"{what} {target!r} is not MODULE:NAME (e.g. myapp.agent:{what})")
    try:
        obj: Any = importlib.import_module(module)
    except ImportError as e:
        raise ProveError(f"cannot import {module!r} for {what} {target!r}: {e}") from e
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ProveError(f"{module!r} has no {attr!r} (for {what} {target!r})") from None
    return obj


def _name_of(obj: Any, near: Sequence[Any], what: str) -> str:
    """``obj`` as an importable ``module:name``: its own qualified name, or a module-level name
    bound to it in the modules of ``near``."""
    if isinstance(obj, str):
        return obj
    module = getattr(obj, "__module__", None)
    qual = getattr(obj, "__qualname__", None)
    if module and qual and module != "__main__" and "<" not in qual:
        return f"{module}:{qual}"
    for other in near:
        mod = sys.modules.get(getattr(other, "__module__", "") or "")
        if mod is None or mod.__name__ == "__main__":
            continue
        for name, value in vars(mod).items():
            if value is obj:
                return f"{mod.__name__}:{name}"
    raise ProveError(f"crash points run {what} in a new process, so it must be importable by "
                     f"name: define it at module level (not in __main__) or pass it as "
                     f"'module:name'")


def _takes_argument(fn: Callable[..., Any]) -> bool:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    return any(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
               for p in params)


def _call_maybe_async(fn: Callable[..., Any], *args: Any) -> Any:
    """Call ``fn``; run the coroutine it returns to completion (in a thread of its own when this
    thread already runs an event loop)."""
    out = fn(*args)
    if not inspect.isawaitable(out):
        return out
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_await(out))
    box: dict[str, Any] = {}

    def runner() -> None:
        try:
            box["value"] = asyncio.run(_await(out))
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = e

    thread = threading.Thread(target=runner, name="rac-prove-scenario")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box.get("value")


async def _await(awaitable: Any) -> Any:
    return await awaitable


def _tokens(value: Any, depth: int = 0) -> set[str]:
    """The id-like values of one live item: every short string and 4+ digit number in it (a
    string item: its words)."""
    if isinstance(value, str):
        if depth == 0:
            return {t for t in _WORDS.split(value) if len(t) >= 3}
        return {value} if 3 <= len(value) <= 128 and " " not in value else set()
    if isinstance(value, bool) or value is None:
        return set()
    if isinstance(value, int):
        return {str(value)} if value >= 1000 else set()
    if depth > 4:
        return set()
    if isinstance(value, Mapping):
        return set().union(*(_tokens(v, depth + 1) for v in value.values())) if value else set()
    if isinstance(value, list | tuple | set | frozenset):
        return set().union(*(_tokens(v, depth + 1) for v in value)) if value else set()
    from rac.serialize import as_fields

    fields = as_fields(value)
    return _tokens(fields, depth + 1) if fields is not value else set()


def _item_ids(value: Any) -> frozenset[str]:
    """What identifies one live item: its own id (the first id-named field of a mapping, or an
    id-like value of it) when it has one, else every id-like value in it (a string: its
    words). An invoice that mentions an order is the invoice, not the order."""
    from rac.dependencies import first_result_id
    from rac.serialize import as_fields

    fields = as_fields(value) if not isinstance(value, str | int | float | bool) else value
    if isinstance(fields, Mapping):
        own = first_result_id(dict(fields))
        if own is not None:
            return frozenset({str(own)})
    return frozenset(_tokens(value, 0 if isinstance(value, str) else 1))


def _as_found(value: Any) -> Found:
    """Read what a check returned: True/None/empty (or a mapping whose values are all empty) is
    clean; False, a non-empty string or a non-empty collection is not (the items are what it
    found)."""
    if value is None or value is True:
        return Found(True)
    if value is False:
        return Found(False)
    if isinstance(value, str):
        return Found(not value.strip(), [value] if value.strip() else [],
                     [frozenset(_tokens(value))] if value.strip() else [])
    if isinstance(value, Mapping):
        live = {k: v for k, v in value.items() if v not in (None, False, "", [], {}, (), set())}
        items = [f"{k}: {_render(v)}" for k, v in live.items()]
        return Found(not items, items, [_item_ids(v) for v in live.values()])
    if isinstance(value, Iterable):
        raw = list(value)
        return Found(not raw, [_render(v) for v in raw], [_item_ids(v) for v in raw])
    return Found(bool(value))


def _render(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)


class Prover:
    """The configuration of one proof; :meth:`points` learns the injection points and
    :meth:`run_point` runs one (what the pytest plugin parametrises), :meth:`run` all.

    Args:
        scenario: your code that drives your agent or tools under ``engine`` (sync or async; it
            is given the engine if it takes an argument). A ``rac.ToolCallFailed`` it lets out
            is expected; any other exception is shown in the table.
        engine: the ``rac.RAC`` your scenario uses (or ``"module:name"``).
        check: returns what is still live of the scenario's effects: True/None/an empty list
            when nothing is, else False, a message or the live items (their ids help prove name
            a compensator that did nothing). An AssertionError counts as "not clean".
        setup: called before every run of the scenario, to start it from the same world.
        snapshot, compare: for worlds where "as before" is a diff: ``snapshot()`` is taken
            before each run and ``compare(before, after)`` returns the differences (empty: as
            before). Either ``setup`` or ``snapshot``/``compare`` is needed.
        crash: also kill the process at every boundary and recover in a fresh one (needs a
            durable log and world, and scenario, engine, check and setup importable by name).
        points: only the points whose names contain one of these strings.
        virtual_time: run RAC's backoff on a virtual clock (default), so retries cost nothing.
        progress: called with (done, total, point name) as points finish.
    """

    def __init__(self, scenario: Callable[..., Any] | str, *, engine: RAC | str,
                 check: Check | str | None = None, setup: Callable[[], Any] | str | None = None,
                 snapshot: Callable[[], Any] | str | None = None,
                 compare: Callable[[Any, Any], Any] | str | None = None, crash: bool = False,
                 points: Iterable[str] | None = None, virtual_time: bool = True,
                 progress: Callable[[int, int, str], None] | None = None) -> None:
        self.scenario = _load(scenario, "scenario")
        self.engine: RAC = _load(engine, "engine")
        self.check: Check | None = _load(check, "check") if check is not None else None
        self.setup = _load(setup, "setup") if setup is not None else None
        self.snapshot = _load(snapshot, "snapshot") if snapshot is not None else None
        self.compare = _load(compare, "compare") if compare is not None else None
        self._names = {"scenario": scenario, "engine": engine, "check": check, "setup": setup,
                       "snapshot": snapshot, "compare": compare}
        if not callable(self.scenario):
            raise ProveError(f"scenario must be a function, got {type(self.scenario).__name__}")
        if self.check is None and (self.snapshot is None or self.compare is None):
            raise ProveError("prove needs check= (what is still live), or snapshot= and "
                             "compare= (what differs from before)")
        if (self.snapshot is None) != (self.compare is None):
            raise ProveError("snapshot= and compare= go together")
        if self.setup is None and self.snapshot is None:
            raise ProveError("prove runs your scenario many times and needs each run to start "
                             "from the same world: pass setup= (a function that resets it) or "
                             "snapshot= and compare= (what differs from before)")
        from rac.engine import RAC

        if not isinstance(self.engine, RAC):
            raise ProveError(f"engine must be a rac.RAC, got {type(self.engine).__name__}")
        self.crash = crash
        self.only = [p for p in (points or ()) if p]
        self.virtual_time = virtual_time
        self.progress = progress
        self._learned: tuple[Observed, Observed | None] | None = None
        self._clean_live: int | None = None
        self.skipped: list[str] = []
        self.notes: list[str] = []

    # -- running the scenario once -------------------------------------------------------------
    def _once(self, *plugins: object) -> tuple[Observed, str, Any]:
        """Run the scenario once with ``plugins`` registered: what RAC's hooks saw, what the
        scenario did (``"returned"`` or the exception), and the snapshot taken before it."""
        if self.setup is not None:
            _call_maybe_async(self.setup)
        before = _call_maybe_async(self.snapshot) if self.snapshot is not None else None
        observer = next((p for p in plugins if isinstance(p, Observer)), None) or Observer()
        engine = self.engine
        registered = [observer, *(p for p in plugins if p is not observer)]
        clock = engine.clock
        if self.virtual_time:
            from rac.testing.clock import VirtualClock

            engine.clock = VirtualClock(clock.now())
        for plugin in registered:
            engine.register_plugin(plugin)
        try:
            args = (engine,) if _takes_argument(self.scenario) else ()
            try:
                _call_maybe_async(self.scenario, *args)
                outcome = "returned"
            except Exception as e:  # noqa: BLE001 - what the scenario let out is data
                from rac.errors import ToolCallFailed

                outcome = "raised ToolCallFailed" if isinstance(e, ToolCallFailed) else \
                    f"raised {type(e).__name__}: {str(e)[:200]}"
        finally:
            for plugin in registered:
                engine.plugin_manager.unregister(plugin)
            engine.clock = clock
        return observer.seen, outcome, before

    def _found(self, before: Any) -> Found:
        found = Found(True)
        if self.check is not None:
            try:
                found = _as_found(_call_maybe_async(self.check))
            except AssertionError as e:
                text = str(e) or "the check's assertion failed"
                found = Found(False, [text], [frozenset(_tokens(text))])
        if self.compare is not None and self.snapshot is not None:
            after = _call_maybe_async(self.snapshot)
            diff = _as_found(self._compare(before, after))
            if not diff.clean:
                found = Found(False, [*found.items, *diff.items] or ["differs from before"],
                              [*found.ids, *diff.ids])
        return found

    def _compare(self, before: Any, after: Any) -> Any:
        assert self.compare is not None
        out = _call_maybe_async(self.compare, before, after)
        return None if out is True else out

    # -- learning the points -------------------------------------------------------------------
    def learn(self) -> tuple[Observed, Observed | None]:
        """Run the scenario clean (and once with its last call failing, to see its rollback);
        raises :class:`ProveError` when the check could not tell a rollback from none."""
        if self._learned is not None:
            return self._learned
        clean, outcome, before = self._once()
        if not clean.calls:
            raise ProveError(f"the scenario made no call with side effects under this engine "
                             f"({outcome}): does it call its tools through RAC (the engine's "
                             "adapter, or run.call)?")
        if clean.reports:
            raise ProveError("the scenario rolled back without any injected failure "
                             f"({clean.reports[-1].failed_tool} failed): prove needs a "
                             "scenario that succeeds when nothing fails")
        found = self._found(before)
        #: how many live effects the check names after a clean run (None: it names none)
        self._clean_live = len(found.items) or None
        if found.clean:
            raise ProveError(
                "after the scenario ran without failures, check() found nothing live "
                f"(calls: {', '.join(map(str, clean.calls))}): a check that cannot see the "
                "scenario's effects cannot tell a rollback from no rollback")
        failing = clean.calls[-1]
        observer = Observer()
        rolled, _, _ = self._once(observer, Injector(Point("fail", failing, failing=failing),
                                                     observer))
        self._learned = (clean, rolled if rolled.undos else None)
        return self._learned

    def points(self) -> list[Point]:
        """Every injection point of the scenario, in the order they are run."""
        clean, rolled = self.learn()
        out: list[Point] = []
        for call in clean.calls:
            out.append(Point("fail", call))
        for call in clean.calls:
            out.append(Point("timeout_after", call))
        failing = clean.calls[-1]
        undos = rolled.undos if rolled is not None else []
        if not undos and len(clean.calls) > 1:
            _note(self.notes, f"no compensation points: when {failing} failed (and any "
                              "alternative of it), the rollback undid nothing, so no "
                              "compensation could be made to fail")
        for action, comp in undos:
            out.append(Point("undo_fails", action, comp, failing=failing))
        for action, comp in undos:
            out.append(Point("undo_timeout_after", action, comp, failing=failing))
        if self.crash:
            reason = self._crash_unavailable()
            if reason is not None:
                _note(self.skipped, f"crash points: {reason}")
            else:
                for call in clean.calls:
                    out.extend(Point("crash", call, at=at) for at in ACTION_BOUNDARIES)
                for action, comp in undos:
                    out.extend(Point("crash", action, comp, at=at, failing=failing)
                               for at in UNDO_BOUNDARIES)
        if self.only:
            out = [p for p in out if any(s in p.name for s in self.only)]
        return out

    # -- running one point ---------------------------------------------------------------------
    def run_point(self, point: Point) -> PointResult:
        """Run the scenario with ``point`` injected and judge it."""
        self.learn()
        if point.kind == "crash":
            return self._run_crash(point)
        observer = Observer()
        injector = Injector(point, observer)
        seen, outcome, before = self._once(observer, injector)
        if injector.hits == 0:
            return PointResult(point, NOT_REACHED, f"the point was never reached ({outcome})",
                               None)
        return self._judge(point, seen, self._statuses(seen.runs), outcome,
                           self._found(before))

    def _statuses(self, runs: Iterable[str]) -> dict[str, str]:
        out = {}
        for run_id in runs:
            info = self.engine.store.get_run(run_id)
            out[run_id] = str(info.status) if info is not None else "unknown"
        return out

    def _judge(self, point: Point, seen: Observed, statuses: dict[str, str], outcome: str,
               found: Found, reports: Sequence[RecoveryReport] | None = None) -> PointResult:
        """The verdict of one point (see :func:`judge`)."""
        reports = list(seen.reports if reports is None else reports)
        records = {run_id: self.engine.store.get_records(run_id) for run_id in statuses}
        return judge(point, found, statuses, records, reports, outcome, self._clean_live)

    # -- crash points ----------------------------------------------------------------------------
    def _crash_unavailable(self) -> str | None:
        """Why crash points cannot run here, or None."""
        url = str(getattr(self.engine.store, "url", ""))
        if url.startswith("memory"):
            return ("the engine's log is in memory, and a crash takes it along: use a SQLite "
                    "file or PostgreSQL to prove crash recovery")
        try:
            self._spec(None, Path("runs.json"))
        except ProveError as e:
            return str(e)
        # the world must outlive the process: run the scenario clean in a child, then look
        if self.setup is not None:
            _call_maybe_async(self.setup)
        before = _call_maybe_async(self.snapshot) if self.snapshot is not None else None
        with tempfile.TemporaryDirectory(prefix="rac-prove-") as tmp:
            code, err = self._child("scenario", self._spec(None, Path(tmp) / "runs.json"))
        if code != 0:
            return f"the scenario failed in a child process (exit {code}): {err[-300:]}"
        if self._found(before).clean:
            return ("after the scenario ran to completion in a child process, the check "
                    "found nothing live: the world must outlive the process (a file or a "
                    "server) for crash points")
        return None

    def _spec(self, point: Point | None, runs_file: Path) -> dict[str, Any]:
        near = [self.scenario]
        return {"scenario": _name_of(self._names["scenario"], near, "the scenario"),
                "engine": _name_of(self._names["engine"], near, "the engine"),
                "point": point.to_dict() if point is not None else None,
                "runs_file": str(runs_file), "virtual_time": self.virtual_time}

    def _child(self, mode: str, spec: dict[str, Any]) -> tuple[int, str]:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        proc = subprocess.run(
            [sys.executable, "-m", "rac.testing.proof_child", mode, json.dumps(spec)],
            env=env, capture_output=True, text=True, timeout=CHILD_TIMEOUT, check=False)
        return proc.returncode, proc.stderr

    def _run_crash(self, point: Point) -> PointResult:
        with tempfile.TemporaryDirectory(prefix="rac-prove-") as tmp:
            runs_file = Path(tmp) / "runs.json"
            spec = self._spec(point, runs_file)
            if self.setup is not None:
                _call_maybe_async(self.setup)
            before = _call_maybe_async(self.snapshot) if self.snapshot is not None else None
            code, err = self._child("scenario", spec)
            if code != CRASH_EXIT:
                if code == 0:
                    return PointResult(point, NOT_REACHED, "the crash point was never reached",
                                       None)
                return PointResult(point, ERROR, f"the scenario's process failed (exit "
                                                 f"{code}): {err.strip()[-300:]}", None)
            runs = json.loads(runs_file.read_text()) if runs_file.exists() else []
            spec["runs"] = runs
            code, err = self._child("recover", spec)
            if code != 0:
                return PointResult(point, ERROR, f"recovery's process failed (exit {code}): "
                                                 f"{err.strip()[-300:]}", None)
            out = json.loads(runs_file.with_suffix(".recovered.json").read_text())
        from rac.report import RecoveryReport

        reports = [RecoveryReport.model_validate(r) for r in out["reports"]]
        statuses = self._statuses(runs)
        seen = Observed(runs=runs, reports=reports)
        result = self._judge(point, seen, statuses, "killed; recovered in a new process",
                             self._found(before), reports)
        if not reports and result.verdict == COMPLETED:
            result.note = "recovery found nothing to do"
        return result

    # -- all of it -----------------------------------------------------------------------------
    def run(self) -> Proof:
        """Run every point and collect the proof."""
        points = self.points()
        clean, _ = self.learn()
        results: list[PointResult] = []
        for i, point in enumerate(points, 1):
            results.append(self.run_point(point))
            if self.progress is not None:
                self.progress(i, len(points), point.name)
        return Proof(results, list(clean.calls), _did_nothing(results), list(self.skipped),
                     list(self.notes))


def _refs(rec: Record) -> set[str]:
    """What identifies the effect a record's call made: its result's own id (the first
    id-named field), else the id-like values of its result."""
    from rac.dependencies import first_result_id, result_ids

    first = first_result_id(rec.result)
    if first is not None:
        return {str(first)}
    return {str(v) for v in result_ids(rec.result, limit=16) if len(str(v)) >= 3}


def judge(point: Point, found: Found, statuses: Mapping[str, str],
          records: Mapping[str, Sequence[Record]], reports: Sequence[RecoveryReport],
          outcome: str, clean_live: int | None = None) -> PointResult:
    """Compare what the check found with what RAC said, item by item where the check's items
    carry ids the log's records hold:

    * a live item made by a call RAC reported undone, or by a call of a rolled-back run that no
      report names, is a **false clean** (RAC's account says it is gone, or says nothing);
    * a live item made by a call of a run that finished (the agent's own success) is fine;
    * a live item RAC named is **named**;
    * a live item no record can be tied to is judged by the runs: all rolled back and the last
      report clean, a false clean; some run finished, the point **cannot be judged** (an
      error: return the live items with their ids, or snapshot/compare); else named.
    """
    named = [f"{u.tool}{' ' + u.ref if u.ref else ''} ({_short(u.error)})"
             for r in reports for u in r.left_live]
    undone = [(u.tool, u.ref) for r in reports for u in r.compensated]
    named_seqs = {(r.run_id, u.seq) for r in reports for u in r.left_live}
    finals = set(statuses.values())
    attention = bool(finals & {RunStatus.NEEDS_ATTENTION.value,
                               RunStatus.COMPENSATING.value, RunStatus.RUNNING.value})
    rolled_back = bool(reports)
    finished = {run_id for run_id, st in statuses.items() if st == RunStatus.COMPLETED.value}
    said_clean = rolled_back and not attention and reports[-1].clean
    did = _did(outcome, undone, named, dict(statuses), rolled_back)

    def result(verdict: str, note: str = "") -> PointResult:
        return PointResult(point, verdict, did, found, said_clean, named, dict(statuses), note,
                           undone)

    if found.clean:
        if not rolled_back and not attention:
            return result(COMPLETED, "the run finished: the check is shown, not judged")
        return result(CLEAN, "" if said_clean else "RAC named something as possibly live that "
                                                   "the check did not see (cautious, not wrong)")
    # tie each live item to the call that made it
    makers: list[tuple[str, Record]] = [
        (run_id, rec) for run_id, recs in records.items() for rec in recs
        if rec.kind is RecordKind.ACTION and not rec.read_only]
    refs = [(run_id, rec, _refs(rec)) for run_id, rec in makers]
    lies: list[str] = []
    silent: list[str] = []
    named_live = 0
    untied = 0
    ids = found.ids if len(found.ids) == len(found.items) else [frozenset()] * len(found.items)
    if not found.items:
        ids = [frozenset()]  # "not clean", with nothing to tie to a call
    for tokens in ids:
        tied = [(run_id, rec) for run_id, rec, r in refs if tokens & r]
        if not tied:
            untied += 1
            continue
        run_id, rec = tied[-1]
        name = f"{rec.tool} #{rec.seq}"
        if rec.status is RecordStatus.COMPENSATED:
            lies.append(f"{name} was reported undone, and the check still sees it")
        elif rec.status is RecordStatus.FAILED:
            lies.append(f"{name} was logged as not having happened, and the check sees it")
        elif (run_id, rec.seq) in named_seqs or rec.status is RecordStatus.RESOLVED:
            named_live += 1
        elif run_id in finished and rec.status is RecordStatus.COMPLETED:
            continue  # the agent's own effect (made outside a nested rollback, or after one)
        else:
            silent.append(f"{name} is live and no report names it")
    if lies or silent:
        return result(FALSE_CLEAN, "; ".join([*lies, *silent]))
    if untied:
        extra = _extra_effects(found, clean_live)
        if extra and not named:
            return result(FALSE_CLEAN, extra)
        if finished:
            return result(ERROR, f"{untied} live item(s) the check named hold no id RAC's "
                                 "records hold, and a run finished: prove cannot tell the "
                                 "agent's own effects from leftovers; return the live items "
                                 "with their ids (or use snapshot/compare)")
        if said_clean:
            return result(FALSE_CLEAN, "RAC said the world is back, and the check sees what "
                                       "no call RAC logged made (a tool declared read-only, or "
                                       "a call outside RAC?)" if found.items else
                                       "RAC said the world is back, and it is not")
        return result(NAMED)
    if named_live:
        return result(NAMED)
    return result(COMPLETED, "what is live was made by runs that finished (the agent's own "
                             "effects): the check is shown, not judged")


def _extra_effects(found: Found, clean_live: int | None) -> str:
    """Why ``found`` holds more live effects than a clean run leaves ("" if it does not)."""
    if clean_live is None or len(found.items) <= clean_live:
        return ""
    return (f"the check sees {len(found.items)} live effects where a clean run leaves "
            f"{clean_live}, and RAC named none: an effect was made twice")


def _short(reason: str | None, width: int = 70) -> str:
    """A reason for the table: its first sentence, at most ``width`` characters."""
    text = (reason or "may be live").split(": declare it")[0].strip()
    return text if len(text) <= width else text[: width - 1] + "…"


def _still_seen(undone: Sequence[tuple[str, str | None]], found: Found) -> list[str]:
    """The undone effects whose ref (an id of the action's result) is one of the ids a live
    item holds (a whole value, never a part of one)."""
    ids = set().union(*found.ids) if found.ids else set()
    return [f"{tool} {ref}" for tool, ref in undone if ref and ref in ids]


def _note(notes: list[str], text: str) -> None:
    if text not in notes:
        notes.append(text)


def _did(outcome: str, undone: Sequence[tuple[str, str | None]], named: list[str],
         statuses: dict[str, str], rolled_back: bool) -> str:
    parts = []
    if undone:
        parts.append("undid " + ", ".join(f"{t} {r}" if r else t for t, r in undone))
    if named:
        parts.append("named " + "; ".join(named))
    if rolled_back and not undone and not named:
        parts.append("rolled back, nothing to undo")
    if not rolled_back:
        parts.append("no rollback")
    parts.append("run " + ", ".join(sorted(set(statuses.values()))) if statuses else "no run")
    if outcome != "returned":
        parts.append(f"scenario {outcome}")
    return "; ".join(parts)


def _did_nothing(results: Sequence[PointResult]) -> list[str]:
    """Compensators that reported success while their effect stayed: named directly when the
    check still sees an id of the undone action's result, else by difference between the
    ``fail`` points (the first false clean after a clean one adds the suspects)."""
    out: dict[str, str] = {}
    for r in results:
        if r.found is None:
            continue
        for name in _still_seen(r.undone, r.found):
            out.setdefault(name.split(" ")[0], f"the undo of {name} reported success, but the "
                                              f"check still sees it (at '{r.point.name}')")
    ok_tools: set[str] = set()
    if any(ids for r in results if r.found is not None for ids in r.found.ids):
        return list(out.values())  # the check names ids: the ties above are the answer
    for r in (r for r in results if r.point.kind == "fail"):
        tools = {tool for tool, _ in r.undone}
        if r.verdict == CLEAN:
            ok_tools = tools
        elif r.verdict == FALSE_CLEAN and r.found is not None \
                and not _still_seen(r.undone, r.found):
            for tool, ref in r.undone:
                if tool in ok_tools:
                    continue
                name = f"{tool} {ref}" if ref else tool
                out.setdefault(tool, f"the world is not back after the undo of {name} "
                                     f"reported success (first seen at '{r.point.name}'); if "
                                     "that undo works, an effect RAC does not know of stayed "
                                     "(a tool declared read-only, or a call outside RAC)")
    return list(out.values())


def prove(scenario: Callable[..., Any] | str, *, engine: RAC | str,
          check: Check | str | None = None, setup: Callable[[], Any] | str | None = None,
          snapshot: Callable[[], Any] | str | None = None,
          compare: Callable[[Any, Any], Any] | str | None = None, crash: bool = False,
          points: Iterable[str] | None = None, virtual_time: bool = True,
          progress: Callable[[int, int, str], None] | None = None) -> Proof:
    """Prove your rollback: run ``scenario`` once per injection point and judge each (see
    :class:`Prover` for the arguments and the module docstring for the verdicts)::

        proof = rac.testing.prove(book_trip, engine=engine, check=world.live, setup=world.reset)
        assert proof.ok, proof.table()
    """
    return Prover(scenario, engine=engine, check=check, setup=setup, snapshot=snapshot,
                  compare=compare, crash=crash, points=points, virtual_time=virtual_time,
                  progress=progress).run()


__all__ = ["CLEAN", "COMPLETED", "ERROR", "FALSE_CLEAN", "Found", "NAMED", "NOT_REACHED",
           "PointResult", "Proof", "ProveError", "Prover", "prove"]
