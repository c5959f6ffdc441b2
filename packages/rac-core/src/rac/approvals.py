"""A person's decision on a compensation a rollback held for approval, kept in the log.

An approval plugin (``rac_approve_compensation``) may hold an undo for a person (a refund above
a limit, say): the action stays live and named, the run ends ``needs_attention``. The person
decides later, from ``rac approve`` / ``rac hold`` or ``rac ui``, and the decision is written to
the held record's note, with who, when and why:

* **approve**: the next ``rac resume`` (or the UI's approve, which resumes at once) runs the
  compensation without asking the plugin again: a person's decision outranks the plugin that
  asked for one. It is bound to the exact call that was held (the run, the record, the
  compensating tool and a hash of its arguments) and used once: if the pair or the arguments
  changed since, or the approved undo already ran, the plugins are asked again.
* **hold**: the undo stays held, on purpose: ``rac resume`` does not run it until a person
  approves it, whatever a plugin would answer; the effect stays live and named.

The last decision counts. Nothing else about the record changes (its status stays
``completed``, or ``compensation_failed`` for an approved undo that failed and was held again),
and the write is a compare-and-set on that status, so a decision on a record that a resume is
undoing right now is refused.
"""

from __future__ import annotations

import datetime as dt
import getpass
import hashlib
import json
import re
from typing import TYPE_CHECKING, Any, Literal

from rac.errors import RACError
from rac.events import emit
from rac.models import Record, RecordKind, RecordStatus, RunInfo, RunStatus

if TYPE_CHECKING:
    from rac.engine import RAC

Decision = Literal["approve", "hold"]
_HELD = re.compile(r"^compensation via (?P<tool>.+?)(?: |: .*; )held for approval"
                   r"(?: \(arguments (?P<digest>[0-9a-f]{16})\))?")
_DECISION = re.compile(r"; (?:(?P<what>approved|kept held) by .+? at \S+: |approval used at )")


def args_digest(args: Any) -> str:
    """A short hash of a compensating call's arguments, which a held note keeps so that a
    person's approval applies to exactly that call."""
    from rac.serialize import as_fields

    text = json.dumps(as_fields(args), sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def is_held(record: Record) -> bool:
    """True if ``record`` is an action whose compensation a rollback held for approval (and
    no compensation of it is under way or done), whatever a person decided about it: a live
    effect (``completed``), or a dead letter held again after an approved undo failed."""
    return (record.kind is RecordKind.ACTION
            and record.status in (RecordStatus.COMPLETED, RecordStatus.COMPENSATION_FAILED)
            and _HELD.match(record.note or "") is not None)


def decision(record: Record, compensator: str, args: Any = None) -> bool | None:
    """A person's last decision on the held compensation of ``record`` through
    ``compensator`` with ``args``: True (approved), False (kept held) or None (no decision for
    this exact call, or the approval was used: the approval hooks decide)."""
    note = record.note or ""
    held = _HELD.match(note)
    if held is None or held["tool"] != compensator:
        return None
    found = list(_DECISION.finditer(note))
    if not found or found[-1]["what"] is None:  # none yet, or the approval was used
        return None
    if found[-1]["what"] == "kept held":
        return False
    digest = held["digest"]
    return True if digest is not None and digest == args_digest(args) else None


def decide(engine: RAC, run_id: str, seq: int, what: Decision, *, note: str,
           by: str | None = None) -> RunInfo:
    """Write a person's decision (``approve`` or ``hold``) on the held compensation of
    ``run_id``'s record ``seq`` (see the module docstring); returns the run as the log holds
    it. Raises KeyError for an unknown run or seq, :class:`rac.errors.RACError` for an empty
    note or a record whose compensation is not held."""
    from rac.run.run import Run
    from rac.serialize import redact_text

    if what not in ("approve", "hold"):
        raise ValueError(f"a decision is 'approve' or 'hold', not {what!r}")
    if not note.strip():
        raise RACError(f"a decision needs a note saying why ({what})")
    info = engine.store.get_run(run_id)
    if info is None:
        raise KeyError(f"no run {run_id!r} in {engine.store.url}")
    records = engine.store.get_records(run_id)
    rec = next((r for r in records if r.seq == seq), None)
    if rec is None:
        raise KeyError(f"run {run_id} has no record #{seq}")
    if not is_held(rec) or info.status is not RunStatus.NEEDS_ATTENTION:
        raise RACError(f"cannot {what} {run_id}#{seq} ({rec.tool}, {rec.status}): no "
                       "compensation of it is held for approval")
    who = redact_text(by or getpass.getuser())
    when = dt.datetime.fromtimestamp(engine.clock.now(), dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    words = "approved" if what == "approve" else "kept held"
    text = redact_text(f"{rec.note}; {words} by {who} at {when}: {note.strip()}")[-4000:]
    if not _HELD.match(text):  # cut from the front: keep the held part, drop older decisions
        text = (rec.note or "")[:200] + redact_text(
            f"; {words} by {who} at {when}: {note.strip()}")[:1000]
    run = Run.from_log(engine, info, records)
    with run.lock:
        run.log.write(updates=[(run.log.records[seq], {"note": text})],
                      expect={seq: rec.status})
    emit("rac.approval", level="warning", run_id=run_id, seq=seq, tool=rec.tool,
         status=words.replace(" ", "_"), by=who)
    updated = engine.store.get_run(run_id)
    assert updated is not None
    return updated


__all__ = ["decide", "decision", "is_held"]
