"""Undo a finished run on request, later: "the agent booked the wrong trip yesterday".

:func:`undo` takes a ``completed`` run and undoes its effects newest first and dependents
first, through the same rollback a failure starts, as a new, logged rollback of the run (its
records keep their history; the compensations are appended, the reason says who asked and why).

Time has passed since the run, so before anything is undone each effect is checked against the
live world, on evidence of a declared kind only:

* through its lookup (:class:`rac.Lookup`): the item that is this call's effect (matched on its
  id fields, never by resemblance) must still be listed, with the fields the call's result had;
* else through its before-image's read tool (:class:`rac.BeforeImage`): the state it reads now
  must still be what the call left (the fields its result shares with it), and not the
  before-image again (someone already put it back).

An effect that drifted (changed since the run, or already gone) is a **conflict**: it is named
and not touched. An effect RAC has no way to check (no lookup, no before-image, nothing the
read and the result share) is **unchecked**: named and not touched either, unless the caller
asks for unchecked effects to be undone (``unchecked=True``, ``rac undo --unchecked``). A run
with an effect left alone ends ``needs_attention``, with the reason in its report; nothing is
called undone that was not. ``preview=True`` checks and says what would happen, changing
nothing.
"""

from __future__ import annotations

import datetime as dt
import getpass
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from rac.effects import Flow, drive_async, drive_sync
from rac.errors import RACError
from rac.events import emit
from rac.models import Record, RecordKind, RecordStatus, RunInfo, RunStatus
from rac.ordering import rollback_order
from rac.report import RecoveryReport
from rac.run.compensation import undo_sources
from rac.run.identity import Drift, drift, identity, read_item, same_effect
from rac.run.reconcile import _ask, _matches, keyed, read_before, sent_key
from rac.serialize import redact_text

if TYPE_CHECKING:
    from rac.engine import RAC
    from rac.registry import BeforeImage, Compensation, Lookup
    from rac.run.run import Run

Verdict = Literal["undo", "conflict", "unchecked", "not_undoable"]

