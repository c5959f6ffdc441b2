"""The model resolver with a scripted model: right answers are used and remembered; every
wrong one is "no proposal", named in the log, and never breaks a call or a rollback."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import pytest

import rac
from rac.resolver import LLMResolver, ScriptedModel, pair_book
from rac.resolver.scripted import Slow
from rac.testing import TravelWorld, VirtualClock, assert_no_live_effects

from .conftest import RIGHT_MAPPING, RIGHT_PAIR, trip_that_fails

Make = Callable[..., rac.RAC]


def undone_on_a_models_word(report: Any) -> bool:
    """Everything undone, through a pair policy="auto" put in use that nobody reviewed: the
    report names it and is not clean on its account (issue #27)."""
    return (not report.left_live and not report.in_flight and bool(report.unreviewed)
            and not report.clean)


def test_a_right_proposal_is_used_at_once_and_asked_once(resolver_engine: Make,
                                                        world: TravelWorld) -> None:
    model = ScriptedModel([RIGHT_PAIR, RIGHT_MAPPING])
    engine = resolver_engine(LLMResolver(model, policy="auto"))
    report = trip_that_fails(engine, world)
    assert [(u.tool, u.compensator) for u in report.compensated] == [
        ("book_hotel", "void_booking"), ("book_flight", "cancel_flight")]
    assert undone_on_a_models_word(report)
    assert_no_live_effects(world)
    # the model saw the tool, the candidates and, for the mapping, the call's own result
    assert "void_booking" in model.prompts[0] and "Void a hotel booking" in model.prompts[0]
    assert '"booking_id": "HT-' in model.prompts[1]
    # a second trip asks nothing: the pair and its mapping are remembered
    report = trip_that_fails(engine, world)
    assert undone_on_a_models_word(report) and len(model.prompts) == 2
    assert_no_live_effects(world)
    [pair] = [p for p in pair_book(engine.store).list_pairs() if p.source == "llm"]
    assert (pair.tool, pair.compensator, pair.status) == ("book_hotel", "void_booking",
                                                          "auto")
    assert pair.args == {"reference": "result.booking_id"}


def test_a_langchain_chat_model_is_used_through_invoke(resolver_engine: Make,
                                                       world: TravelWorld) -> None:
    fake = pytest.importorskip("langchain_core.language_models.fake_chat_models")
    model = fake.FakeListChatModel(responses=[RIGHT_PAIR, f"```json\n{RIGHT_MAPPING}\n```"])
    engine = resolver_engine(LLMResolver(model, policy="auto"))
    report = trip_that_fails(engine, world)
    assert [u.compensator for u in report.compensated] == ["void_booking", "cancel_flight"]
    assert_no_live_effects(world)


@pytest.mark.parametrize(("reply", "reason"), [
    (json.dumps({"compensator": "refund_everything"}), "not one of the tools"),
    (json.dumps({"compensator": "book_hotel"}), "its own compensator"),
    (json.dumps({"compensator": "get_weather"}), "not one of the tools"),  # read-only
    ("Sure! The compensator is void_booking.", "not JSON"),
    ('{"compensator": "void_booking"', "not JSON"),
    (json.dumps(["void_booking"]), "not an object"),
    (json.dumps({"tool": "void_booking"}), "no field 'compensator'"),
    (RuntimeError("rate limited"), "raised RuntimeError: rate limited"),
])
def test_a_wrong_pair_is_no_proposal_and_the_call_goes_on(
        resolver_engine: Make, world: TravelWorld, caplog: pytest.LogCaptureFixture,
        reply: Any, reason: str) -> None:
    model = ScriptedModel([reply])
    engine = resolver_engine(LLMResolver(model, policy="auto"))
    with caplog.at_level(logging.WARNING, logger="rac"):
        report = trip_that_fails(engine, world)
    assert [u.tool for u in report.not_undoable] == ["book_hotel"]
    assert [u.tool for u in report.compensated] == ["book_flight"]
    assert not report.clean  # the hotel is named as left live, never reported undone
    assert [b["kind"] for b in world.live()] == ["hotel"]
    assert any("rac.pair_no_proposal" in r.getMessage() and reason in r.getMessage()
               for r in caplog.records)
    assert not [p for p in pair_book(engine.store).list_pairs() if p.source == "llm"]


@pytest.mark.parametrize(("mapping", "reason"), [
    ({"booking_id": "result.booking_id"}, "has no parameter(s) ['booking_id']"),
    ({"reference": "result.reservation_code"}, "has no field 'reservation_code'"),
    ({"reference": "result.amount"}, "takes 'string'"),
    ({}, "required parameter(s) ['reference']"),
    ({"reference": "output.booking_id"}, "must start with 'result' or 'args'"),
])
def test_a_wrong_mapping_is_refused_and_the_rollback_goes_on(
        resolver_engine: Make, world: TravelWorld, caplog: pytest.LogCaptureFixture,
        mapping: dict[str, str], reason: str) -> None:
    model = ScriptedModel([RIGHT_PAIR, json.dumps({"args": mapping})])
    engine = resolver_engine(LLMResolver(model, policy="auto"))
    with caplog.at_level(logging.WARNING, logger="rac"):
        report = trip_that_fails(engine, world)
    [failed] = report.compensation_failed
    assert (failed.tool, failed.compensator) == ("book_hotel", "void_booking")
    assert "the model's mapping was refused" in (failed.error or "") and reason in failed.error
    assert [u.tool for u in report.compensated] == ["book_flight"]  # the rollback went on
    assert report.status == rac.RunStatus.NEEDS_ATTENTION
    assert [b["kind"] for b in world.live()] == ["hotel"]
    assert any("rac.pair_no_proposal" in r.getMessage() for r in caplog.records)


def test_a_model_that_times_out_is_no_proposal_without_a_real_wait(
        resolver_engine: Make, world: TravelWorld, clock: VirtualClock,
        caplog: pytest.LogCaptureFixture) -> None:
    model = ScriptedModel([Slow(RIGHT_PAIR, 45.0)], clock=clock)
    engine = resolver_engine(LLMResolver(model, policy="auto", timeout=30.0))
    with caplog.at_level(logging.WARNING, logger="rac"):
        report = trip_that_fails(engine, world)
    assert [u.tool for u in report.not_undoable] == ["book_hotel"]
    assert any("answered after 45s, over the timeout of 30s" in r.getMessage()
               for r in caplog.records)
    assert clock.sleeps == [45.0]  # the only time that passed was the model's, virtual


def test_a_garbage_reply_type_is_no_proposal(resolver_engine: Make, world: TravelWorld) -> None:
    engine = resolver_engine(LLMResolver(ScriptedModel([lambda p: 42]), policy="auto"))  # type: ignore[list-item, return-value]
    report = trip_that_fails(engine, world)
    assert [u.tool for u in report.not_undoable] == ["book_hotel"]


def test_a_proposal_waits_for_approval_then_is_used(resolver_engine: Make,
                                                    world: TravelWorld) -> None:
    model = ScriptedModel([RIGHT_PAIR, RIGHT_MAPPING])
    engine = resolver_engine(LLMResolver(model))  # policy "approve" is the default
    report = trip_that_fails(engine, world)
    # the hotel's compensation is held, named, and the booking is still live
    assert [(u.tool, u.compensator) for u in report.held] == [("book_hotel", "void_booking")]
    assert report.status == rac.RunStatus.NEEDS_ATTENTION
    assert [b["kind"] for b in world.live()] == ["hotel"]
    [pair] = [p for p in pair_book(engine.store).list_pairs() if p.source == "llm"]
    assert (pair.status, pair.args) == ("proposed", {"reference": "result.booking_id"})
    # an operator approves it (what `rac pairs approve` does); the held compensation runs
    pair.status = "approved"
    pair_book(engine.store).put_pair(pair)
    outcome = engine.resume(report.run_id)
    assert outcome.status == rac.RunStatus.COMPENSATED
    assert_no_live_effects(world)
    assert model.left == 0 and len(model.prompts) == 2


def test_recorded_proposals_are_never_used(resolver_engine: Make, world: TravelWorld) -> None:
    engine = resolver_engine(LLMResolver(ScriptedModel([RIGHT_PAIR]), policy="record"))
    report = trip_that_fails(engine, world)
    assert [u.tool for u in report.not_undoable] == ["book_hotel"]
    [pair] = [p for p in pair_book(engine.store).list_pairs() if p.source == "llm"]
    assert pair.status == "recorded"


def test_declared_pairs_are_not_asked_about(resolver_engine: Make, world: TravelWorld) -> None:
    model = ScriptedModel([])
    engine = resolver_engine(LLMResolver(model, policy="auto"),
                             compensations={"book_flight": "cancel_flight", "book_car": "cancel_car",
                                            "book_hotel": "cancel_hotel"})
    report = trip_that_fails(engine, world)
    assert report.clean and model.prompts == []
    declared = {(p.tool, p.source, p.status) for p in pair_book(engine.store).list_pairs()}
    assert declared == {(t, "code", "declared") for t in ("book_flight", "book_hotel", "book_car")}


def test_a_declared_pair_gets_a_mapping_from_the_model(resolver_engine: Make,
                                                       world: TravelWorld) -> None:
    model = ScriptedModel([RIGHT_MAPPING])
    engine = resolver_engine(LLMResolver(model, policy="auto"),
                             compensations={"book_flight": "cancel_flight", "book_car": "cancel_car",
                                            "book_hotel": "void_booking"})
    report = trip_that_fails(engine, world)
    assert [u.compensator for u in report.compensated] == ["void_booking", "cancel_flight"]
    assert_no_live_effects(world)
    [pair] = [p for p in pair_book(engine.store).list_pairs()
              if p.tool == "book_hotel"]
    assert (pair.source, pair.args) == ("llm", {"reference": "result.booking_id"})


def test_bad_settings_are_refused() -> None:
    with pytest.raises(rac.ConfigurationError, match="policy must be one of"):
        LLMResolver(ScriptedModel(), policy="yolo")  # type: ignore[arg-type]
    with pytest.raises(rac.ConfigurationError, match="timeout must be a positive"):
        LLMResolver(ScriptedModel(), timeout=0)
    with pytest.raises(TypeError, match="got int"):
        LLMResolver(42)  # type: ignore[arg-type]


def test_a_store_without_pairs_remembers_them_in_the_process(
        resolver_engine: Make, world: TravelWorld, caplog: pytest.LogCaptureFixture) -> None:
    class LogOnly(rac.MemoryStore):
        capabilities: frozenset[str] = frozenset()  # a third-party store: no pairs

    model = ScriptedModel([RIGHT_PAIR, RIGHT_MAPPING])
    engine = resolver_engine(LLMResolver(model, policy="auto"), store=LogOnly())
    with caplog.at_level(logging.WARNING, logger="rac"):
        # undone through the model's pair kept in the process, and named as not reviewed
        assert undone_on_a_models_word(trip_that_fails(engine, world))
        assert undone_on_a_models_word(trip_that_fails(engine, world))
    assert model.left == 0 and len(model.prompts) == 2
    assert sum("rac.pairs_not_durable" in r.getMessage() for r in caplog.records) == 1
    assert_no_live_effects(world)


@pytest.mark.parametrize(("reply", "reason"), [
    (TimeoutError("read timed out"), "the model raised TimeoutError: read timed out"),
    ("I would map reference to the booking id.", "not JSON"),
    (json.dumps({"args": {"reference": "result.booking_id"}, "x": 1})[:-9], "not JSON"),
])
def test_a_model_failing_at_rollback_leaves_a_named_dead_letter(
        resolver_engine: Make, world: TravelWorld, reply: Any, reason: str) -> None:
    engine = resolver_engine(LLMResolver(ScriptedModel([RIGHT_PAIR, reply]), policy="auto"))
    report = trip_that_fails(engine, world)
    [failed] = report.compensation_failed
    assert reason in (failed.error or "")
    assert [u.tool for u in report.compensated] == ["book_flight"]
    assert [b["kind"] for b in world.live()] == ["hotel"]


def test_a_model_timing_out_at_rollback_is_a_named_dead_letter(
        resolver_engine: Make, world: TravelWorld, clock: VirtualClock) -> None:
    model = ScriptedModel([RIGHT_PAIR, Slow(RIGHT_MAPPING, 31.0)], clock=clock)
    engine = resolver_engine(LLMResolver(model, policy="auto", timeout=30.0))
    report = trip_that_fails(engine, world)
    [failed] = report.compensation_failed
    assert "answered after 31s, over the timeout of 30s" in (failed.error or "")
    assert [b["kind"] for b in world.live()] == ["hotel"]


async def test_the_resolver_works_in_an_async_run(resolver_engine: Make,
                                                  world: TravelWorld) -> None:
    engine = resolver_engine(LLMResolver(ScriptedModel([RIGHT_PAIR, RIGHT_MAPPING]),
                                         policy="auto"))
    async with engine.run() as run:
        await run.acall("book_hotel", guest="ann", city="Paris", nights=2)
        report = await run.arollback()
    assert [u.compensator for u in report.compensated] == ["void_booking"]
    assert_no_live_effects(world)


def test_secrets_in_the_call_never_reach_the_model(resolver_engine: Make,
                                                   world: TravelWorld) -> None:
    spa = rac.Tool("book_hotel_spa", call=lambda a: world.book_hotel(guest=a["guest"], city="Spa",
                                                               nights=1),
                   params=["guest", "api_key"], required=["guest", "api_key"],
                   description="Book a spa day at the hotel with the partner's API key.")
    model = ScriptedModel([RIGHT_PAIR, RIGHT_MAPPING])
    engine = resolver_engine(LLMResolver(model, policy="auto"))
    engine.register_tools([spa])
    with engine.run() as run:
        run.call("book_hotel_spa", guest="ann", api_key="sk-live-0123456789abcdef")
        report = run.rollback()
    assert [u.compensator for u in report.compensated] == ["void_booking"]
    assert_no_live_effects(world)
    assert len(model.prompts) == 2 and '"api_key"' in model.prompts[1]
    assert not any("sk-live-0123456789abcdef" in p for p in model.prompts)


def delete_account(world: TravelWorld) -> rac.Tool:
    """A destructive tool with nothing to do with hotels."""
    return rac.Tool("delete_account", call=lambda a: {"deleted": a["account_id"]},
                    params=["account_id"], required=["account_id"],
                    description="Delete a customer's account and everything in it.")


@pytest.mark.parametrize("policy", ["auto", "approve"])
@pytest.mark.parametrize(("proposed", "reason"), [
    ("book_car", "itself an action with a declared undo (cancel_car)"),
    ("delete_account", "destroys something other than the effect of 'book_hotel'"),
])
def test_an_action_or_a_destructive_tool_is_never_an_undo(
        resolver_engine: Make, world: TravelWorld, caplog: pytest.LogCaptureFixture,
        policy: Any, proposed: str, reason: str) -> None:
    """Issue #27: a model naming book_car (an action with an undo) or delete_account as the
    undo of book_hotel passed every check; RAC ran it in the rollback and said compensated."""
    model = ScriptedModel([json.dumps({"compensator": proposed})])
    engine = resolver_engine(LLMResolver(model, policy=policy),
                             tools=[*world.tools(), delete_account(world)])
    with caplog.at_level(logging.WARNING, logger="rac"):
        report = trip_that_fails(engine, world)
    assert [u.tool for u in report.not_undoable] == ["book_hotel"] and not report.clean
    assert [b["kind"] for b in world.live()] == ["hotel"]
    assert any("rac.pair_no_proposal" in r.getMessage() and reason in r.getMessage()
               for r in caplog.records)
    assert not [p for p in pair_book(engine.store).list_pairs() if p.source == "llm"]
    # the model was not even offered the tools no undo can be
    assert '"book_car"' not in model.prompts[0] and '"delete_account"' not in model.prompts[0]


@pytest.mark.parametrize(("name", "description", "reason"), [
    ("refund_payment", "Refund a card payment.", "nothing of ['hotel']"),
    ("notify_guest", "Tell a hotel guest their booking changed.", "no undoing verb"),
])
def test_under_auto_an_undo_must_read_as_this_calls_undo(
        resolver_engine: Make, world: TravelWorld, caplog: pytest.LogCaptureFixture,
        name: str, description: str, reason: str) -> None:
    other = rac.Tool(name, call=lambda a: {"ok": True}, params=["reference"],
                     required=["reference"], description=description)
    model = ScriptedModel([json.dumps({"compensator": name})])
    engine = resolver_engine(LLMResolver(model, policy="auto"), tools=[*world.tools(), other])
    with caplog.at_level(logging.WARNING, logger="rac"):
        report = trip_that_fails(engine, world)
    assert [u.tool for u in report.not_undoable] == ["book_hotel"]
    assert any(reason in r.getMessage() for r in caplog.records)


def test_an_auto_pair_is_used_named_as_unreviewed_and_open_to_a_verdict(
        resolver_engine: Make, world: TravelWorld, caplog: pytest.LogCaptureFixture) -> None:
    from rac.resolver.book import decide_pair

    engine = resolver_engine(LLMResolver(ScriptedModel([RIGHT_PAIR, RIGHT_MAPPING]),
                                         policy="auto"))
    with caplog.at_level(logging.WARNING, logger="rac"):
        report = trip_that_fails(engine, world)
    assert [u.compensator for u in report.compensated] == ["void_booking", "cancel_flight"]
    # undone, but on a model's word alone: the report is not clean, and says why (issue #27)
    assert [u.compensator for u in report.unreviewed] == ["void_booking"]
    assert not report.clean
    text = report.render()
    assert "nobody reviewed" in text and "void_booking" in text
    assert "The world is back to how it was" not in text
    unreviewed = [r.getMessage() for r in caplog.records
                  if "rac.pair_unreviewed" in r.getMessage()]
    assert len(unreviewed) == 1 and "not reviewed" in unreviewed[0]
    [pair] = [p for p in pair_book(engine.store).list_pairs() if p.source == "llm"]
    decided, previous = decide_pair(pair_book(engine.store), pair.key, "approve", by="dana")
    assert (previous, decided.status) == ("auto", "approved")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="rac"):
        assert trip_that_fails(engine, world).clean
    assert not any("rac.pair_unreviewed" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("policy", ["auto", "approve"])
def test_a_mapping_that_reads_a_secret_is_refused(resolver_engine: Make, world: TravelWorld,
                                                  policy: Any) -> None:
    """Issue #27: a mapping reading args.api_key into a plainly named parameter stored the
    secret in clear, and `rac show` printed it."""
    spa = rac.Tool("book_hotel_spa", call=lambda a: world.book_hotel(guest=a["guest"], city="Spa",
                                                               nights=1),
                   params=["guest", "api_key"], required=["guest", "api_key"],
                   description="Book a spa day at the hotel with the partner's API key.")
    engine = resolver_engine(LLMResolver(ScriptedModel(
        [RIGHT_PAIR, json.dumps({"args": {"reference": "args.api_key"}})]), policy=policy))
    engine.register_tools([spa])
    with engine.run() as run:
        run.call("book_hotel_spa", guest="ann", api_key="sk-live-0123456789abcdef")
        report = run.rollback()
    [failed] = report.compensation_failed
    assert "reads 'api_key'" in (failed.error or "") and "a secret" in (failed.error or "")
    records = engine.store.get_records(run.run_id)
    assert "sk-live-0123456789abcdef" not in repr([r.to_dict() for r in records])
    assert not any(p.args for p in pair_book(engine.store).list_pairs() if p.source == "llm")
