"""The order in which a rollback undoes actions: newest first, and every dependent before what it
depends on, even when a declared dependency points forward in time."""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence

from rac.models import Record


def rollback_order(records: Sequence[Record]) -> list[Record]:
    """Order ``records`` for compensation.

    A record is ready once every record that depends on it has been placed; among ready records
    the newest (highest seq) goes first. Linear in the number of records and edges (plus a heap).
    A dependency cycle (only possible through bad declarations) is broken newest-first.
    """
    if not any(r.depends_on for r in records):
        return sorted(records, key=_seq, reverse=True)
    by_seq = {r.seq: r for r in records}
    dependents_left: dict[int, int] = dict.fromkeys(by_seq, 0)
    for r in records:
        for dep in r.depends_on:
            if dep in by_seq and dep != r.seq:
                dependents_left[dep] += 1
    ready = [-s for s, n in dependents_left.items() if n == 0]
    heapq.heapify(ready)
    out: list[Record] = []
    placed: set[int] = set()
    while len(out) < len(by_seq):
        if not ready:  # a cycle: release the newest record not placed yet
            seq = max(s for s in by_seq if s not in placed)
            heapq.heappush(ready, -seq)
        seq = -heapq.heappop(ready)
        if seq in placed:
            continue
        placed.add(seq)
        rec = by_seq[seq]
        out.append(rec)
        for dep in rec.depends_on:
            if dep in dependents_left and dep != seq and dep not in placed:
                dependents_left[dep] -= 1
                if dependents_left[dep] == 0:
                    heapq.heappush(ready, -dep)
    return out


def _seq(r: Record) -> int:
    return r.seq


def dependents_of(records: Sequence[Record]) -> dict[int, list[int]]:
    """seq -> seqs of the records (among ``records``) that depend on it."""
    seqs = {r.seq for r in records}
    out: dict[int, list[int]] = {}
    for r in records:
        for dep in r.depends_on:
            if dep in seqs:
                out.setdefault(dep, []).append(r.seq)
    return out


def cycle_through(records: Iterable[Record], seq: int, depends_on: Iterable[int]
                  ) -> list[int] | None:
    """The seqs of a dependency cycle that record ``seq`` would close by depending on
    ``depends_on`` (a record already logged may have declared it depends on ``seq``, a later
    call), from ``seq`` back to itself; None when there is none. A cycle would keep both
    records from being undone (each waits for the other)."""
    by_seq = {r.seq: r for r in records}
    wanted = [d for d in depends_on if d != seq]
    # walk from what seq depends on, along what those depend on, looking for seq
    parent: dict[int, int] = {}
    stack = list(wanted)
    for d in wanted:
        parent.setdefault(d, seq)
    seen: set[int] = set()
    while stack:
        cur = stack.pop()
        if cur in seen:
            continue
        seen.add(cur)
        rec = by_seq.get(cur)
        for nxt in (rec.depends_on if rec is not None else ()):
            if nxt == seq:
                path = [cur]
                while path[-1] != seq:
                    path.append(parent[path[-1]])
                return [seq, *reversed(path[:-1]), seq]
            if nxt not in seen and nxt != cur:
                parent.setdefault(nxt, cur)
                stack.append(nxt)
    return None
