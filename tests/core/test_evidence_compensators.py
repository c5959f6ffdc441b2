"""Issue 25, compensators have effect classes too: a refund that commits and then times out
was retried blindly (paid back twice) and the run reported compensated. Now a compensator's
failure that may have taken effect is retried only where a repeat is safe (idempotent, or
keyed and called with the compensation's own key); an unsafe one is settled by its own lookup
or the action is named, never reported undone, and neither a resume nor a recovery repeats
it blindly. Every test checks the payments world itself, the log's records and the report's
text."""

from __future__ import annotations

from typing import Any

import pytest

import rac
from rac.testing import VirtualClock


class AlreadyRefunded(Exception):
    """The payment service's answer to a refund of a charge already refunded."""


class Payments:
    """Card charges and their refunds, with real state. ``refund`` is not idempotent: each
    call pays back again (as many payment APIs do without a key), unless it is given a key it
    has seen. ``lose`` answers: the refund is paid, then the answer is lost."""

    def __init__(self) -> None:
        self.charges: dict[str, float] = {}
        self.refunds: list[dict[str, Any]] = []
        self.keys_seen: list[str | None] = []
        self.lose = 0
        self.fail_before = 0
        self.refuse_repeat = False

    def charge(self, customer: str, amount: float) -> dict[str, Any]:
        """Charge the customer's card."""
        charge_id = f"CH-{len(self.charges) + 1:03d}"
        self.charges[charge_id] = amount
        return {"charge_id": charge_id, "customer": customer, "amount": amount}

    def _refund(self, charge_id: str, key: str | None) -> dict[str, Any]:
        self.keys_seen.append(key)
        if self.fail_before:
            self.fail_before -= 1
            raise TimeoutError("refund: read timed out")  # nothing was paid back
        done = next((r for r in self.refunds if key is not None and r["key"] == key), None)
        if done is None:
            if self.refuse_repeat and any(r["charge_id"] == charge_id for r in self.refunds):
                raise AlreadyRefunded(f"{charge_id} is already refunded")
            done = {"refund_id": f"RF-{len(self.refunds) + 1:03d}", "charge_id": charge_id,
                    "amount": self.charges[charge_id], "key": key}
            self.refunds.append(done)
        if self.lose:
            self.lose -= 1
            raise TimeoutError("refund: read timed out")  # paid back; the answer is lost
        return {"refund_id": done["refund_id"], "charge_id": charge_id}

    def refund(self, charge_id: str) -> dict[str, Any]:
        """Pay a charge back."""
        return self._refund(charge_id, None)

    def refund_keyed(self, charge_id: str, idempotency_key: str | None = None) -> dict[str, Any]:
        """Pay a charge back; a repeat with the same key pays nothing again."""
        return self._refund(charge_id, idempotency_key)

    def list_refunds(self, charge_id: str) -> dict[str, Any]:
        """The refunds made of a charge (read-only)."""
        return {"refunds": [{"refund_id": r["refund_id"], "charge_id": r["charge_id"]}
                            for r in self.refunds if r["charge_id"] == charge_id]}

    def paid_back(self, charge_id: str) -> float:
        return sum(r["amount"] for r in self.refunds if r["charge_id"] == charge_id)


REFUND_LOOKUP = rac.Lookup("list_refunds", args={"charge_id": "args.charge_id"},
                           items="result.refunds", match={"charge_id": "args.charge_id"})


def engine_for(pay: Payments, *, refund: str = "refund", store: str = "memory://",
               **kw: Any) -> rac.RAC:
    return rac.RAC(tools=[pay.charge, getattr(pay, refund), pay.list_refunds],
                   compensations={"charge": rac.Compensation(
                       refund, args={"charge_id": "result.charge_id"},
                       already_undone=kw.pop("already_undone", ()))},
                   read_only=["list_refunds"], store=store, clock=kw.pop("clock", VirtualClock()),
                   compensation_retry=rac.RetryPolicy(max_attempts=3, initial_delay=1.0,
                                                      jitter=0), **kw)


def charge_and_roll_back(engine: rac.RAC) -> tuple[rac.RecoveryReport, Any]:
    with engine.run() as run:
        run.call("charge", customer="ann", amount=40.0)
        report = run.rollback()
    return report, run


def comp_records(run: Any) -> list[rac.Record]:
    return [r for r in run.records() if r.kind is rac.RecordKind.COMPENSATION]


