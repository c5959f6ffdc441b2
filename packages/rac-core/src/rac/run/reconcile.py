"""Reads around an action: the before-image taken right before it, the snapshot of what its
lookup shows before it runs, and the lookup that finds out whether a call that may have
happened did (reconciliation). All are declared (see :class:`rac.Lookup` and
:class:`rac.BeforeImage`) and performed as effects of the flow, so the blocking and the asyncio
paths share them.

A lookup's verdict concerns *this* call's effect, and only evidence makes one (see
docs/concepts.md, "An all-clear only from evidence"):

* an item that matched before the call (in the snapshot taken with its intent, or older than
  the intent by the ``created_after`` field the declaration names) is not its effect; a lookup
  that matches on the call's idempotency key needs neither;
* an item that is another call's known effect, compared on every id field (never the first
  id-like one alone), is not its effect; an item that could be the possible effect of another
  call still in doubt with the same question (a sibling in flight) makes the verdict *unknown*;
* an item RAC cannot read (a bare value, a row without the matched fields) or a result of the
  wrong shape means *unknown*, never *absent*.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rac.effects import Flow, Invoke
from rac.errors import CompensationMappingError
from rac.lifecycle import uncertain
from rac.mapping import resolve_in
from rac.models import Record, RecordKind, RecordStatus
from rac.run.identity import fingerprint, identity, read_item, same_effect, snapshot_of, timestamp
from rac.run.values import needed_fields, stored_copy, undo_part
from rac.serialize import as_fields

if TYPE_CHECKING:
    from rac.registry import BeforeImage, Lookup
    from rac.run.run import Run

FOUND, ABSENT, UNKNOWN = "found", "absent", "unknown"
R = RecordStatus
#: Statuses of another record whose effect is known (it happened; its result says what it is).
_KNOWN = frozenset({R.COMPLETED, R.COMPENSATING, R.COMPENSATED, R.COMPENSATION_FAILED,
                    R.RESOLVED, R.IN_DOUBT})


@dataclass(slots=True)
class Reconciled:
    """What a lookup said: ``found`` (``result`` is the effect, as the call would have
    returned it), ``absent`` (it did not happen) or ``unknown`` (``reason`` says why)."""

    verdict: str
    result: Any = None
    reason: str = ""


def _call_args(decl: BeforeImage | Lookup, args: Mapping[str, Any], key: str | None,
               label: str) -> dict[str, Any]:
    sources = {"args": args, "key": key}
    return {param: resolve_in(path, sources, tool=f"{decl.tool} ({label})", param=param)
            for param, path in decl.args.items()}


def read_before(run: Run, decl: BeforeImage, args: Mapping[str, Any],
                key: str, *, agent_id: str | None = None) -> Flow[tuple[bool, Any]]:
    """Call the before-image's read tool (``agent_id``'s, if that agent offered one):
    ``(True, its normalised result)`` or ``(False, the reason it could not be read)``."""
    try:
        call_args = _call_args(decl, args, key, "before-image")
    except CompensationMappingError as e:
        return False, str(e)
    tool = run.tool(decl.tool, agent_id)
    if tool is None:
        return False, f"the before-image tool {decl.tool!r} is not available to this run"
    ok, raw = yield Invoke(tool.invoke, tool.ainvoke, call_args, False)
    if not ok:
        return False, f"{decl.tool} raised {type(raw).__name__}: {raw}"
    value = run.engine.hooks.first("rac_normalize_result", tool=decl.tool, result=raw)
    value = raw if value is None else value
    err = run.engine.hooks.first("rac_detect_result_error", tool=decl.tool, result=value)
    if err is not None:
        return False, f"{decl.tool} returned an error: {err}"
    return True, as_fields(value)


def keyed(lookup: Lookup) -> bool:
    """True if the lookup asks by, or matches on, the call's idempotency key: what it finds
    is this call's effect, whatever existed before."""
    return any(str(p).strip() == "key" for p in (*lookup.args.values(),
                                                   *lookup.match.values()))


def needs_snapshot(lookup: Lookup) -> bool:
    """True if telling this call's effect from what existed before needs a snapshot taken
    with the intent (the lookup neither matches on the key nor names a ``created_after``)."""
    return not keyed(lookup) and lookup.created_after is None


