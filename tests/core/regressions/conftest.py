"""Regression tests from a review of the core: the same travel world, on a real SQLite log."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import rac
from rac.stores.sqlite import SQLiteStore
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld, VirtualClock


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    s = SQLiteStore(tmp_path / "rac.db")
    yield s
    s.close()


@pytest.fixture
def make_engine(world: TravelWorld, store: SQLiteStore) -> Callable[..., rac.RAC]:
    def make(**kw: Any) -> rac.RAC:
        base: dict[str, Any] = dict(compensations=TRAVEL_COMPENSATIONS,
                                    read_only=TRAVEL_READ_ONLY, tools=world.tools(),
                                    store=store, clock=VirtualClock(), load_entrypoints=False)
        base.update(kw)
        return rac.RAC(**base)
    return make


class RollbackFinished:
    """A plugin whose ``done`` event is set when a rollback of the engine finishes."""

    def __init__(self) -> None:
        self.done = threading.Event()

    @rac.hookimpl
    def rac_rollback_finished(self, run_id: str, scope: str, report: rac.RecoveryReport) -> None:
        self.done.set()
