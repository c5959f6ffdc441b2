"""No secret leaves RAC in clear (issue #27): tokens of every listed shape are planted in a
call's arguments, its result, a tool's error and a mapped compensation argument, then every
place a value leaves RAC is scanned for them: the report and its text, the exception the
agent gets, the structured events (stdlib logging and structlog), ``rac show`` and ``rac show
--json`` (the real binary), and the raw bytes of the SQLite log (WAL included) or every row
of the PostgreSQL log, with the undo data sealed (``RAC_LOG_KEY``)."""

from __future__ import annotations

import json
import logging
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rac
from rac.sealing import KEY_ENV, generate_key
from rac.testing import VirtualClock
from tests.cli.support import rac as rac_cli
from tests.reliability.support import drop, store_url

#: One secret per shape; each is grepped for, whole and by a distinctive part.
SECRETS = {
    "api_key": "sk-live-4f9a8b7c6d5e4f3a2b1c",            # a key name, Stripe-like token
    "access_key": "AKIAQWERTYUIOPASDFGHJ",               # access_key, an AWS key id
    "stripe_key": "rk_live_51Hq8sTRIPEsecret0001",       # stripe_key, a restricted key
    "session_id": "sess-7d1e2f3a4b5c6d7e8f90",           # session_id
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbm4ifQ.c2lnbmF0dXJlX29mX2p3dA",
    "memo": "sk_live_51HfreeTEXTtoken00000042",          # a bare token in free text
    "url": "AIzaQUERYkey0123456789",                      # ?key=... in a URL of the result
    "bearer": "bearerTOKEN0987654321abcd",                # Authorization: Bearer ... echoed
    "error": "sk-proj-ERRORechoedKEY1234567890",          # "Incorrect API key provided: ..."
    "mapped": "acct_MAPPEDfromSTRIPEkey777",              # mapped into a plainly named param
}


def planted(text: str) -> list[str]:
    return [name for name, value in SECRETS.items() if value in text]


def tools() -> list[rac.Tool]:
    def book_room(a: dict[str, Any]) -> dict[str, Any]:
        return {"booking_id": "RM-1",
                "callback": f"https://pay.example/cb?key={SECRETS['url']}&ref=RM-1",
                "echo": f"Authorization: Bearer {SECRETS['bearer']}"}

    def charge(a: dict[str, Any]) -> dict[str, Any]:
        raise rac.PermanentError(f"Incorrect API key provided: {SECRETS['error']}. You can "
                                 "find your API key at https://example.com/keys")

    return [
        rac.Tool("book_room", call=book_room,
                 params=["guest", "api_key", "access_key", "stripe_key", "session_id", "jwt",
                         "memo"], required=["guest"]),
        rac.Tool("cancel_room", call=lambda a: {"cancelled": a["booking_id"]},
                 params=["booking_id", "account"], required=["booking_id", "account"]),
        rac.Tool("charge", call=charge, params=["amount"], required=["amount"]),
    ]


class Listener:
    """A plugin listening to every record written (what a listener is handed)."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    @rac.hookimpl
    def rac_record_written(self, record: rac.Record, previous: str | None) -> None:
        self.seen.append(repr(record.to_dict()))


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv(KEY_ENV, generate_key())
    found = store_url(request.param, tmp_path)
    yield found
    drop(found)


def raw_log(url: str, tmp_path: Path) -> str:
    """Everything the log holds: the SQLite files' bytes, or every row of every table."""
    if url.startswith("sqlite"):
        return "".join(p.read_bytes().decode("latin-1") for p in tmp_path.glob("log.db*"))
    from rac.stores.postgres import PostgresStore

    store = PostgresStore(url)
    try:
        return "".join(repr(store._read(f"SELECT * FROM {store.dialect.table(t)}"))
                       for t in ("runs", "records", "pairs"))
    finally:
        store.close()


def test_no_planted_secret_leaves_rac_in_clear(url: str, tmp_path: Path,
                                               caplog: pytest.LogCaptureFixture) -> None:
    from structlog.testing import capture_logs

    engine = rac.RAC(
        tools=tools(), store=url, clock=VirtualClock(), load_entrypoints=False,
        compensations={"book_room": rac.Compensation(
            "cancel_room", args={"booking_id": "result.booking_id",
                                 "account": "args.stripe_key"})},
        retry=rac.RetryPolicy(max_attempts=1))
    heard = Listener()
    engine.register_plugin(heard)
    seen: list[str] = []
    with caplog.at_level(logging.DEBUG, logger="rac"):
        with engine.run() as run, pytest.raises(rac.ToolCallFailed) as failed:
            run.call("book_room", guest="ann", api_key=SECRETS["api_key"],
                     access_key=SECRETS["access_key"], stripe_key=SECRETS["stripe_key"],
                     session_id=SECRETS["session_id"], jwt=SECRETS["jwt"],
                     memo=f"pay with {SECRETS['memo']} please")
            run.call("charge", amount=12)
    report = failed.value.report
    assert [u.tool for u in report.compensated] == ["book_room"]  # the rollback ran
    seen += [report.model_dump_json(), report.render(), str(failed.value)]
    seen += [r.getMessage() + repr(getattr(r, "rac", None)) for r in caplog.records]
    # the same through an application's structlog configuration (another run)
    with capture_logs() as events, engine.run() as again, pytest.raises(rac.ToolCallFailed):
        again.call("book_room", guest="bob", api_key=SECRETS["api_key"],
                   stripe_key=SECRETS["stripe_key"], jwt=SECRETS["jwt"],
                   memo=f"pay with {SECRETS['memo']} please")
        again.call("charge", amount=1)
    seen.append(repr(events))
    assert any(e.get("event") == "rac.record" for e in events)
    engine.close()
    # rac show and rac show --json, the real binary, on the same log
    env = {KEY_ENV: os.environ[KEY_ENV]}
    for extra in ([], ["--json"]):
        out = rac_cli("show", run.run_id, "--store", url, *extra, cwd=tmp_path, env=env)
        assert out.returncode == 0, out.stderr
        seen += [out.stdout, out.stderr]
    shown = json.loads(seen[-2])
    comp = next(r for r in shown["records"] if r["tool"] == "cancel_room")
    assert comp["args"]["account"] == "[REDACTED]"  # redacted by its source, args.stripe_key
    assert any("Incorrect API key provided" in (r["error"] or "") for r in shown["records"])
    seen.append(raw_log(url, tmp_path))
    # each path carried the planted values' surroundings (the scan looked at real output)
    assert "Incorrect API key provided" in "".join(seen[:3])  # the report and the exception
    assert "Incorrect API key provided" in "".join(seen[3:-5])  # the events
    assert "stripe_key" in "".join(heard.seen) and "RM-1" in "".join(heard.seen)
    assert "RM-1" in seen[-1] and "cancel_room" in seen[-1]
    leaks = {name for text in [*seen, *heard.seen] for name in planted(text)}
    assert leaks == set(), f"secrets in clear: {sorted(leaks)}"


def test_the_planted_secrets_are_there_to_be_found(tmp_path: Path) -> None:
    """The scan finds what it looks for: without RAC, the same values are in plain sight."""
    db = tmp_path / "plain.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE t (v TEXT)")
    conn.executemany("INSERT INTO t VALUES (?)", [(v,) for v in SECRETS.values()])
    conn.commit()
    conn.close()
    assert set(planted(db.read_bytes().decode("latin-1"))) == set(SECRETS)
