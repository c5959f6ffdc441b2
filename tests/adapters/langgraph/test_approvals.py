"""Issue 13's approval of irreversible calls, mapped to LangGraph's human in the loop: a tool
declared ``irreversible={tool: "approve"}`` pauses the thread with an ``interrupt()``, and
``Command(resume=...)`` approves (it runs, once) or denies (it never runs, and the model is told
so), also when the thread resumes in a fresh process."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

import rac
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld, VirtualClock
from rac_langgraph import RACMiddleware
from rac_langgraph.approvals import APPROVAL
from tests.adapters.langgraph.support import (
    FLIGHT,
    call,
    engine,
    model,
    records,
    say,
    tool_messages,
    turn,
    world_tools,
)

VOUCHER = {"who": "ann", "amount": 50}


class Mailbox:
    """Vouchers really sent (an effect with no undo)."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def tool(self) -> BaseTool:
        def send_voucher(who: str, amount: int) -> dict[str, Any]:
            """Send a travel voucher by e-mail (it cannot be taken back)."""
            self.sent.append({"who": who, "amount": amount})
            return {"voucher_id": f"V-{len(self.sent)}", "who": who}

        return StructuredTool.from_function(send_voucher)


def _agent(world: TravelWorld, mail: Mailbox, eng: rac.RAC, m: Any, saver: Any,
           **kw: Any) -> Any:
    return create_agent(m, [*world_tools(world, ["book_flight", "cancel_flight"]), mail.tool()],
                        middleware=[RACMiddleware(rac=eng, **kw)], checkpointer=saver)


def _script() -> list[Any]:
    return [turn(call("book_flight", **FLIGHT), call("send_voucher", **VOUCHER)),
            say("Done.")]


def _voucher_answer(m: Any) -> Any:
    [answer] = [t for t in tool_messages(m.seen[-1]) if t.name == "send_voucher"]
    return answer


@pytest.mark.parametrize("answer", ["approve", True, {"approved": True}])
def test_an_approved_call_runs_once_after_the_resume(answer: Any) -> None:
    world, mail = TravelWorld(), Mailbox()
    eng = engine(irreversible={"send_voucher": "approve"})
    m = model(*_script())
    agent = _agent(world, mail, eng, m, InMemorySaver())
    cfg: Any = {"configurable": {"thread_id": "t-approve"}}
    out = agent.invoke({"messages": [("user", "flight, and a voucher")]}, cfg)

    [pause] = out["__interrupt__"]
    assert pause.value["type"] == APPROVAL and pause.value["tool"] == "send_voucher"
    assert pause.value["args"] == VOUCHER
    assert mail.sent == []  # nothing sent before a person said so
    out = agent.invoke(Command(resume=answer), cfg)

    assert mail.sent == [VOUCHER]
    assert world.calls["book_flight"] == 1  # the sibling call is answered from the log
    assert "V-1" in str(_voucher_answer(m).content)
    [rec] = [r for r in records(eng) if r.tool == "send_voucher"]
    assert rec.status is rac.RecordStatus.COMPLETED
    assert rec.note == "irreversible: approved before it ran"
    assert out["messages"][-1].content == "Done."


def test_a_denied_call_never_runs_and_the_model_is_told() -> None:
    world, mail = TravelWorld(), Mailbox()
    eng = engine(irreversible={"send_voucher": "approve"})
    m = model(*_script())
    agent = _agent(world, mail, eng, m, InMemorySaver())
    cfg: Any = {"configurable": {"thread_id": "t-deny"}}
    agent.invoke({"messages": [("user", "flight, and a voucher")]}, cfg)
    agent.invoke(Command(resume={"approved": False, "reason": "no vouchers this month"}), cfg)

    assert mail.sent == []
    told = _voucher_answer(m)
    assert told.status == "error"
    assert "approval was denied" in str(told.content)
    assert "no vouchers this month" in str(told.content)
    assert [b["kind"] for b in world.live()] == ["flight"]  # a refusal undoes nothing
    [rec] = [r for r in records(eng) if r.tool == "send_voucher"]
    assert rec.status is rac.RecordStatus.FAILED and rec.note == "refused"


def test_an_unreadable_answer_leaves_the_call_waiting(caplog: pytest.LogCaptureFixture) -> None:
    world, mail = TravelWorld(), Mailbox()
    eng = engine(irreversible={"send_voucher": "approve"})
    m = model(*_script())
    agent = _agent(world, mail, eng, m, InMemorySaver())
    cfg: Any = {"configurable": {"thread_id": "t-unread"}}
    agent.invoke({"messages": [("user", "flight, and a voucher")]}, cfg)
    with caplog.at_level(logging.WARNING, logger="rac"):
        agent.invoke(Command(resume="maybe later"), cfg)
    assert mail.sent == []
    assert "waits for approval" in str(_voucher_answer(m).content)
    assert any("rac_langgraph.approval_unread" in r.getMessage() and "maybe later"
               in r.getMessage() for r in caplog.records)


