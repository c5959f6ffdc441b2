"""Plain-text and JSON renderings of runs and records for the CLI."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rac.lifecycle import IDLE, NEEDS_A_PERSON, UNFINISHED, may_be_live, uncertain
from rac.models import PairRecord, Record, RecordKind, RecordStatus, RunInfo, RunStatus

R = RecordStatus


def happened(r: Record) -> tuple[str, str]:
    """Whether an action's effect happened (``yes``/``no``/``maybe``/``undone``/``-``) and
    why, as ``rac show`` says it. Never reads the undo data."""
    if r.kind is not RecordKind.ACTION:
        return "-", ""
    if r.read_only:
        return "-", "read-only"
    why = r.note or r.error or ""
    if r.status is R.COMPENSATED:
        return "undone", ""
    if r.status is R.FAILED:
        return "no", why or "the call failed before any effect"
    if r.status in (R.PENDING, R.IN_DOUBT):
        return "maybe", why or "intent written, no outcome (a crash or an interruption)"
    if r.status is R.RESOLVED:
        return "settled", why
    if r.status is R.COMPENSATION_FAILED:
        return ("maybe" if uncertain(r) else "yes"), why
    return "yes", why if not r.compensable else ""


def record_json(r: Record) -> dict[str, Any]:
    """The JSON shape of one record in ``rac show --json`` (undo data is never shown)."""
    did, why = happened(r)
    return {"seq": r.seq, "tool": r.tool, "kind": str(r.kind), "status": str(r.status),
            "happened": did, "why": why or None, "effect": r.effect or None,
            "args": r.args, "result": r.result, "error": r.error, "attempts": r.attempts,
            "compensates": r.compensates, "alternative_of": r.alternative_of,
            "depends_on": list(r.depends_on), "agent_id": r.agent_id, "scope": r.scope,
            "written_at": r.created_at, "changed_at": r.updated_at}


def run_json(run_id: str, status: str, records: Sequence[Record],
             pairs: Sequence[PairRecord] = (), *, info: RunInfo | None = None) -> dict[str, Any]:
    """The JSON object ``rac show --json`` prints (``contradicted``: see
    :func:`contradiction`; ``unreviewed``: :func:`unreviewed_undos` of the log's ``pairs``;
    with the run's ``info``, ``report``: what the agent was told, and ``next_step``: what an
    operator can do, see :func:`next_step`)."""
    out: dict[str, Any] = {"run_id": run_id, "status": status,
                           "records": [record_json(r) for r in records],
                           "contradicted": contradiction(status, records),
                           "unreviewed": unreviewed_undos(records, pairs)}
    if info is not None:
        out.update(agent_id=info.agent_id, started_at=info.created_at,
                   changed_at=info.updated_at, owner=info.owner, summary=info.summary,
                   report=info.report, next_step=next_step(info, records))
    return out


def next_step(info: RunInfo, records: Sequence[Record], *,
              resume: str = "`rac resume RUN --app ...`",
              resolve: str = "record it with `rac resolve RUN SEQ --note ...`") -> str:
    """What an operator can do next with run ``info``, in words (``rac show``, ``rac ui``);
    ``resume`` and ``resolve`` say how to retry an undo and settle an effect where the text
    is read."""
    resume = resume.replace("RUN", info.run_id)
    resolve = resolve.replace("RUN", info.run_id)
    if info.status is RunStatus.NEEDS_ATTENTION:
        live = [r for r in records if may_be_live(r)]
        return (f"{len(live)} effect(s) may still be live. Check each in its own system: once "
                f"undone or accepted by hand, {resolve}; once the cause of a failed undo is "
                f"fixed, retry the undo ({resume}).")
    if info.status in UNFINISHED:
        return ("The run is unfinished. If its process is gone, `rac recover --app ...` "
                "finishes it (a live owner's run is left alone).")
    if info.status is RunStatus.COMPLETED:
        return ("Completed: nothing needs a person. If it should not have happened, `rac undo "
                f"{info.run_id} --preview --app ...` checks each effect against the world and "
                "says what undoing it would do.")
    return f"{info.status}: nothing needs a person."


def _when(at: float) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(at).strftime("%H:%M:%S.%f")[:-3] if at else ""


def _links(r: Record) -> str:
    rel = []
    if r.compensates is not None:
        rel.append(f"undoes #{r.compensates}")
    if r.alternative_of is not None:
        rel.append(f"instead of #{r.alternative_of}")
    if r.depends_on:
        rel.append("needs " + ",".join(f"#{d}" for d in r.depends_on))
    return "; ".join(rel)

def unreviewed_undos(records: Sequence[Record], pairs: Sequence[PairRecord]
                     ) -> list[dict[str, Any]]:
    """The compensations of ``records`` that ran through a pair ``policy="auto"`` put in use
    and no person has reviewed (status ``auto`` among ``pairs``)."""
    auto = {(p.tool, p.compensator) for p in pairs if p.status == "auto"}
    if not auto:
        return []
    tool_of = {r.seq: r.tool for r in records if r.kind is RecordKind.ACTION}
    return [{"seq": c.compensates, "tool": tool_of.get(c.compensates or 0),
             "compensator": c.tool, "status": str(c.status)}
            for c in records if c.kind is RecordKind.COMPENSATION
            and (tool_of.get(c.compensates or 0), c.tool) in auto]


#: Run statuses that say nothing of the run is left for a person: the idle ones.
_SETTLED = IDLE


def contradiction(run: RunInfo | str, records: Sequence[Record]) -> str | None:
    """Why a run's stored status is contradicted by its records, or None.

    A ``compensated`` or ``resolved`` run says nothing of it is live: an action that may still
    be live contradicts it. A ``completed`` run says nothing of it needs a person: a dead
    letter, a call in doubt, a call with no outcome or an undo under way contradicts it.
    (Only the statuses that claim something is settled can be contradicted this way.)"""
    status = RunStatus(run.status if isinstance(run, RunInfo) else run)
    if status not in _SETTLED:
        return None
    if status is RunStatus.COMPLETED:
        wrong = [r for r in records if r.kind is RecordKind.ACTION and not r.read_only
                 and (r.status in NEEDS_A_PERSON or r.status in (R.PENDING, R.COMPENSATING))]
    else:
        wrong = [r for r in records if may_be_live(r)]
    if not wrong:
        return None
    named = ", ".join(f"#{r.seq} {r.tool} is {r.status}" for r in wrong[:5])
    more = f" and {len(wrong) - 5} more" if len(wrong) > 5 else ""
    return f"{status}, but {named}{more}"


def _short(value: Any, width: int) -> str:
    text = "" if value is None else (value if isinstance(value, str) else json.dumps(value))
    return text if len(text) <= width else text[: width - 1] + "…"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A left-aligned text table."""
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
             for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def records_table(records: Sequence[Record]) -> str:
    """The log of one run as a table."""
    rows = [(r.seq, r.kind, r.tool, r.status, happened(r)[0], r.attempts,
             _when(r.created_at), _when(r.updated_at), _links(r),
             _short(r.args, 38), _short(happened(r)[1] or r.error or r.result, 44))
            for r in records]
    return table(["seq", "kind", "tool", "status", "happened", "tries", "written", "changed",
                  "links", "args", "result / why"], rows)


def runs_table(runs: Sequence[RunInfo], flags: dict[str, str | None] | None = None) -> str:
    """A list of runs as a table; ``flags`` (run id -> :func:`contradiction`) marks the runs
    whose records contradict their status."""
    import datetime as dt

    flags = flags or {}
    rows = [(r.run_id, f"{r.status} (CONTRADICTED)" if flags.get(r.run_id) else r.status,
             r.agent_id,
             dt.datetime.fromtimestamp(r.created_at).strftime("%Y-%m-%d %H:%M:%S"))
            for r in runs]
    return table(["run_id", "status", "agent", "started"], rows)
