"""``rac demo --llm``: the trip whose hotel undo a model finds, offline with the scripted model;
the real-model path refuses clearly when it has no model or key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rac.cli.main import main as rac_main
from tests.mcp.demo_checks import assert_trip_undone


def test_demo_with_the_scripted_model_undoes_the_hotel_through_the_proposed_pair(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    url = f"sqlite:///{tmp_path / 'log.db'}"
    assert rac_main(["demo", "--llm", "scripted", "--store", url, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert_trip_undone(data, hotel_undo="release_room")
    assert data["records"][3]["args"] == {"reservation": data["records"][1]["result"]
                                          ["booking_id"]}
    [pair] = data["pairs"]
    assert (pair["tool"], pair["compensator"], pair["args"], pair["status"]) == (
        "book_hotel", "release_room", {"reservation": "result.booking_id"}, "auto")

    assert rac_main(["demo", "--llm", "scripted", "--store", url]) == 0
    text = capsys.readouterr().out
    assert "book_hotel HT-102 (via release_room)" in text and "release_room" in text

    # `rac show` names what an unreviewed (policy "auto") pair undid, until someone reviews it
    assert rac_main(["show", data["run_id"], "--store", url]) == 0
    text = capsys.readouterr().out
    assert "#2 book_hotel was undone by a model-proposed pair, not reviewed" in text
    assert rac_main(["show", data["run_id"], "--store", url, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [(u["seq"], u["compensator"]) for u in shown["unreviewed"]] == [(2, "release_room")]
    assert rac_main(["pairs", "approve", pair["key"], "--store", url, "--by", "dana"]) == 0
    capsys.readouterr()
    assert rac_main(["show", data["run_id"], "--store", url]) == 0
    assert "not reviewed" not in capsys.readouterr().out


@pytest.mark.parametrize(("env", "message"), [
    ({}, "--llm model needs RAC_MODEL"),
    ({"RAC_MODEL": "openai:gpt-4o-mini"}, "needs OPENAI_API_KEY"),
])
def test_demo_with_a_real_model_says_what_is_missing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        env: dict[str, str], message: str) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("RAC_MODEL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert rac_main(["demo", "--llm", "model", "--store", "memory://"]) == 2
    assert message in capsys.readouterr().err
