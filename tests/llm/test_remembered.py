"""Pairs are remembered in the log's store: a fresh engine (a restart, a recovery after a crash)
uses the stored pair and mapping without a model; ``rac pairs`` lists them and records the
operator's verdict."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import rac
from rac.cli.main import main as rac_main
from rac.resolver import LLMResolver, ScriptedModel
from rac.stores import SQLiteStore
from rac.testing import TravelWorld, abandon_runs, assert_no_live_effects

from .conftest import RIGHT_MAPPING, RIGHT_PAIR, trip_that_fails, void_booking

Make = Callable[..., rac.RAC]


@pytest.fixture(params=["sqlite", "postgresql"])
def log_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A durable log: a SQLite file, or a schema of its own on the PostgreSQL server."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'log.db'}"
        return
    server = os.environ.get("RAC_TEST_POSTGRES_URL")
    if not server:
        pytest.skip("RAC_TEST_POSTGRES_URL is not set: no PostgreSQL server to test against")
    sep = "&" if "?" in server else "?"
    url = f"{server}{sep}rac_schema=llm_{uuid.uuid4().hex[:12]}"
    yield url
    from rac.stores.postgres import PostgresStore

    store = PostgresStore(url)
    store.drop_schema()
    store.close()


def undone_on_a_models_word(report: Any) -> bool:
    """Everything undone, through a pair policy="auto" put in use that nobody reviewed: the
    report names it and is not clean on its account (issue #27)."""
    return (not report.left_live and not report.in_flight and bool(report.unreviewed)
            and not report.clean)


def _learn_the_pair(resolver_engine: Make, world: TravelWorld, url: str | rac.Store) -> None:
    """A first process asks the model (both questions) and ends."""
    model = ScriptedModel([RIGHT_PAIR, RIGHT_MAPPING])
    engine = resolver_engine(LLMResolver(model, policy="auto"), store=url)
    assert undone_on_a_models_word(trip_that_fails(engine, world))
    assert model.left == 0
    engine.store.close()


def test_a_restart_reuses_the_stored_pair_without_a_model(
        resolver_engine: Make, world: TravelWorld, log_url: str) -> None:
    _learn_the_pair(resolver_engine, world, log_url)
    engine = resolver_engine(LLMResolver(None), store=log_url)  # a fresh process: no model
    report = trip_that_fails(engine, world)
    assert [(u.tool, u.compensator) for u in report.compensated] == [
        ("book_hotel", "void_booking"), ("book_flight", "cancel_flight")]
    assert_no_live_effects(world)


def test_a_durable_log_without_the_pairs_capability_forgets_pairs_and_says_so(
        resolver_engine: Make, world: TravelWorld, tmp_path: Path) -> None:
    # A third-party store keeps the log but not pairs: as documented, pairs live in the
    # process only. A fresh process (a new store object on the same file) has no model and
    # no pair, so the hotel is named as not undone, never reported undone.
    from rac.stores.sqlite import SQLiteStore

    class LogOnly(SQLiteStore):
        capabilities: frozenset[str] = frozenset()

    path = tmp_path / "log.db"
    first = LogOnly(path)
    assert not rac.stores.supports(first, "pairs")
    _learn_the_pair(resolver_engine, world, first)
    engine = resolver_engine(LLMResolver(None), store=LogOnly(path))
    report = trip_that_fails(engine, world)
    assert [u.tool for u in report.compensated] == ["book_flight"]
    assert [u.tool for u in report.not_undoable] == ["book_hotel"]
    assert not report.clean
    assert [b["kind"] for b in world.live()] == ["hotel"]


def test_recovery_after_a_crash_uses_the_stored_mapping(
        resolver_engine: Make, world: TravelWorld, log_url: str) -> None:
    _learn_the_pair(resolver_engine, world, log_url)
    # a process books a flight and a hotel, then dies before its run ends
    engine = resolver_engine(LLMResolver(ScriptedModel([]), policy="auto"), store=log_url)
    run = engine.run()
    run.start()
    run.call("book_flight", passenger="bob", origin="SFO", dest="CDG")
    run.call("book_hotel", guest="bob", city="Paris", nights=1)
    abandon_runs(engine)  # killed: its heartbeat stops, its lease runs out
    assert len(world.live()) == 2
    # the recoverer has no model at all
    recoverer = resolver_engine(LLMResolver(None), store=log_url)
    [outcome] = recoverer.recover([run.run_id])
    assert outcome.outcome == "compensated", outcome.report
    assert outcome.report is not None
    assert [u.compensator for u in outcome.report.compensated] == ["void_booking",
                                                                   "cancel_flight"]
    assert_no_live_effects(world)


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = rac_main(list(argv))
    return code, capsys.readouterr().out


def test_rac_pairs_lists_and_approves(resolver_engine: Make, world: TravelWorld, log_url: str,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    model = ScriptedModel([RIGHT_PAIR, RIGHT_MAPPING])
    engine = resolver_engine(LLMResolver(model, policy="approve"), store=log_url)
    report = trip_that_fails(engine, world)
    assert [u.compensator for u in report.held] == ["void_booking"]
    engine.store.close()

    code, out = _cli(capsys, "pairs", "--store", log_url, "--json")
    assert code == 0
    listed = {(p["tool"], p["compensator"]): p for p in json.loads(out)}
    assert {k: (p["source"], p["status"]) for k, p in listed.items()} == {
        ("book_hotel", "void_booking"): ("llm", "proposed"),
        ("book_flight", "cancel_flight"): ("code", "declared"),
        ("book_car", "cancel_car"): ("code", "declared")}
    proposed = listed[("book_hotel", "void_booking")]
    assert proposed["args"] == {"reference": "result.booking_id"}
    code, out = _cli(capsys, "pairs", "--store", log_url)
    assert code == 0 and proposed["key"] in out.splitlines()[2]  # proposed pairs come first

    # a declared pair is not the operator's to approve; an unknown key is named
    assert _cli(capsys, "pairs", "approve", listed[("book_flight", "cancel_flight")]["key"],
                "--store", log_url)[0] == 2
    assert _cli(capsys, "pairs", "approve", "nope", "--store", log_url)[0] == 2

    code, out = _cli(capsys, "pairs", "--store", log_url, "approve", proposed["key"],
                     "--by", "ops@example.com")
    assert code == 0 and "approved (was proposed)" in out
    # a fresh process, with no model, runs the held compensation
    engine = resolver_engine(LLMResolver(None), store=log_url)
    outcome = engine.resume(report.run_id)
    assert outcome.status == rac.RunStatus.COMPENSATED
    assert_no_live_effects(world)


def test_a_rejected_pair_is_never_used(resolver_engine: Make, world: TravelWorld,
                                       log_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    engine = resolver_engine(LLMResolver(ScriptedModel([RIGHT_PAIR]), policy="approve"),
                             store=log_url)
    with engine.run() as run:
        run.call("book_hotel", guest="ann", city="Paris", nights=2)
        run.finish()
    engine.store.close()
    [key] = [p["key"] for p in json.loads(_cli(capsys, "pairs", "--store", log_url,
                                               "--json")[1]) if p["source"] == "llm"]
    assert _cli(capsys, "pairs", "reject", key, "--store", log_url, "--json")[0] == 0
    engine = resolver_engine(LLMResolver(ScriptedModel([])), store=log_url)
    with engine.run() as run:
        run.call("book_hotel", guest="bob", city="Rome", nights=1)
        report = run.rollback()
    assert [u.tool for u in report.not_undoable] == ["book_hotel"]


def test_rac_pairs_on_an_empty_log(capsys: Any) -> None:
    assert rac_main(["pairs", "--store", "memory://"]) == 0
    assert "no compensation pairs" in capsys.readouterr().out


APP = '''
import rac
from rac.testing import TravelWorld

world = TravelWorld()
engine = rac.RAC(compensations={"book_flight": "cancel_flight"}, tools=world.tools(),
                 store="memory://")
engine.register_mcp_tools([{"name": "book_hotel",
                            "_meta": {"rac": {"compensation": "cancel_hotel"}}},
                           {"name": "cancel_hotel"}], server="travel")
'''


def test_rac_pairs_lists_the_apps_declared_pairs_with_their_source(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "pairs_app.py").write_text(APP)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    url = f"sqlite:///{tmp_path / 'log.db'}"
    assert _cli(capsys, "pairs", "--app", "pairs_app:engine", "--store", url)[0] == 2
    assert not (tmp_path / "log.db").exists()  # a read command creates no log
    SQLiteStore(tmp_path / "log.db").close()
    code, out = _cli(capsys, "pairs", "--app", "pairs_app:engine", "--store", url, "--json")
    assert code == 0
    assert {(p["tool"], p["compensator"], p["source"], p["status"]) for p in json.loads(out)} == {
        ("book_flight", "cancel_flight", "code", "declared"),
        ("book_hotel", "cancel_hotel", "mcp:travel", "declared")}


def test_an_approval_lapses_when_the_compensator_changes(
        resolver_engine: Make, world: TravelWorld, log_url: str) -> None:
    """Issue #27: an approval stored for a compensator was applied after that compensator's
    schema changed. A recoverer that does not offer the original tool (it cannot hash it)
    still checks the compensator's own fingerprint, which the pair keeps."""
    from rac.resolver import pair_book
    from rac.resolver.book import decide_pair

    model = ScriptedModel([RIGHT_PAIR, RIGHT_MAPPING])
    engine = resolver_engine(LLMResolver(model, policy="approve"), store=log_url)
    assert [u.compensator for u in trip_that_fails(engine, world).held] == ["void_booking"]
    [pair] = [p for p in pair_book(engine.store).list_pairs() if p.source == "llm"]
    decide_pair(pair_book(engine.store), pair.key, "approve", by="dana")
    world.cancel_hotel(booking_id=world.live()[0]["booking_id"])  # settled by hand
    runs = []
    for guest in ("bob", "eve"):  # two processes book a hotel each, then die
        worker = resolver_engine(LLMResolver(None), store=log_url)
        run = worker.run()
        run.start()
        run.call("book_hotel", guest=guest, city="Paris", nights=1)
        runs.append(run.run_id)
        abandon_runs(worker)
    others = [t for t in world.tools() if t.__name__ != "book_hotel"]
    same = resolver_engine(LLMResolver(None), store=log_url, tools=[*others,
                                                                    void_booking(world)])
    [outcome] = same.recover([runs[0]])
    assert outcome.outcome == "compensated", outcome  # the approval holds as given
    # void_booking has changed since it was approved: it now takes a number
    changed = rac.Tool(
        "void_booking", call=lambda a: world.cancel_hotel(booking_id=str(a["reference"])),
        params={"type": "object", "properties": {"reference": {"type": "integer"}},
                "required": ["reference"]},
        description="Void a hotel booking, given its reference.")
    recoverer = resolver_engine(LLMResolver(None), store=log_url, tools=[*others, changed])
    [outcome] = recoverer.recover([runs[1]])
    assert outcome.outcome != "compensated" and outcome.report is not None, outcome
    assert [u.tool for u in outcome.report.left_live] == ["book_hotel"]
    assert [b["who"] for b in world.live()] == ["eve"]
