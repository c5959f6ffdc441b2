"""``rac show`` for the person on call (issue 31): per-record times, the links between records
(what undoes what, what stands in for what, what needs what), what the agent was told, word for
word, and the next step; ``--json`` carries all of it; ``--html`` is the run as one file to
attach to a ticket."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import rac
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld, VirtualClock
from tests.cli.support import log_url
from tests.cli.support import rac as rac_cli

__all__ = ["log_url"]


def failed_trip(url: str, world: TravelWorld) -> tuple[str, str]:
    """A run whose car fails for good: the flight and hotel are undone. Returns the run id and
    the exact text the agent received."""
    engine = rac.RAC(compensations=TRAVEL_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                     tools=world.tools(), store=url, clock=VirtualClock(),
                     load_entrypoints=False)
    world.fail("book_car", "permanent", message="no cars")
    try:
        with pytest.raises(rac.ToolCallFailed) as failed, engine.run() as run:
            run.call("book_flight", passenger="ann", origin="SFO", dest="CDG")
            run.call("book_hotel", guest="ann", city="Paris", nights=2)
            run.call("book_car", driver="ann", city="Paris")
        return run.run_id, str(failed.value)
    finally:
        engine.close()


def test_show_says_what_the_agent_was_told_word_for_word_and_the_next_step(
        tmp_path: Path, log_url: str) -> None:
    world = TravelWorld(str(tmp_path / "world.db"))
    run_id, told = failed_trip(log_url, world)
    assert "The world is back" in told

    out = rac_cli("show", run_id, "--store", log_url, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    said = text.split("what the agent was told:\n", 1)[1].split("\n\nnext step:", 1)[0]
    assert [line.strip() for line in said.splitlines()] == told.splitlines()
    assert "next step: compensated: nothing needs a person." in text
    assert "written" in text and "changed" in text
    assert re.search(r"cancel_hotel\s+completed\s+-\s+1\s+\d\d:\d\d:\d\d\.\d{3}\s+"
                     r"\d\d:\d\d:\d\d\.\d{3}\s+undoes #2", text)

    as_json = json.loads(rac_cli("show", run_id, "--store", log_url, "--json",
                                 cwd=tmp_path).stdout)
    assert as_json["report"] == told
    assert as_json["next_step"].startswith("compensated")
    comp = next(r for r in as_json["records"] if r["tool"] == "cancel_hotel")
    assert comp["compensates"] == 2 and comp["written_at"] <= comp["changed_at"]
    assert {"depends_on", "alternative_of", "scope"} <= comp.keys()
    world.close()


def test_html_is_one_file_to_attach_to_a_ticket(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'log.db'}"
    world = TravelWorld(str(tmp_path / "world.db"))
    run_id, told = failed_trip(url, world)
    out = rac_cli("show", run_id, "--store", url, "--html", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    page = out.stdout
    assert page.startswith("<!doctype html>") and "<svg" in page
    assert "What the agent was told" in page and "The world is back" in page
    assert "<form" not in page and "<script" not in page and "href='/" not in page
    both = rac_cli("show", run_id, "--store", url, "--html", "--json", cwd=tmp_path)
    assert both.returncode == 2
    world.close()


def test_a_needs_attention_run_names_the_commands_that_settle_it(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'log.db'}"
    world = TravelWorld(str(tmp_path / "world.db"))
    world.fail("cancel_hotel", "permanent", message="hotel system down")
    run_id, told = failed_trip(url, world)
    assert "STILL LIVE" in told
    out = rac_cli("show", run_id, "--store", url, cwd=tmp_path).stdout
    assert f"rac resolve {run_id} SEQ" in out and f"rac resume {run_id} --app" in out
    assert "hotel system down" in out.split("what the agent was told:", 1)[1]
    world.close()


class _Refunds:
    """A card charge and refunds that pay back again on every call (no key)."""

    def __init__(self) -> None:
        self.paid: list[str] = []
        self.stop = True

    def charge(self, customer: str, amount: float) -> dict[str, object]:
        """Charge the customer's card."""
        return {"charge_id": "CH-001", "customer": customer, "amount": amount}

    def refund(self, charge_id: str) -> dict[str, object]:
        """Pay a charge back."""
        self.paid.append(charge_id)
        if self.stop:
            self.stop = False
            raise KeyboardInterrupt  # the process stops right after the refund paid
        return {"refund_id": f"RF-{len(self.paid)}", "charge_id": charge_id}


@pytest.mark.parametrize("effect", ["unsafe", "idempotent"])
def test_an_interrupted_undo_says_what_recovery_does_with_it(tmp_path: Path,
                                                             effect: str) -> None:
    """The process stops after a refund paid and before its outcome was written. What the
    operator reads of that compensation (``rac show``) and what the agent is told after the
    resume say what RAC does: an unsafe refund is not made again (it may have paid), an
    idempotent one is; never "recovery runs it again" whatever the compensator."""
    url = f"sqlite:///{tmp_path / 'log.db'}"
    pay = _Refunds()

    def engine() -> rac.RAC:
        return rac.RAC(tools=[pay.charge, pay.refund], store=url, clock=VirtualClock(),
                       compensations={"charge": "refund"}, load_entrypoints=False,
                       effects={} if effect == "unsafe" else {"refund": effect})

    first = engine()
    with pytest.raises(KeyboardInterrupt), first.run() as run:
        run.call("charge", customer="ann", amount=40.0)
        run.rollback()
    first.close()
    second = engine()
    done = second.resume(run.run_id)
    second.close()

    shown = json.loads(rac_cli("show", run.run_id, "--store", url, "--json",
                               cwd=tmp_path).stdout)
    first_undo = next(r for r in shown["records"] if r["kind"] == "compensation")
    said = first_undo["error"]
    assert "runs it again" not in said
    assert said.startswith("in doubt: the process stopped before the outcome of this "
                           "compensation was written, so it may have taken effect")
    assert "only if a repeat is safe (an idempotent compensator, or a keyed one" in said
    action = next(r for r in shown["records"] if r["kind"] == "action")
    if effect == "unsafe":  # not repeated: paid once, the charge named, never "undone"
        assert pay.paid == ["CH-001"] and done.outcome == "needs_attention"
        assert action["status"] == "compensation_failed"
        assert "refund may have undone it, or not" in shown["report"]
        assert "is not safe to repeat" in shown["report"]
        assert "world is back" not in shown["report"]
    else:  # a repeat is safe: made again, and the run is back
        assert pay.paid == ["CH-001", "CH-001"] and done.outcome == "compensated"
        assert action["status"] == "compensated"
        assert "world is back" in shown["report"]
