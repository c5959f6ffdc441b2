"""``rac ui`` over a real SQLite log, through the application's HTTP interface: every page,
every action, and the security rules (no token, wrong token, missing CSRF, read-only mode, a
foreign Host, a non-loopback bind without a token)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("starlette")
from starlette.testclient import TestClient  # noqa: E402

import rac  # noqa: E402
from rac.models import RecordStatus, RunStatus  # noqa: E402
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY  # noqa: E402
from rac.ui.app import create_app  # noqa: E402
from rac.ui.security import Guard, UIConfigError  # noqa: E402
from tests.ui.support import SECRET, Log, make_log  # noqa: E402

TOKEN = "t" * 24
BASE = "http://127.0.0.1:8765"


@pytest.fixture
def log(tmp_path: Path) -> Iterator[Log]:
    made = make_log(tmp_path)
    yield made
    made.world.close()


def client(log: Log, *, read_only: bool = False, engine: bool = True,
           host: str = "127.0.0.1") -> TestClient:
    guard = Guard.for_server(host, token=TOKEN, read_only=read_only)
    app = create_app(log.engine.store, engine=log.engine if engine else None, guard=guard,
                     page_size=2)
    return TestClient(app, base_url=BASE, follow_redirects=False)


def signed_in(c: TestClient, name: str = "ops-ann") -> TestClient:
    r = c.get(f"/login?token={TOKEN}&by={name}")
    assert r.status_code == 303 and "rac_ui_session" in r.cookies
    return c


def csrf_of(page: str) -> str:
    found = re.search(r'name=(?:csrf value|rac-csrf content)="([^"]+)"', page)
    assert found, "the page has no CSRF field"
    return found.group(1)


def status_of(log: Log, run_id: str, seq: int) -> RecordStatus:
    return next(r.status for r in log.engine.store.get_records(run_id) if r.seq == seq)


def test_runs_page_lists_filters_and_pages(log: Log) -> None:
    c = client(log)
    first = c.get("/runs")
    assert first.status_code == 200
    assert log.attention in first.text and log.compensated in first.text
    assert log.completed not in first.text  # page size 2: the oldest is on the next page
    nxt = re.search(r"id=next href='([^']+)'", first.text)
    assert nxt
    second = c.get(nxt.group(1).replace("&amp;", "&"))
    assert log.completed in second.text and log.attention not in second.text
    only = c.get("/runs?status=needs_attention")
    assert log.attention in only.text and log.compensated not in only.text
    by_tool = c.get("/runs?tool=charge_card")
    assert log.attention in by_tool.text and log.compensated not in by_tool.text
    assert c.get("/runs?agent=nobody").text.count("No runs match") == 1
    bad = c.get("/runs?status=bogus")
    assert bad.status_code == 400 and "unknown status" in bad.text and "Nothing in the log" in bad.text
    assert c.get("/runs?since=yesterday").status_code == 400


def test_run_page_shows_the_timeline_what_is_live_and_the_next_step(log: Log) -> None:
    page = client(log).get(f"/runs/{log.attention}").text
    assert "<svg" in page and "book_hotel" in page and "cancel_hotel" in page
    assert "Still live" in page and "hotel system down" in page
    assert "Next step:" in page and "resolve it with a note" in page
    assert "sign in to act" in page and "csrf" not in page  # no session: no forms
    assert SECRET not in page  # the store keeps the redacted copy; undo data is never shown
    missing = client(log).get("/runs/run-nope")
    assert missing.status_code == 404 and "has no run" in missing.text and "run-nope" in missing.text


def test_queue_lists_each_live_effect_with_its_reason(log: Log) -> None:
    page = client(log).get("/queue").text
    assert f"q-{log.attention}" in page and log.compensated not in page
    assert "book_hotel" in page and "hotel system down" in page


def test_sign_in_needs_the_token(log: Log) -> None:
    c = client(log)
    assert c.get("/login?token=wrong").status_code == 403
    assert c.post("/login", data={"token": "wrong", "by": "x"}).status_code == 403
    ok = c.post("/login", data={"token": TOKEN, "by": "ops-bob"})
    assert ok.status_code == 303 and ok.cookies.get("rac_ui_name") == "ops-bob"


def test_resolve_needs_a_session_and_the_forms_csrf_field(log: Log) -> None:
    seq = 2  # the hotel whose undo failed
    anonymous = client(log)
    r = anonymous.post(f"/runs/{log.attention}/resolve",
                       data={"seq": seq, "note": "cancelled by phone", "by": "mallory"})
    assert r.status_code == 403 and "Sign in first" in r.text
    c = signed_in(client(log))
    no_csrf = c.post(f"/runs/{log.attention}/resolve",
                     data={"seq": seq, "note": "cancelled by phone", "by": "ann"})
    assert no_csrf.status_code == 403 and "CSRF" in no_csrf.text
    other = signed_in(client(log))  # another session's field is not this one's
    other_csrf = csrf_of(other.get(f"/runs/{log.attention}").text)
    wrong = c.post(f"/runs/{log.attention}/resolve",
                   data={"seq": seq, "note": "x", "by": "ann", "csrf": other_csrf})
    assert wrong.status_code == 403
    assert status_of(log, log.attention, seq) is RecordStatus.COMPENSATION_FAILED


def test_resolving_every_live_effect_takes_the_run_out_of_the_queue(log: Log) -> None:
    c = signed_in(client(log))
    page = c.get(f"/runs/{log.attention}").text
    csrf = csrf_of(page)
    live = [int(s) for s in re.findall(r"id='resolve-(\d+)'", page)]
    assert live == [2]  # the hotel whose undo failed (the charge was refunded)
    empty = c.post(f"/runs/{log.attention}/resolve",
                   data={"seq": 2, "note": "", "by": "ann", "csrf": csrf})
    assert empty.status_code == 400 and "note" in empty.text
    for seq in live:
        done = c.post(f"/runs/{log.attention}/resolve",
                      data={"seq": seq, "note": f"checked #{seq} by phone", "by": "ann",
                            "csrf": csrf})
        assert done.status_code == 303, done.text
    recs = {r.seq: r for r in log.engine.store.get_records(log.attention)}
    assert recs[2].status is RecordStatus.RESOLVED and "resolved by ann" in (recs[2].note or "")
    info = log.engine.store.get_run(log.attention)
    assert info is not None and info.status is RunStatus.RESOLVED
    assert "Nothing needs a person" in c.get("/queue").text
    stale = c.post(f"/runs/{log.attention}/resolve",
                   data={"seq": 2, "note": "again", "by": "bob", "csrf": csrf})
    assert stale.status_code == 409 and "nothing to resolve" in stale.text
    assert "resolved by ann" in (next(r.note for r in log.engine.store.get_records(
        log.attention) if r.seq == 2) or "")


def test_resume_retries_the_undo_once_its_cause_is_fixed(log: Log) -> None:
    c = signed_in(client(log))
    csrf = csrf_of(c.get(f"/runs/{log.attention}").text)
    no_why = c.post(f"/runs/{log.attention}/resume", data={"by": "ann", "csrf": csrf})
    assert no_why.status_code == 400
    done = c.post(f"/runs/{log.attention}/resume",
                  data={"by": "ann", "note": "hotel system is back", "csrf": csrf})
    assert done.status_code == 303, done.text
    assert status_of(log, log.attention, 2) is RecordStatus.COMPENSATED
    assert [b["kind"] for b in log.world.live()] == ["flight"]  # the completed run's only
    info = log.engine.store.get_run(log.attention)
    assert info is not None and "resumed by ann" in (info.summary or "")
    without = signed_in(client(log, engine=False))
    csrf2 = csrf_of(without.get("/runs").text)
    r = without.post(f"/runs/{log.attention}/resume",
                     data={"by": "ann", "note": "x", "csrf": csrf2})
    assert r.status_code == 409 and "--app" in r.text


def test_a_models_proposed_pair_is_approved_or_rejected(log: Log) -> None:
    c = signed_in(client(log))
    page = c.get("/pairs").text
    assert "pair-book_car-cancel_car-ab" in page and "proposed" in page
    csrf = csrf_of(page)
    r = c.post("/pairs/pair-book_car-cancel_car-ab/approve", data={"csrf": csrf, "by": "ann"})
    assert r.status_code == 303
    pair = log.engine.store.get_pair("pair-book_car-cancel_car-ab")  # type: ignore[attr-defined]
    assert pair.status == "approved" and "approved by ann" in pair.note
    unknown = c.post("/pairs/nope/reject", data={"csrf": csrf, "by": "ann"})
    assert unknown.status_code == 404


def test_read_only_serves_no_actions(log: Log) -> None:
    c = signed_in(client(log, read_only=True))
    page = c.get(f"/runs/{log.attention}").text
    assert "read-only" in page and "csrf" not in page
    r = c.post(f"/runs/{log.attention}/resolve", data={"seq": 2, "note": "x", "by": "x"})
    assert r.status_code in (404, 405)
    assert status_of(log, log.attention, 2) is RecordStatus.COMPENSATION_FAILED


def test_a_foreign_host_header_is_refused(log: Log) -> None:
    r = client(log).get("/runs", headers={"host": "evil.example:8765"})
    assert r.status_code == 421


def test_beyond_loopback_a_token_is_required_and_every_page_needs_a_session(log: Log,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAC_UI_TOKEN", raising=False)
    with pytest.raises(UIConfigError, match="token"):
        Guard.for_server("0.0.0.0")
    c = client(log, host="0.0.0.0")
    assert c.get("/runs", headers={"host": "rac.internal"}).status_code == 303
    signed_in(c)
    assert c.get("/runs", headers={"host": "rac.internal"}).status_code == 200


def test_a_run_as_one_static_file_to_attach_to_a_ticket(log: Log) -> None:
    from rac.ui.static import run_document

    info = log.engine.store.get_run(log.attention)
    assert info is not None
    html = run_document(info, log.engine.store.get_records(log.attention),
                        told="RAC: book_car failed ...")
    assert html.startswith("<!doctype html>") and "<svg" in html
    assert "<script" not in html and "<form" not in html and "href='/runs'" not in html
    assert "Still live" in html and "hotel system down" in html
    assert "What the agent was told" in html and "book_car failed" in html
    assert SECRET not in html


def test_a_crashed_runs_live_effects_are_in_the_queue(log: Log) -> None:
    import socket

    from rac.models import Record, RecordKind, RunInfo

    store = log.engine.store
    dead = f"{socket.gethostname()}:999999:gone01"  # a process of this host that is not there
    store.create_run(RunInfo("run-crashed", agent_id="travel", status=RunStatus.RUNNING,
                             created_at=10.0, updated_at=10.0, owner=dead))
    store.append(Record("run-crashed", 1, "book_hotel", RecordKind.ACTION,
                        RecordStatus.COMPLETED, result={"booking_id": "HT-900"}, attempts=1,
                        created_at=10.0, updated_at=10.0, effect="unsafe"))
    page = client(log).get("/queue").text
    assert "q-run-crashed" in page and "rac recover" in page and "is gone" in page
    assert "Nothing needs a person" not in page


def test_a_notice_shows_only_when_this_server_signed_it(log: Log) -> None:
    spoof = "All effects undone: the world is back"
    page = client(log).get(f"/runs/{log.attention}", params={"done": spoof}).text
    assert spoof not in page
    c = signed_in(client(log))
    csrf = csrf_of(c.get(f"/runs/{log.attention}").text)
    done = c.post(f"/runs/{log.attention}/resolve",
                  data={"seq": 2, "note": "by phone", "by": "ann", "csrf": csrf})
    assert "#2 resolved by ann" in c.get(done.headers["location"]).text


def test_a_stale_verdict_never_flips_another_operators(log: Log) -> None:
    c = signed_in(client(log))
    csrf = csrf_of(c.get("/pairs").text)
    key = "pair-book_car-cancel_car-ab"
    assert c.post(f"/pairs/{key}/approve", data={"csrf": csrf, "by": "ann"}).status_code == 303
    stale = c.post(f"/pairs/{key}/reject", data={"csrf": csrf, "by": "bob"})
    assert stale.status_code == 409 and "already" in stale.text
    pair = log.engine.store.get_pair(key)  # type: ignore[attr-defined]
    assert pair.status == "approved" and "ann" in pair.note


def test_run_ids_with_a_slash_and_an_ipv6_loopback_host(log: Log) -> None:
    from rac.models import RunInfo

    log.engine.store.create_run(RunInfo("thread-7/turn-2", created_at=5.0, updated_at=5.0,
                                        status=RunStatus.COMPLETED))
    c = client(log)
    assert "thread-7/turn-2" in c.get("/runs/thread-7/turn-2").text
    assert c.get("/runs", headers={"host": "[::1]:8765"}).status_code == 200
    assert c.get("/runs", headers={"host": "[::1]"}).status_code == 200


def test_a_completed_run_is_previewed_then_undone_from_its_page(log: Log) -> None:
    """Issue 31's undo later, in the UI: the preview changes nothing and names what cannot be
    checked; the undo with the box ticked cancels the flight and the run is compensated, who
    and why kept on its row."""
    c = signed_in(client(log))
    page = c.get(f"/runs/{log.completed}").text
    assert "Undo this run" in page and "rac undo" in page
    csrf = csrf_of(page)
    seen = c.post(f"/runs/{log.completed}/undo",
                  data={"by": "ann", "csrf": csrf, "mode": "preview"})
    assert seen.status_code == 200 and "id=undo-preview" in seen.text
    assert "cannot be checked: left alone" in seen.text
    assert [b["kind"] for b in log.world.live()].count("flight") == 1
    assert log.engine.store.get_run(log.completed).status is RunStatus.COMPLETED

    no_why = c.post(f"/runs/{log.completed}/undo", data={"by": "ann", "csrf": csrf,
                                                         "mode": "undo"})
    assert no_why.status_code == 400
    done = c.post(f"/runs/{log.completed}/undo",
                  data={"by": "ann", "csrf": csrf, "mode": "undo", "unchecked": "1",
                        "note": "booked the wrong trip"})
    assert done.status_code == 303, done.text
    info = log.engine.store.get_run(log.completed)
    assert info.status is RunStatus.COMPENSATED
    assert "undone by ann" in (info.summary or "") and "wrong trip" in (info.summary or "")
    assert "flight" not in [b["kind"] for b in log.world.live()]
    after = c.get(done.headers["location"]).text
    assert "1 undone, 0 left alone; the run is compensated" in after
    again = c.post(f"/runs/{log.completed}/undo",
                   data={"by": "ann", "csrf": csrf, "mode": "undo", "note": "x"})
    assert again.status_code == 409 and "only a completed run" in again.text


class _HoldsCharges:
    @rac.hookimpl
    def rac_approve_compensation(self, record: rac.Record) -> bool | None:
        return False if record.tool == "charge_card" else None


def test_a_held_undo_is_kept_held_then_approved_and_run_from_the_run_page(log: Log) -> None:
    """Issue 31's "approve or hold a compensation": the held refund shows both decisions;
    keeping it held writes who and why and runs nothing; approving it runs the refund at once
    (the UI's engine resumes the run) and the run leaves the queue."""
    holder = rac.RAC(compensations=TRAVEL_COMPENSATIONS, read_only=TRAVEL_READ_ONLY,
                     tools=log.world.tools(), store=log.url, load_entrypoints=False,
                     plugins=[_HoldsCharges()])
    with holder.run() as run:
        run.call("charge_card", customer="zoe", amount=900.0)
        run.rollback("the customer cancelled")
    holder.close()
    held = run.run_id
    c = signed_in(client(log))
    page = c.get(f"/runs/{held}").text
    assert "id='approve-1'" in page and "id='hold-1'" in page
    csrf = csrf_of(page)
    kept = c.post(f"/runs/{held}/hold", data={"seq": "1", "by": "ann", "csrf": csrf,
                                              "note": "disputed"})
    assert kept.status_code == 303
    rec = log.engine.store.get_records(held)[0]
    assert "kept held by ann" in rec.note and rec.status is RecordStatus.COMPLETED
    assert "zoe" in [b["who"] for b in log.world.live()]
    no_note = c.post(f"/runs/{held}/approve", data={"seq": "1", "by": "ann", "csrf": csrf})
    assert no_note.status_code == 400
    done = c.post(f"/runs/{held}/approve", data={"seq": "1", "by": "ann", "csrf": csrf,
                                                 "note": "the bank agreed"})
    assert done.status_code == 303, done.text
    assert "zoe" not in [b["who"] for b in log.world.live()]
    assert log.engine.store.get_run(held).status is RunStatus.COMPENSATED
    assert "resumed: compensated" in c.get(done.headers["location"]).text
    again = c.post(f"/runs/{held}/approve", data={"seq": "1", "by": "ann", "csrf": csrf,
                                                  "note": "x"})
    assert again.status_code == 409 and "no compensation of it is held" in again.text


def test_an_auto_pair_in_use_is_open_to_a_verdict_on_the_pairs_page(log: Log) -> None:
    """A pair policy="auto" put in use without review takes a verdict here too (rac pairs
    approve|reject take it on the CLI)."""
    from rac.models import PairRecord

    log.engine.store.put_pair(PairRecord(  # type: ignore[attr-defined]
        "pair-book_hotel-cancel_hotel-cd", "book_hotel", "cancel_hotel",
        {"booking_id": "result.booking_id"}, source="llm", status="auto", schema_hash="cd",
        note="put in use by policy auto", created_at=2.0, updated_at=2.0))
    c = signed_in(client(log))
    page = c.get("/pairs").text
    assert "/pairs/pair-book_hotel-cancel_hotel-cd/reject" in page
    r = c.post("/pairs/pair-book_hotel-cancel_hotel-cd/reject",
               data={"csrf": csrf_of(page), "by": "ann"})
    assert r.status_code == 303
    pair = log.engine.store.get_pair("pair-book_hotel-cancel_hotel-cd")  # type: ignore[attr-defined]
    assert pair.status == "rejected"