def sent_key(run: Run, rec: Record, args: Mapping[str, Any]) -> str | None:
    """The idempotency key the call of ``rec`` was sent with, or None: a key in its own
    arguments, else RAC's key if RAC passes one to its tool (a ``keyed`` tool)."""
    own = args.get(run.engine.key_param)
    if isinstance(own, str) and own:
        return own
    if rec.kind is RecordKind.ACTION and rec.effect == "keyed":
        return rec.idempotency_key or None
    return None


@dataclass(slots=True)
class _Asked:
    """A lookup asked: the items its result lists, read (fields, or None when unreadable),
    or why it could not be read."""

    items: list[tuple[Any, Mapping[str, Any] | None]]
    wanted: dict[str, Any]
    error: str | None = None


def _ask(run: Run, lookup: Lookup, args: Mapping[str, Any], key: str | None,
         shielded: bool, agent_id: str | None) -> Flow[_Asked]:
    """Call the lookup (``agent_id``'s tool of that name, if that agent offered one) with
    ``args`` and read its items."""
    try:
        call_args = _call_args(lookup, args, key, "lookup")
        wanted = {f: resolve_in(p, {"args": args, "key": key}, tool=f"{lookup.tool} (lookup)",
                                param=f"match[{f!r}]") for f, p in lookup.match.items()}
    except CompensationMappingError as e:
        return _Asked([], {}, str(e))
    tool = run.tool(lookup.tool, agent_id)
    if tool is None:
        return _Asked([], wanted, f"the lookup tool {lookup.tool!r} is not available to this "
                                  "run")
    ok, raw = yield Invoke(tool.invoke, tool.ainvoke, call_args, shielded)
    if not ok:
        return _Asked([], wanted, f"the lookup {lookup.tool} raised {type(raw).__name__}: {raw}")
    engine = run.engine
    value = engine.hooks.first("rac_normalize_result", tool=lookup.tool, result=raw)
    value = as_fields(raw if value is None else value)
    if engine.hooks.first("rac_detect_result_error", tool=lookup.tool,
                          result=value) is not None:
        return _Asked([], wanted, f"the lookup {lookup.tool} returned an error")
    try:
        items = resolve_in(lookup.items, {"result": value}, tool=lookup.tool, param="items") \
            if lookup.items else value
    except CompensationMappingError as e:
        return _Asked([], wanted, str(e))
    if isinstance(items, Mapping):
        items = list(items.values()) if items and all(
            isinstance(v, Mapping) for v in items.values()) and not wanted.keys() <= items.keys() \
            else [items]
    if not isinstance(items, list | tuple):
        return _Asked([], wanted, f"the lookup {lookup.tool} returned "
                                  f"{type(items).__name__}, not a list of candidates")
    return _Asked([(item, read_item(item)) for item in items], wanted)


def _matches(asked: _Asked, lookup: Lookup) -> tuple[list[Any], str | None]:
    """The items that match the call (fields, or the bare value when nothing is matched on),
    or why they cannot be read."""
    out: list[Any] = []
    for raw, fields in asked.items:
        if not asked.wanted:
            out.append(fields if fields is not None else raw)
            continue
        if fields is None:
            return [], (f"{lookup.tool} lists a {type(raw).__name__} RAC cannot read as "
                        "fields, so it cannot tell whether it is this call's effect")
        missing = [k for k in asked.wanted if k not in fields]
        if missing:
            return [], (f"{lookup.tool} lists an item without {missing[0]!r}, so it cannot "
                        "tell whether it is this call's effect")
        if all(fields[k] == v for k, v in asked.wanted.items()):
            out.append(fields)
    return out, None


def snapshot(run: Run, lookup: Lookup, args: Mapping[str, Any], key: str | None = None, *,
             agent_id: str | None = None, shielded: bool = False) -> Flow[dict[str, Any]]:
    """What the lookup shows that would match the call before it runs (fingerprints of the
    items' identities), taken with its intent; ``{"failed": why}`` when it cannot be read."""
    asked = yield from _ask(run, lookup, args, key, shielded, agent_id)
    if asked.error is not None:
        return {"failed": asked.error}
    found, why = _matches(asked, lookup)
    if why is not None:
        return {"failed": why}
    return snapshot_of(found)