def test_an_unsafe_refund_that_timed_out_after_paying_is_named_not_repeated() -> None:
    """The reproduction: the refund pays back, its answer is lost. Retried blindly, it paid
    back twice and the run said compensated."""
    pay = Payments()
    pay.lose = 1
    engine = engine_for(pay)
    report, run = charge_and_roll_back(engine)
    assert pay.paid_back("CH-001") == 40.0 and len(pay.keys_seen) == 1  # once, never twice
    assert run.status is rac.RunStatus.NEEDS_ATTENTION and not report.clean
    assert report.compensated == []
    (named,) = report.compensation_failed
    assert (named.tool, named.compensator, named.happened) == ("charge", "refund", "yes")
    assert "may have undone it, or not" in (named.error or "")
    action, = [r for r in run.records() if r.kind is rac.RecordKind.ACTION]
    assert action.status is rac.RecordStatus.COMPENSATION_FAILED
    crec, = comp_records(run)
    assert crec.status is rac.RecordStatus.FAILED and crec.effect == "unsafe"
    assert (crec.note or "").startswith("may have taken effect")
    text = engine.render(report)
    assert "STILL LIVE: charge CH-001 (undo via refund failed: refund may have undone it" in text
    assert "world is back" not in text


def test_a_resume_does_not_repeat_the_unsafe_refund_either() -> None:
    pay = Payments()
    pay.lose = 1
    engine = engine_for(pay)
    _, run = charge_and_roll_back(engine)
    done = engine.resume(run.run_id)
    assert len(pay.keys_seen) == 1 and pay.paid_back("CH-001") == 40.0
    assert done.outcome != "compensated"
    assert engine.store.get_run(run.run_id).status is rac.RunStatus.NEEDS_ATTENTION  # type: ignore[union-attr]


def test_a_keyed_refund_is_retried_with_the_compensations_own_key() -> None:
    pay = Payments()
    pay.lose = 1
    engine = engine_for(pay, refund="refund_keyed")
    report, run = charge_and_roll_back(engine)
    crec, = comp_records(run)
    assert pay.keys_seen == [crec.idempotency_key] * 2 and crec.idempotency_key
    assert pay.paid_back("CH-001") == 40.0  # the repeat was deduplicated by the key
    assert report.clean and run.status is rac.RunStatus.COMPENSATED
    assert crec.effect == "keyed" and crec.attempts == 2
    assert "world is back" in engine.render(report)


def test_an_idempotent_compensator_is_retried() -> None:
    # declared idempotent (wrongly, here: the world pays back twice): RAC takes the word of
    # the declaration; it is what buys the retry back
    pay = Payments()
    pay.fail_before = 1
    engine = engine_for(pay, effects={"refund": "idempotent"})
    report, run = charge_and_roll_back(engine)
    assert len(pay.keys_seen) == 2 and pay.paid_back("CH-001") == 40.0
    assert report.clean and comp_records(run)[0].effect == "idempotent"


def test_the_refunds_own_lookup_finds_that_it_paid() -> None:
    pay = Payments()
    pay.lose = 1
    engine = engine_for(pay, lookups={"refund": REFUND_LOOKUP})
    report, run = charge_and_roll_back(engine)
    assert pay.paid_back("CH-001") == 40.0 and len(pay.keys_seen) == 1
    assert report.clean and run.status is rac.RunStatus.COMPENSATED
    assert [(u.tool, u.compensator, u.happened) for u in report.compensated] == [
        ("charge", "refund", "yes")]
    crec, = comp_records(run)
    assert crec.status is rac.RecordStatus.COMPLETED
    assert crec.note == "reconciled: list_refunds found the effect"
    assert crec.result == {"refund_id": "RF-001", "charge_id": "CH-001"}


def test_the_lookup_shows_it_did_not_pay_so_it_is_made_again() -> None:
    pay = Payments()
    pay.fail_before = 1  # a read timeout before anything was paid: ambiguous to RAC
    engine = engine_for(pay, lookups={"refund": REFUND_LOOKUP})
    report, run = charge_and_roll_back(engine)
    assert len(pay.keys_seen) == 2 and pay.paid_back("CH-001") == 40.0
    assert report.clean and comp_records(run)[0].attempts == 2


def test_a_refund_that_existed_before_is_not_taken_for_this_undo() -> None:
    # the charge was refunded once already (by hand) before the rollback; this refund's
    # answer is lost before it paid: the old refund is in the snapshot, not this undo's effect
    pay = Payments()
    pay.fail_before = 1
    engine = engine_for(pay, lookups={"refund": REFUND_LOOKUP})
    with engine.run() as run:
        run.call("charge", customer="ann", amount=40.0)
        pay.refunds.append({"refund_id": "RF-OLD", "charge_id": "CH-001", "amount": 10.0,
                            "key": None})
        report = run.rollback()
    assert len(pay.keys_seen) == 2  # absent, so tried again
    assert report.clean and pay.paid_back("CH-001") == 50.0


