"""Assertions an adapter's tests need: the world holds no side effect it should not."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rac.models import Record, RecordKind, RecordStatus
from rac.testing.world import TravelWorld


def assert_no_live_effects(world: TravelWorld, *, allowed: Iterable[str] = ()) -> None:
    """Fail if any booking other than ``allowed`` booking ids is still live in the world."""
    allow = set(allowed)
    left = [b for b in world.live() if b["booking_id"] not in allow]
    assert not left, f"side effects left live in the world: {left}"


def assert_compensated_once(world: TravelWorld) -> None:
    """Fail if any booking was cancelled more than once (double compensation)."""
    twice = [b for b in world.bookings() if b["cancellations"] > 1]
    assert not twice, f"bookings cancelled more than once: {twice}"


def assert_rollback_order(records: list[Record], expected_tools: list[str]) -> None:
    """Fail unless the compensated actions, in the order they were compensated, are
    ``expected_tools``."""
    by_seq = {r.seq: r for r in records}
    undone = [by_seq[r.compensates].tool for r in records
              if r.kind is RecordKind.COMPENSATION and r.compensates in by_seq
              and r.status is RecordStatus.COMPLETED]
    assert undone == expected_tools, f"compensated {undone}, expected {expected_tools}"


def statuses(records: list[Record]) -> list[tuple[str, str, str]]:
    """(tool, kind, status) of each record: a compact shape to assert on."""
    return [(r.tool, str(r.kind), str(r.status)) for r in records]


def summary(records: list[Record]) -> dict[str, Any]:
    """Counts of records by kind and status."""
    out: dict[str, Any] = {}
    for r in records:
        key = f"{r.kind}:{r.status}"
        out[key] = out.get(key, 0) + 1
    return out