def _pre_existing(rec: Record, lookup: Lookup, matches: list[Any]
                  ) -> tuple[list[Any], str | None]:
    """The matches that are not known to predate the call, or why nothing can tell."""
    if lookup.created_after is not None:
        out = []
        for m in matches:
            when = timestamp(m.get(lookup.created_after)) if isinstance(m, Mapping) else None
            if when is None:
                return [], (f"{lookup.tool} lists a match without a readable "
                            f"{lookup.created_after!r}, so it cannot tell when it was made")
            if when < rec.created_at - lookup.clock_skew:
                continue  # made before the call
            if when < rec.created_at:
                return [], (f"{lookup.tool} lists a match made within {lookup.clock_skew:g} s "
                            "before the call, too close to tell whether it is its effect")
            out.append(m)
        return out, None
    snap = (rec.undo or {}).get("snapshot")
    if not isinstance(snap, Mapping) or "failed" in snap:
        why = snap.get("failed") if isinstance(snap, Mapping) else None
        return [], (f"{lookup.tool} shows a match, and RAC has no record of what matched "
                    f"before the call ({why or 'no snapshot was taken'}), so it cannot tell "
                    "whether the match is this call's effect")
    before = set(snap.get("ids") or ())
    if not before and not snap.get("unidentified"):
        return matches, None  # nothing matched before the call: every match is new
    out = []
    for m in matches:
        ident = identity(m)
        if ident is None:
            return [], (f"{lookup.tool} lists a match with no id, and something matched "
                        "before the call: RAC cannot tell them apart")
        if fingerprint(ident) not in before:
            out.append(m)
    return out, None


def _result_of(run: Run, rec: Record) -> Any:
    """The exact result of another record where this process or the log keeps it."""
    live = run.live.get(rec.seq)
    if live is not None:
        return live[1]
    undo = rec.undo or {}
    return undo.get("result", rec.result)


def _related(run: Run, rec: Record, other: Record, lookup: Lookup) -> bool:
    """True if ``other`` could have made what ``rec``'s lookup lists: a call of the same tool,
    or of a tool reconciled through the same lookup tool."""
    if other.tool == rec.tool:
        return True
    theirs = run.engine.registry.lookups.get(other.tool)
    return theirs is not None and theirs.tool == lookup.tool


def _same_question(run: Run, other: Record, lookup: Lookup, wanted: Mapping[str, Any],
                   call_args: Mapping[str, Any]) -> bool:
    """True if ``other``'s own lookup asks what ``rec``'s asks (or RAC cannot tell)."""
    args = other.args or {}
    try:
        theirs = {f: resolve_in(p, {"args": args, "key": None}, tool=lookup.tool,
                                param=f"match[{f!r}]") for f, p in lookup.match.items()}
        their_call = _call_args(lookup, args, None, "lookup")
    except CompensationMappingError:
        return True
    return theirs == dict(wanted) and their_call == dict(call_args)


def _others(run: Run, rec: Record, lookup: Lookup, matches: list[Any], wanted: Mapping[str, Any],
            args: Mapping[str, Any], key: str | None) -> tuple[list[Any], str | None]:
    """The matches that are no other call's known effect, or why nothing can tell (another
    related call's effect cannot be compared, or a sibling in doubt asks the same)."""
    try:
        call_args = _call_args(lookup, args, key, "lookup")
    except CompensationMappingError:
        call_args = {}
    with run.lock:
        others = [o for o in run.log.records.values()
                  if o.seq != rec.seq and o.kind is rec.kind and not o.read_only]
    out = []
    for m in matches:
        ident = identity(m)
        mine = True
        for o in others:
            if o.status not in _KNOWN:
                continue
            result = _result_of(run, o)
            if result is None:
                continue
            same = same_effect(ident, result)
            if same is True:
                mine = False  # another call's effect
                break
            if same is None and o.status is not R.IN_DOUBT and _related(run, rec, o, lookup):
                return [], (f"{lookup.tool} shows a match RAC cannot tell from the effect of "
                            f"{o.tool} (#{o.seq})")
        if mine:
            out.append(m)
    if out:
        for o in others:
            doubtful = o.status in (R.PENDING, R.IN_DOUBT) or uncertain(o)
            if doubtful and _related(run, rec, o, lookup) and _same_question(
                    run, o, lookup, wanted, call_args):
                what = "still running" if o.seq in run.state.in_flight else "in doubt"
                return [], (f"{lookup.tool} shows a match that may be the effect of "
                            f"{o.tool} (#{o.seq}), {what} with the same arguments")
    return out, None


