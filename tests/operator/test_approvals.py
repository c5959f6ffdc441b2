"""Approval hooks fail closed and never stall the event loop (issue #27).

Reproductions:
- an approval plugin (``rac_approve_compensation``) that raised counted as "no answer", so the
  default approved and the refund it meant to hold ran (fail-open);
- in async runs ``rac_approve_action`` was called inline, so a human-in-the-loop wait stalled
  the event loop.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

import rac
from rac.models import RunStatus
from rac.testing import TravelWorld

FLIGHT = {"passenger": "ann", "origin": "SFO", "dest": "CDG"}


class Raises:
    """An approval service that is down."""

    @rac.hookimpl
    def rac_approve_compensation(self, record: rac.Record) -> bool | None:
        raise RuntimeError("approval service unreachable")


class Approves:
    @rac.hookimpl
    def rac_approve_compensation(self, record: rac.Record) -> bool | None:
        return True


def test_an_approval_plugin_that_raises_holds_the_compensation(
        make_engine: Any, world: TravelWorld) -> None:
    engine = make_engine(plugins=[Raises()])
    with engine.run() as run:
        run.call("book_flight", **FLIGHT)
        report = run.rollback()
    [held] = report.held
    assert held.tool == "book_flight" and held.compensator == "cancel_flight"
    assert "the approval hook raised RuntimeError: approval service unreachable" in (
        held.error or "")
    assert report.status is RunStatus.NEEDS_ATTENTION and not report.clean
    assert [b["kind"] for b in world.live()] == ["flight"]  # nothing ran unapproved
    (rec,) = engine.store.get_records(run.run_id)
    assert rec.note is not None and "approval hook raised" in rec.note
    # once the approval service answers, the held compensation runs (rac resume)
    operator = make_engine(store=engine.store, plugins=[Approves()])
    outcome = operator.resume(run.run_id)
    assert outcome.status is RunStatus.COMPENSATED and world.live() == []


class WaitsForAPerson:
    """An approval that waits for a person: here, for a coroutine on the run's own event
    loop to give the answer. Asked on the loop, it could never get it."""

    def __init__(self) -> None:
        self.answered = threading.Event()
        self.threads: list[int] = []

    def _wait(self) -> bool:
        self.threads.append(threading.get_ident())
        return self.answered.wait(120)

    @rac.hookimpl
    def rac_approve_action(self, tool: str) -> bool | None:
        return self._wait()

    @rac.hookimpl
    def rac_approve_compensation(self, record: rac.Record) -> bool | None:
        return self._wait()


async def _person(plugin: WaitsForAPerson, ticks: list[int]) -> None:
    """Ticks on the loop until it sees the approval asked, then answers it."""
    while not plugin.threads:
        ticks.append(1)
        await asyncio.sleep(0.001)
    plugin.answered.set()


@pytest.mark.parametrize("where", ["action", "compensation"])
async def test_an_async_run_asks_approvals_off_the_event_loop(
        make_engine: Any, world: TravelWorld, where: str) -> None:
    plugin = WaitsForAPerson()
    sent: list[str] = []
    email = rac.Tool("send_email", call=lambda a: sent.append(a["to"]) or {"sent": True},
                     params=["to"], required=["to"])
    engine = make_engine(plugins=[plugin], tools=[*world.tools(), email],  # memory store
                         irreversible={"send_email": "approve"})
    loop_thread = threading.get_ident()
    ticks: list[int] = []
    async with engine.run() as run:
        person = asyncio.create_task(_person(plugin, ticks))
        if where == "action":
            await run.acall("send_email", to="ann@example.com")
            assert sent == ["ann@example.com"]
        else:
            await run.acall("book_flight", **FLIGHT)
            report = await run.arollback()
            assert [u.tool for u in report.compensated] == ["book_flight"]
            assert world.live() == []
        await person
    assert plugin.answered.is_set() and ticks  # the loop kept running while it waited
    assert plugin.threads and loop_thread not in plugin.threads