def test_when_the_refunds_lookup_cannot_tell_the_action_is_named() -> None:
    pay = Payments()
    pay.lose = 1
    engine = engine_for(pay, lookups={"refund": REFUND_LOOKUP})
    calls = {"n": 0}
    real = pay.list_refunds

    def list_refunds(charge_id: str) -> dict[str, Any]:
        """The refunds made of a charge (read-only)."""
        calls["n"] += 1
        if calls["n"] > 1:
            raise rac.TransientError("refunds service down")
        return real(charge_id)

    pay.list_refunds = list_refunds  # type: ignore[method-assign]
    engine = engine_for(pay, lookups={"refund": REFUND_LOOKUP})
    report, run = charge_and_roll_back(engine)
    assert len(pay.keys_seen) == 1 and pay.paid_back("CH-001") == 40.0
    assert not report.clean and run.status is rac.RunStatus.NEEDS_ATTENTION
    (named,) = report.compensation_failed
    assert "the lookup list_refunds raised TransientError" in (named.error or "")


@pytest.mark.parametrize("declared", [True, False])
def test_an_answer_declared_already_undone_counts_as_the_undo(declared: bool) -> None:
    # someone refunded the charge before the rollback; the service refuses a second refund
    pay = Payments()
    pay.refuse_repeat = True
    engine = engine_for(pay, already_undone=AlreadyRefunded if declared else ())
    with engine.run() as run:
        run.call("charge", customer="ann", amount=40.0)
        pay.refunds.append({"refund_id": "RF-OLD", "charge_id": "CH-001", "amount": 40.0,
                            "key": None})
        report = run.rollback()
    assert pay.paid_back("CH-001") == 40.0 and len(pay.keys_seen) == 1
    if declared:
        assert report.clean and run.status is rac.RunStatus.COMPENSATED
        crec, = comp_records(run)
        assert (crec.note or "").startswith("already undone: refund answered AlreadyRefunded")
    else:  # an exception nothing classified: it may have paid; named
        assert not report.clean and [u.tool for u in report.compensation_failed] == ["charge"]


def test_already_undone_must_be_exception_classes_or_a_callable() -> None:
    with pytest.raises(rac.ConfigurationError, match="already_undone must be exception"):
        rac.RAC(tools=[], compensations={"charge": {"tool": "refund",
                                                    "already_undone": ["already"]}})


@pytest.mark.parametrize("lookup", [False, True])
def test_an_interrupted_refund_is_not_repaid_by_a_resume(tmp_path: Any, lookup: bool) -> None:
    """The refund pays back and the process is interrupted before its outcome is written; a
    new engine on the same log resumes the run: the unsafe refund is not made a second time.
    Without a lookup the action stays named; with one (declared when the refund was made, so
    its snapshot is in the log) the resume finds that it paid."""
    pay = Payments()
    db = f"sqlite:///{tmp_path / 'log.db'}"

    def stop(charge_id: str) -> dict[str, Any]:
        """Pay a charge back."""
        pay.refund(charge_id)
        raise KeyboardInterrupt  # stopped right after the refund paid

    lookups = {"refund": REFUND_LOOKUP} if lookup else {}
    first = rac.RAC(tools=[pay.charge, rac.Tool.from_function(stop, name="refund"),
                           pay.list_refunds],
                    compensations={"charge": rac.Compensation(
                        "refund", args={"charge_id": "result.charge_id"})},
                    read_only=["list_refunds"], lookups=lookups, store=db, clock=VirtualClock())
    with pytest.raises(KeyboardInterrupt), first.run() as run:
        run.call("charge", customer="ann", amount=40.0)
        run.rollback()
    first.close()
    assert pay.paid_back("CH-001") == 40.0
    engine = engine_for(pay, store=db, lookups=lookups)
    done = engine.resume(run.run_id)
    assert len(pay.keys_seen) == 1 and pay.paid_back("CH-001") == 40.0  # paid back once
    action = next(r for r in engine.store.get_records(run.run_id)
                  if r.kind is rac.RecordKind.ACTION)
    assert done.report is not None
    if lookup:
        assert done.outcome == "compensated" and done.report.clean
        assert action.status is rac.RecordStatus.COMPENSATED
        assert action.note == "undone: list_refunds found the effect of refund (#2)"
        return
    assert done.outcome == "needs_attention" and not done.report.clean
    (named,) = done.report.compensation_failed
    assert "an earlier call of refund (#2) may have taken effect" in (named.error or "")
    assert action.status is rac.RecordStatus.COMPENSATION_FAILED
