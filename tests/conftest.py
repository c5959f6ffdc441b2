"""Shared fixtures: a travel world, a virtual clock and an engine wired to both."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

import rac
from rac.testing import TRAVEL_COMPENSATIONS, TRAVEL_READ_ONLY, TravelWorld, VirtualClock


@pytest.fixture
def world() -> Iterator[TravelWorld]:
    w = TravelWorld()
    yield w
    w.close()


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock()


@pytest.fixture
def make_engine(world: TravelWorld, clock: VirtualClock) -> Callable[..., rac.RAC]:
    """An engine over the travel world; keywords override the defaults."""

    def make(**kw: Any) -> rac.RAC:
        kw.setdefault("compensations", TRAVEL_COMPENSATIONS)
        kw.setdefault("read_only", TRAVEL_READ_ONLY)
        kw.setdefault("tools", world.tools())
        kw.setdefault("store", "memory://")
        kw.setdefault("clock", clock)
        kw.setdefault("retry", rac.RetryPolicy(max_attempts=3, initial_delay=0.5, jitter=0))
        kw.setdefault("compensation_retry",
                      rac.RetryPolicy(max_attempts=3, initial_delay=1.0, jitter=0))
        return rac.RAC(**kw)

    return make


@pytest.fixture
def engine(make_engine: Callable[..., rac.RAC]) -> rac.RAC:
    return make_engine()


TRIP = [
    ("book_flight", {"passenger": "ann", "origin": "SFO", "dest": "CDG"}),
    ("book_hotel", {"guest": "ann", "city": "Paris", "nights": 2}),
    ("book_car", {"driver": "ann", "city": "Paris"}),
]


@pytest.fixture
def trip() -> list[tuple[str, dict[str, Any]]]:
    return [(t, dict(a)) for t, a in TRIP]


@pytest.fixture(autouse=True)
def _structlog_config_restored() -> Iterator[None]:
    """Each test leaves structlog configured as it found it (benchmark entry points configure
    it process-wide; RAC decides per run whether info events go anywhere)."""
    import structlog

    saved = structlog.get_config()
    configured = structlog.is_configured()
    yield
    if configured:
        structlog.configure(**saved)
    else:
        structlog.reset_defaults()


@pytest.fixture(autouse=True)
def _every_store_obeys_the_lifecycle(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every store an engine opens in the suite is wrapped in rac.testing.LifecycleStore, so any
    write that breaks the lifecycle tables fails the test that made it."""
    import rac.engine
    from rac.stores import open_store
    from rac.testing import LifecycleStore

    def checked(store: Any = None) -> Any:
        opened = open_store(store)
        return opened if isinstance(opened, LifecycleStore) else LifecycleStore(opened)

    monkeypatch.setattr(rac.engine, "open_store", checked)
