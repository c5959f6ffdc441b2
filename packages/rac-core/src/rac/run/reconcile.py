"""Reads around an action: the before-image taken right before it, and the lookup that finds
out whether a call that may have happened did (reconciliation). Both are declared (see
:class:`rac.Lookup` and :class:`rac.BeforeImage`) and performed as effects of the flow, so the
blocking and the asyncio paths share them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rac.effects import Flow, Invoke
from rac.errors import CompensationMappingError
from rac.mapping import resolve_in
from rac.models import Record, RecordStatus
from rac.run.values import needed_fields, stored_copy, undo_part
from rac.serialize import as_fields

if TYPE_CHECKING:
    from rac.registry import BeforeImage, Lookup
    from rac.run.run import Run

FOUND, ABSENT, UNKNOWN = "found", "absent", "unknown"


@dataclass(slots=True)
class Reconciled:
    """What a lookup said: ``found`` (``result`` is the effect, as the call would have
    returned it), ``absent`` (it did not happen) or ``unknown`` (``reason`` says why)."""

    verdict: str
    result: Any = None
    reason: str = ""


def _call_args(decl: BeforeImage | Lookup, args: Mapping[str, Any], key: str,
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


def known_effects(run: Run, seq: int) -> set[Any]:
    """The ids of the effects other actions of ``run`` are known to have made (the first id
    of each one's result): a lookup never attributes one of them to the call ``seq``."""
    from rac.dependencies import first_result_id

    with run.lock:
        results = [r.result for r in run.log.records.values()
                   if r.seq != seq and r.result is not None and r.kind.value == "action"]
    return {i for i in map(first_result_id, results) if i is not None}


def reconcile(run: Run, lookup: Lookup, args: Mapping[str, Any], key: str,
              *, shielded: bool = False, known: set[Any] | None = None,
              agent_id: str | None = None) -> Flow[Reconciled]:
    """Ask the lookup (``agent_id``'s tool of that name, if that agent offered one) whether
    the call with ``args`` (and idempotency ``key``) took effect.

    ``known`` are the ids of effects other calls of the run made: a matching item that is one
    of them is not this call's. Exactly one other matching item: found. None: absent. More than
    one: nothing can tell which is this call's (unknown)."""
    try:
        call_args = _call_args(lookup, args, key, "lookup")
        wanted = {f: resolve_in(p, {"args": args, "key": key}, tool=f"{lookup.tool} (lookup)",
                                param=f"match[{f!r}]") for f, p in lookup.match.items()}
    except CompensationMappingError as e:
        return Reconciled(UNKNOWN, reason=str(e))
    tool = run.tool(lookup.tool, agent_id)
    if tool is None:
        return Reconciled(UNKNOWN, reason=f"the lookup tool {lookup.tool!r} is not available "
                                          "to this run")
    ok, raw = yield Invoke(tool.invoke, tool.ainvoke, call_args, shielded)
    if not ok:
        return Reconciled(UNKNOWN, reason=f"the lookup {lookup.tool} raised "
                                          f"{type(raw).__name__}: {raw}")
    value = run.engine.hooks.first("rac_normalize_result", tool=lookup.tool, result=raw)
    value = as_fields(raw if value is None else value)
    if run.engine.hooks.first("rac_detect_result_error", tool=lookup.tool,
                              result=value) is not None:
        return Reconciled(UNKNOWN, reason=f"the lookup {lookup.tool} returned an error")
    try:
        items = resolve_in(lookup.items, {"result": value}, tool=lookup.tool, param="items") \
            if lookup.items else value
    except CompensationMappingError as e:
        return Reconciled(UNKNOWN, reason=str(e))
    if isinstance(items, Mapping):
        items = list(items.values()) if items and all(
            isinstance(v, Mapping) for v in items.values()) and not wanted.keys() <= items.keys() \
            else [items]
    if not isinstance(items, list | tuple):
        return Reconciled(UNKNOWN, reason=f"the lookup {lookup.tool} returned "
                                          f"{type(items).__name__}, not a list of candidates")
    from rac.dependencies import first_result_id

    matches = []
    for item in items:
        fields = as_fields(item)
        if isinstance(fields, Mapping) and all(
                k in fields and fields[k] == v for k, v in wanted.items()):
            if known and first_result_id(fields) in known:
                continue  # another call's effect
            matches.append(fields)
    if len(matches) == 1:
        return Reconciled(FOUND, matches[0])
    if matches:
        return Reconciled(UNKNOWN, reason=f"{lookup.tool} shows {len(matches)} effects that "
                                          "match this call, and nothing tells which is its own")
    return Reconciled(ABSENT, reason=f"{lookup.tool} shows no such effect")


def settle(run: Run, rec: Record, lookup: Lookup, args: Mapping[str, Any], *,
           shielded: bool = False, why: str = "reconciled") -> Flow[Reconciled]:
    """Ask ``lookup`` whether the call of ``rec`` (an intent, no known outcome), made with
    ``args``, took effect, and write the verdict: *found*, the record is completed with the
    found effect as its result (the stored copy, and the exact copy of the fields its undo
    reads, as a call that returned it would have kept); *absent*, it is failed (it never
    happened); *unknown*, it is left as it was. ``why`` starts the record's note."""
    call_args = dict(args)
    seen = yield from reconcile(run, lookup, call_args, rec.idempotency_key, shielded=shielded,
                                known=known_effects(run, rec.seq), agent_id=rec.agent_id)
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
            run.live[rec.seq] = (call_args, seen.result)
            if not rec.read_only:
                run.deps.add_result(rec.seq, seen.result, call_args)
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
