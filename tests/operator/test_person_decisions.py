"""A person's decision on a held undo (issue 31: "approve or hold a compensation"; the
CLI and the UI): ``rac approve`` makes the next resume run it whatever the plugin that held it
answers; ``rac hold`` keeps it held on purpose, whatever a plugin would answer; both are kept
in the log with who, when and why, and only a held undo can be decided."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import rac
from rac.approvals import decide, decision
from rac.models import RecordStatus, RunStatus
from rac.testing import TravelWorld

FLIGHT = {"passenger": "ann", "origin": "SFO", "dest": "CDG"}
CHARGE = {"customer": "ann", "amount": 900.0}


class HoldsRefunds:
    """The team's rule: a refund is held for a person."""

    def __init__(self) -> None:
        self.asked: list[int] = []

    @rac.hookimpl
    def rac_approve_compensation(self, record: rac.Record) -> bool | None:
        self.asked.append(record.seq)
        return False if record.tool == "charge_card" else None


class ApprovesAll:
    @rac.hookimpl
    def rac_approve_compensation(self, record: rac.Record) -> bool | None:
        return True


def held_refund(make_engine: Any, url: str) -> tuple[rac.RAC, str]:
    engine = make_engine(store=url, plugins=[HoldsRefunds()])
    with engine.run() as run:
        run.call("book_flight", **FLIGHT)
        run.call("charge_card", **CHARGE)
        report = run.rollback("the customer cancelled")
    assert [h.tool for h in report.held] == ["charge_card"]
    assert report.status is RunStatus.NEEDS_ATTENTION
    return engine, run.run_id


def test_approved_by_a_person_the_resume_refunds_though_the_plugin_would_hold(
        make_engine: Any, world: TravelWorld, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'log.db'}"
    engine, run_id = held_refund(make_engine, url)
    assert [b["kind"] for b in world.live()] == ["charge"]

    plugin = HoldsRefunds()
    operator = make_engine(store=url, plugins=[plugin])
    info = decide(operator, run_id, 2, "approve", note="refund checked with finance", by="ann")
    assert info.status is RunStatus.NEEDS_ATTENTION  # nothing ran yet
    rec = next(r for r in operator.store.get_records(run_id) if r.seq == 2)
    assert rec.status is RecordStatus.COMPLETED
    assert "; approved by ann at " in rec.note and rec.note.endswith("refund checked with finance")
    charge = next(r for r in operator.store.get_records(run_id) if r.seq == 2).result
    exact = {"booking_id": charge["booking_id"]}
    assert decision(rec, "refund_charge", exact) is True
    assert decision(rec, "other_tool", exact) is None  # another compensator: ask again
    assert decision(rec, "refund_charge", {"booking_id": "CH-999"}) is None  # another call

    outcome = operator.resume(run_id)
    assert outcome.status is RunStatus.COMPENSATED and world.live() == []
    assert plugin.asked == []  # the person's approval was enough


def test_kept_held_by_a_person_a_resume_leaves_it_whatever_a_plugin_answers(
        make_engine: Any, world: TravelWorld, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'log.db'}"
    engine, run_id = held_refund(make_engine, url)
    operator = make_engine(store=url, plugins=[ApprovesAll()])
    decide(operator, run_id, 2, "hold", note="disputed: wait for the bank", by="bob")

    outcome = operator.resume(run_id)
    assert outcome.status is RunStatus.NEEDS_ATTENTION
    assert [h.tool for h in outcome.report.held] == ["charge_card"]
    assert [b["kind"] for b in world.live()] == ["charge"]
    rec = next(r for r in operator.store.get_records(run_id) if r.seq == 2)
    assert "kept held by bob" in rec.note and "wait for the bank" in rec.note  # kept

    decide(operator, run_id, 2, "approve", note="the bank agreed", by="bob")  # last one counts
    assert operator.resume(run_id).status is RunStatus.COMPENSATED and world.live() == []


def test_only_a_held_undo_can_be_decided_and_a_note_is_needed(
        make_engine: Any, world: TravelWorld, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'log.db'}"
    engine, run_id = held_refund(make_engine, url)
    with pytest.raises(rac.RACError, match="needs a note"):
        decide(engine, run_id, 2, "approve", note=" ")
    with pytest.raises(rac.RACError, match="no compensation of it is held"):
        decide(engine, run_id, 1, "approve", note="x")  # the flight was undone
    with pytest.raises(KeyError):
        decide(engine, run_id, 9, "approve", note="x")
    with pytest.raises(KeyError):
        decide(engine, "nope", 2, "approve", note="x")
    assert [b["kind"] for b in world.live()] == ["charge"]


def test_an_approval_is_used_once(make_engine: Any, world: TravelWorld, tmp_path: Path) -> None:
    """The approved refund fails (its system is down): the approval was used, so the next
    resume asks the plugin again, which holds it again; a person approves once more."""
    url = f"sqlite:///{tmp_path / 'log.db'}"
    engine, run_id = held_refund(make_engine, url)
    plugin = HoldsRefunds()
    operator = make_engine(store=url, plugins=[plugin],
                           compensation_retry=rac.RetryPolicy(max_attempts=1))
    decide(operator, run_id, 2, "approve", note="ok", by="ann")
    world.fail("refund_charge", "permanent", times=1, message="refunds down")
    first = operator.resume(run_id)
    assert first.status is RunStatus.NEEDS_ATTENTION and plugin.asked == []
    rec = next(r for r in operator.store.get_records(run_id) if r.seq == 2)
    assert rec.status is RecordStatus.COMPENSATION_FAILED and "approval used at" in rec.note

    second = operator.resume(run_id)  # the approval is spent: the plugin holds it again
    assert plugin.asked == [2] and [u.tool for u in second.report.left_live] == ["charge_card"]
    assert [b["kind"] for b in world.live()] == ["charge"]
    decide(operator, run_id, 2, "approve", note="refunds are back", by="ann")
    assert operator.resume(run_id).status is RunStatus.COMPENSATED and world.live() == []