@dataclass(frozen=True, slots=True)
class UndoItem:
    """One effect of the run and what :func:`undo` does with it: ``undo`` (checked, or
    unchecked but asked for: ``checked`` says which), ``conflict`` (it drifted: changed or
    gone since the run; left alone), ``unchecked`` (nothing can tell whether it drifted; left
    alone) or ``not_undoable`` (no compensation). ``reason`` says why, in words."""

    seq: int
    tool: str
    verdict: Verdict
    reason: str
    checked: bool = False

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict."""
        return {"seq": self.seq, "tool": self.tool, "verdict": self.verdict,
                "reason": self.reason, "checked": self.checked}


@dataclass(slots=True)
class Undone:
    """What :func:`undo` found and did. ``preview``: nothing was changed. ``status``: the run's
    status afterwards (``compensated`` only when every effect of it was undone). ``report``:
    the rollback's report (None for a preview, or when nothing was undone)."""

    run_id: str
    preview: bool
    items: list[UndoItem] = field(default_factory=list)
    status: RunStatus = RunStatus.COMPLETED
    report: RecoveryReport | None = None

    @property
    def conflicts(self) -> list[UndoItem]:
        """The effects left alone (drifted, unchecked or not undoable)."""
        return [i for i in self.items if i.verdict != "undo"]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict (``rac undo --json``)."""
        return {"run_id": self.run_id, "preview": self.preview, "status": str(self.status),
                "items": [i.to_dict() for i in self.items],
                "undone": [u.seq for u in self.report.compensated] if self.report else [],
                "left_live": [u.seq for u in self.report.left_live] if self.report else []}


# -- checking an effect against the live world ---------------------------------------------------
def _drifted(d: Drift) -> str:
    if d.changed is None:
        return "what the world shows shares no field with the call's result"
    return f"changed since the run: {d.changed!r} was {d.then!r} after the run and is " \
           f"{d.now!r} now"


def _by_lookup(run: Run, rec: Record, lookup: Lookup, args: dict[str, Any], result: Any
               ) -> Flow[tuple[Verdict, str, bool]]:
    key = sent_key(run, rec, args)
    if keyed(lookup) and key is None:
        return "unchecked", (f"{lookup.tool} finds the effect by its idempotency key, and the "
                             "call was sent with none"), False
    asked = yield from _ask(run, lookup, args, key, False, rec.agent_id)
    if asked.error is not None:
        return "unchecked", asked.error, False
    matches, why = _matches(asked, lookup)
    if why is not None:
        return "unchecked", why, False
    if keyed(lookup):
        mine = matches
    else:
        sameness = [(m, same_effect(identity(m), result)) for m in matches]
        mine = [m for m, same in sameness if same is True]
        if not mine and any(same is None for _, same in sameness):
            return "unchecked", (f"{lookup.tool} lists items RAC cannot tell from this "
                                 "call's effect"), False
    if not mine:
        return "conflict", f"gone: {lookup.tool} no longer shows it", True
    if len(mine) > 1:
        return "unchecked", f"{lookup.tool} shows {len(mine)} items that could be it", False
    item = mine[0] if isinstance(mine[0], Mapping) else read_item(mine[0])
    if item is None:
        return "unchecked", f"{lookup.tool} lists it in a shape RAC cannot read", False
    now = drift(item, result)
    if not now.fields:
        return "unchecked", _drifted(now), False
    if now.changed is not None:
        return "conflict", _drifted(now), True
    return "undo", f"{lookup.tool} shows it unchanged since the run", True


def _by_before_image(run: Run, rec: Record, decl: BeforeImage, args: dict[str, Any],
                     result: Any, before: Any) -> Flow[tuple[Verdict, str, bool]]:
    ok, now = yield from read_before(run, decl, args, "", agent_id=rec.agent_id)
    if not ok:
        return "unchecked", str(now), False
    state = read_item(now)
    if state is None:
        return "unchecked", f"{decl.tool} returned a value RAC cannot read as fields", False
    now = drift(state, result)
    unchanged = bool(now.fields) and now.changed is None
    if before is not None and not unchanged:
        back = drift(state, before)
        if back.fields and back.changed is None:
            return "conflict", f"gone: {decl.tool} shows the state as it was before the run", \
                True
    if not now.fields:
        return "unchecked", _drifted(now), False
    if now.changed is not None:
        return "conflict", _drifted(now), True
    return "undo", f"{decl.tool} shows it unchanged since the run", True


def check_effect(run: Run, rec: Record) -> Flow[UndoItem]:
    """Check one completed effect of ``run`` against the live world (see the module
    docstring)."""
    engine = run.engine
    comp: Compensation | None = engine.resolve_compensation(rec) if rec.compensable else None
    if comp is None:
        return UndoItem(rec.seq, rec.tool, "not_undoable",
                        rec.note or f"{rec.tool} has no compensation")
    args, result, before = undo_sources(run, rec)
    lookup = comp.lookup or engine.registry.lookups.get(rec.tool)
    if lookup is not None:
        verdict, why, checked = yield from _by_lookup(run, rec, lookup, args, result)
        if verdict != "unchecked" or comp.before is None:
            return UndoItem(rec.seq, rec.tool, verdict, why, checked)
    if comp.before is not None:
        verdict, why, checked = yield from _by_before_image(run, rec, comp.before, args, result,
                                                            before)
        return UndoItem(rec.seq, rec.tool, verdict, why, checked)
    return UndoItem(rec.seq, rec.tool, "unchecked",
                    f"RAC has no way to check it against the live world: declare a lookup or "
                    f"a before-image for {rec.tool}")


# -- the undo ------------------------------------------------------------------------------------
def _effects(records: list[Record]) -> list[Record]:
    """The run's completed side effects, in the order a rollback undoes them."""
    return rollback_order([r for r in records if r.kind is RecordKind.ACTION
                           and not r.read_only and r.status is RecordStatus.COMPLETED])


def _checks(run: Run, effects: list[Record], unchecked: bool) -> Flow[list[UndoItem]]:
    out = []
    for rec in effects:
        item = yield from check_effect(run, rec)
        if item.verdict == "unchecked" and unchecked:
            item = UndoItem(rec.seq, rec.tool, "undo", f"undone without a check ({item.reason})")
        out.append(item)
    return out


@dataclass(slots=True)
class _Asked:
    run: Run
    info: RunInfo
    effects: list[Record]
    reason: str
    summary: str