def reconcile(run: Run, rec: Record, lookup: Lookup, args: Mapping[str, Any], *,
              shielded: bool = False) -> Flow[Reconciled]:
    """Ask the lookup whether the call of ``rec``, made with ``args``, took effect (see the
    module docstring): exactly one match that is this call's, *found*; none, *absent*;
    anything RAC cannot tell apart, *unknown*."""
    key = sent_key(run, rec, args)
    if keyed(lookup) and key is None:
        return Reconciled(UNKNOWN, reason=f"{lookup.tool} looks the effect up by its "
                                          "idempotency key, and this call was not sent with "
                                          "one")
    asked = yield from _ask(run, lookup, args, key, shielded, rec.agent_id)
    if asked.error is not None:
        return Reconciled(UNKNOWN, reason=asked.error)
    matches, why = _matches(asked, lookup)
    if why is not None:
        return Reconciled(UNKNOWN, reason=why)
    if not matches:
        return Reconciled(ABSENT, reason=f"{lookup.tool} shows no such effect")
    if not keyed(lookup):
        matches, why = _pre_existing(rec, lookup, matches)
        if why is None and matches:
            matches, why = _others(run, rec, lookup, matches, asked.wanted, args, key)
        if why is not None:
            return Reconciled(UNKNOWN, reason=why)
        if not matches:
            return Reconciled(ABSENT, reason=f"{lookup.tool} shows no effect of this call "
                                             "(only what existed before it, or other calls' "
                                             "effects)")
    if len(matches) == 1:
        return Reconciled(FOUND, matches[0])
    return Reconciled(UNKNOWN, reason=f"{lookup.tool} shows {len(matches)} effects that match "
                                      "this call, and nothing tells which is its own")


def settle(run: Run, rec: Record, lookup: Lookup, args: Mapping[str, Any], *,
           shielded: bool = False, why: str = "reconciled") -> Flow[Reconciled]:
    """Ask ``lookup`` whether the call of ``rec`` (an intent, no known outcome), made with
    ``args``, took effect (see :func:`reconcile`), and write the verdict: *found*, the record
    is completed with the found effect as its result (the stored copy, and the exact copy of
    the fields its undo reads, as a call that returned it would have kept); *absent*, it is
    failed (it never happened); *unknown*, it is left as it was. ``why`` starts the record's
    note."""
    call_args = dict(args)
    seen = yield from reconcile(run, rec, lookup, call_args, shielded=shielded)
    run.log.event("rac.reconcile", seq=rec.seq, tool=rec.tool, status=seen.verdict,
                  reason=seen.reason)
    with run.lock:
        if seen.verdict == FOUND:
            stored = stored_copy(seen.result, run.engine.max_value_chars)
            exact_result = _undo_result(run, rec, seen.result, stored)
            undo = dict(rec.undo or {})
            if exact_result is not None:
                undo["result"] = exact_result
            run.log.update(rec, status=RecordStatus.COMPLETED, result=stored,
                           undo=undo or None, note=f"{why}: {lookup.tool} found the effect")
            run.state.effect_found(rec, call_args, seen.result)
        elif seen.verdict == ABSENT:
            run.log.update(rec, status=RecordStatus.FAILED, note=f"{why}: {seen.reason}")
    return seen


def _undo_result(run: Run, rec: Record, value: Any, stored: Any) -> Any:
    """The exact copy of the result fields the record's undo may read, as a call that
    returned ``value`` would have kept (None when the stored copy holds them exactly)."""
    comp = run.engine.registry.pairs.get(rec.tool)
    if comp is None or not rec.compensable:
        return None
    comp_tool = run.tool(comp.tool, rec.agent_id)
    return undo_part(value, stored, needed_fields(comp, comp_tool.params if comp_tool
                                                  else None)[1])
