"""The ``examples/prove_*.py`` scripts prove a real agent of each framework (scripted models,
no network): every point ends clean, completed, or named where a compensation was made to
fail; none is a false clean."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from rac.testing.proof import CLEAN, FALSE_CLEAN, prove

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
            request: pytest.FixtureRequest) -> Iterator[ModuleType]:
    monkeypatch.setenv("RAC_PROVE_EXAMPLE_DIR", str(tmp_path))
    monkeypatch.syspath_prepend(str(EXAMPLES))
    name = f"prove_{request.param}"
    sys.modules.pop(name, None)
    module = importlib.import_module(name)
    yield module
    module.world.close()
    sys.modules.pop(name, None)


@pytest.mark.parametrize("example", ["langgraph", "crewai", "llamaindex", "semantic_kernel"],
                         indirect=True)
def test_each_framework_example_proves_clean(example: ModuleType,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert example.main() == 0
    table = capsys.readouterr().out
    assert "FALSE CLEAN" not in table and "No false all-clear" in table
    assert "fail book_hotel#1" in table or "fail travel-book_hotel#1" in table


@pytest.mark.parametrize("example", ["tool_loop"], indirect=True)
def test_the_tool_loop_example_survives_a_crash_after_the_effect(example: ModuleType) -> None:
    proof = prove(example.trip, engine="prove_tool_loop:engine", check=example.live,
                  setup="prove_tool_loop:reset", crash=True,
                  points=["crash book_hotel#1 after_effect", "timeout_after book_hotel"])
    assert [(r.point.name, r.verdict) for r in proof.results] == [
        ("timeout_after book_hotel#1", CLEAN), ("crash book_hotel#1 after_effect", CLEAN)]
    assert not [r for r in proof.results if r.verdict == FALSE_CLEAN]