def _start(engine: RAC, run_id: str, *, why: str, by: str | None, preview: bool,
           lease_seconds: float | None) -> _Asked:
    from rac.leases import claim
    from rac.recovery import ownership, rebuild
    from rac.run.run import Run

    if not preview and not why.strip():
        raise RACError("an undo needs a reason saying why it is asked for (--why)")
    info = engine.store.get_run(run_id)
    if info is None:
        raise KeyError(f"no run {run_id!r} in {engine.store.url}")
    if info.status is not RunStatus.COMPLETED:
        raise RACError(f"run {run_id} is {info.status}: only a completed run can be undone "
                       "(a run that failed was rolled back already; `rac show` says what is "
                       "left of it, `rac resume` and `rac resolve` settle it)")
    records = engine.store.get_records(run_id)
    from rac.cli.render import contradiction

    odd = contradiction(info, records)
    if odd is not None:  # a call in doubt or a dead letter: not what "completed" promises
        raise RACError(f"run {run_id} cannot be undone as a completed run: its records say "
                       f"otherwise ({odd}); `rac show {run_id}` names them, and `rac resume` "
                       "or `rac resolve` settles them first")
    who = redact_text(by or getpass.getuser())
    when = dt.datetime.fromtimestamp(engine.clock.now(), dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    reason = redact_text(f"undo asked by {who}: {why.strip()}")[:500]
    summary = redact_text(f"undone by {who} at {when}: {why.strip()}")[:2000]
    if preview:
        run = Run.from_log(engine, info, records)
    else:
        seconds = engine.leases.lease_seconds if lease_seconds is None else lease_seconds
        if not claim(engine, info, lease_seconds=seconds):
            now = engine.store.get_run(run_id) or info
            raise RACError(f"run {run_id} cannot be undone now: "
                           f"{ownership(engine, now, engine.clock.now()).reason}; its owner "
                           "may still carry it on")
        info = engine.store.get_run(run_id) or info
        if info.status is not RunStatus.COMPLETED:  # it went on between the read and the claim
            engine.store.update_run(run_id, lease_until=-1.0)
            raise RACError(f"run {run_id} is {info.status} now: only a completed run can be "
                           "undone")
        records = engine.store.get_records(run_id)
        run = rebuild(engine, info, records, lease_seconds=seconds)
    return _Asked(run, info, _effects(records), reason, summary)


def _end(engine: RAC, asked: _Asked, items: list[UndoItem], preview: bool,
         report: RecoveryReport | None) -> Undone:
    run = asked.run
    out = Undone(run.run_id, preview, items, run.status if report else asked.info.status,
                 report)
    if not preview:
        run.log.release()
        fields: dict[str, Any] = {"lease_until": -1.0}
        if report is not None:
            fields["summary"] = asked.summary
        engine.store.update_run(run.run_id, **fields)
    emit("rac.undo", level="info" if not out.conflicts else "warning", run_id=run.run_id,
         status="previewed" if preview else str(out.status),
         undo=[i.seq for i in items if i.verdict == "undo"],
         left=[i.seq for i in out.conflicts])
    return out


def _flow(asked: _Asked, preview: bool, unchecked: bool
          ) -> Flow[tuple[list[UndoItem], RecoveryReport | None]]:
    items = yield from _checks(asked.run, asked.effects, unchecked)
    if preview or not any(i.verdict == "undo" for i in items):
        return items, None
    keep = {i.seq: i.reason for i in items if i.verdict != "undo"}
    report = yield from asked.run.rollback_flow("0", reason=asked.reason, keep=keep)
    return items, report


def undo(engine: RAC, run_id: str, *, why: str = "", by: str | None = None,
         preview: bool = False, unchecked: bool = False,
         lease_seconds: float | None = None) -> Undone:
    """Undo the completed run ``run_id`` (see the module docstring): check each effect against
    the live world, then undo, newest first, those that are unchanged since the run; name and
    leave alone those that drifted or cannot be checked (``unchecked=True``: undo those that
    cannot be checked too). ``why`` (required unless ``preview``) and ``by`` (default: the
    current user) are kept in the log. The run is claimed first: one whose owner still works
    on it (a live lease) is refused.

    Raises KeyError for an unknown run, :class:`rac.errors.RACError` for a run that is not
    ``completed``, a missing reason, or a run its owner still holds."""
    asked = _start(engine, run_id, why=why, by=by, preview=preview,
                   lease_seconds=lease_seconds)
    try:
        items, report = drive_sync(_flow(asked, preview, unchecked), engine.clock,
                                   engine.passthrough)
    except BaseException:
        if not preview:
            asked.run.log.release()
            engine.store.update_run(run_id, lease_until=-1.0)
        raise
    return _end(engine, asked, items, preview, report)


async def aundo(engine: RAC, run_id: str, *, why: str = "", by: str | None = None,
                preview: bool = False, unchecked: bool = False,
                lease_seconds: float | None = None) -> Undone:
    """Async :func:`undo`: the checks and compensations run on the event loop (async tools are
    awaited), the log's reads and writes off it."""
    import asyncio
    import functools

    blocks = bool(getattr(engine.store, "blocking", True))

    async def off_loop(fn: Any) -> Any:
        return await asyncio.to_thread(fn) if blocks else fn()

    asked: _Asked = await off_loop(functools.partial(
        _start, engine, run_id, why=why, by=by, preview=preview, lease_seconds=lease_seconds))
    try:
        items, report = await drive_async(_flow(asked, preview, unchecked), engine.clock,
                                          engine.passthrough, offload=blocks)
    except BaseException:
        if not preview:
            asked.run.log.release()
            await off_loop(functools.partial(engine.store.update_run, run_id,
                                             lease_until=-1.0))
        raise
    done: Undone = await off_loop(functools.partial(_end, engine, asked, items, preview,
                                                    report))
    return done


__all__ = ["UndoItem", "Undone", "aundo", "check_effect", "undo"]