def test_without_a_checkpointer_the_call_waits_for_approval() -> None:
    """No checkpointer, no resume: RAC raises no interrupt, and the model is told the call
    waits for approval."""
    world, mail = TravelWorld(), Mailbox()
    eng = engine(irreversible={"send_voucher": "approve"})
    m = model(*_script())
    out = _agent(world, mail, eng, m, None).invoke({"messages": [("user", "a voucher")]})
    assert "__interrupt__" not in out and mail.sent == []
    assert "waits for approval" in str(_voucher_answer(m).content)


def test_approvals_hook_leaves_it_to_the_engines_plugins() -> None:
    asked: list[str] = []

    class Operator:
        @rac.hookimpl
        def rac_approve_action(self, tool: str) -> bool:
            asked.append(tool)
            return True

    world, mail = TravelWorld(), Mailbox()
    eng = engine(irreversible={"send_voucher": "approve"}, plugins=[Operator()])
    out = _agent(world, mail, eng, model(*_script()), InMemorySaver(), approvals="hook").invoke(
        {"messages": [("user", "a voucher")]}, {"configurable": {"thread_id": "t-hook"}})
    assert "__interrupt__" not in out and asked == ["send_voucher"] and mail.sent == [VOUCHER]


def test_a_wrong_approvals_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="approvals must be 'interrupt'"):
        RACMiddleware(rac=engine(), approvals="ask")


def test_approval_resumed_in_a_fresh_process(tmp_path: Path) -> None:
    """The thread pauses for approval; the process ends; a new engine, agent and checkpointer
    over the same files resume it with the approval: the voucher is sent once, the flight booked
    before the pause is answered from the log, and a later failure still undoes the flight."""
    log, threads = tmp_path / "rac.db", tmp_path / "threads.db"
    world, mail = TravelWorld(str(tmp_path / "world.db")), Mailbox()
    world.fail("book_car", "permanent", message="no cars left")

    def sqlite_engine() -> rac.RAC:
        return rac.RAC(compensations=TRAVEL_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                       irreversible={"send_voucher": "approve"}, store=f"sqlite:///{log}",
                       clock=VirtualClock(), load_entrypoints=False)

    def agent(m: Any, conn: sqlite3.Connection) -> Any:
        return create_agent(m, [*world_tools(world, ["book_flight", "cancel_flight", "book_car",
                                                     "cancel_car"]), mail.tool()],
                            middleware=[RACMiddleware(rac=sqlite_engine())],
                            checkpointer=SqliteSaver(conn))

    cfg: Any = {"configurable": {"thread_id": "t-approve-restart"}}
    script = [*_script()[:1], turn(call("book_car", driver="ann", city="Paris")),
              say("No car; the flight is cancelled, the voucher was sent.")]
    with sqlite3.connect(threads, check_same_thread=False) as conn:
        out = agent(model(*script), conn).invoke({"messages": [("user", "trip")]}, cfg)
    assert out["__interrupt__"][0].value["tool"] == "send_voucher"

    m = model(*script[1:])  # "the fresh process": new objects, same files
    with sqlite3.connect(threads, check_same_thread=False) as conn:
        out = agent(m, conn).invoke(Command(resume="approve"), cfg)
    assert mail.sent == [VOUCHER]
    assert world.calls["book_flight"] == 1  # answered from the log after the restart
    assert world.live() == []  # the car's failure undid the flight of the same turn
    [report] = [t for t in tool_messages(m.seen[-1]) if t.status == "error"]
    assert "book_flight FL-101 (via cancel_flight)" in str(report.content)
    assert "send_voucher" in str(report.content)  # named: it could not be undone
    assert "world is back" not in str(report.content)
    assert out["messages"][-1].content == script[-1].content


async def test_approval_on_the_async_path() -> None:
    world, mail = TravelWorld(), Mailbox()
    eng = engine(irreversible={"send_voucher": "approve"})
    m = model(*_script())
    agent = _agent(world, mail, eng, m, InMemorySaver())
    cfg: Any = {"configurable": {"thread_id": "t-async"}}
    out = await agent.ainvoke({"messages": [("user", "flight, and a voucher")]}, cfg)
    assert out["__interrupt__"][0].value["tool"] == "send_voucher" and mail.sent == []
    await agent.ainvoke(Command(resume="approve"), cfg)
    assert mail.sent == [VOUCHER] and world.calls["book_flight"] == 1
