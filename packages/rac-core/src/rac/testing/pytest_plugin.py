"""RAC's pytest plugin: fixtures for testing your agent under RAC, and ``rac prove`` as one test
per injection point.

It is registered through the ``pytest11`` entry point of rac-core and is off unless used: it
adds fixtures (nothing autouse) and one marker, and imports nothing heavy until a fixture or a
proof is asked for. Install what the fixtures need with the core's ``testing`` extra.

Fixtures:

* ``rac_clock``: a :class:`rac.testing.VirtualClock` (backoff and leases cost no real time);
* ``rac_log``: the URL of a fresh SQLite log in the test's temporary folder;
* ``rac_engine``: a factory ``rac_engine(**kw) -> rac.RAC`` on ``rac_log`` and ``rac_clock``;
* ``rac_travel_world``: a :class:`rac.testing.TravelWorld` in a file (it outlives a process);
* ``rac_scripted_model``: ``rac_scripted_model("langgraph" | "crewai" | "llamaindex" |
  "semantic_kernel")`` gives that adapter's scripted model class (no network, no API key).

Proofs, one test per injection point::

    from rac.testing.pytest_plugin import proof_test

    test_trip_rollback = proof_test(book_trip, engine=engine, check=world.live,
                                    setup=world.reset)

Each point is a test named after it (``test_trip_rollback[timeout_after book_hotel#1]``); it
fails on a false clean and, unless ``allow_named=True``, on an effect left live that a
declaration could have undone.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from rac.engine import RAC
    from rac.testing.clock import VirtualClock
    from rac.testing.proof import PointResult, Prover
    from rac.testing.proof_points import Point
    from rac.testing.world import TravelWorld

#: adapter name -> (module, the scripted model's name in it)
SCRIPTED_MODELS = {
    "langgraph": ("rac_langgraph.testing", "ScriptedModel"),
    "crewai": ("rac_crewai.testing", "ScriptedLLM"),
    "llamaindex": ("rac_llamaindex.testing", "ScriptedModel"),
    "semantic_kernel": ("rac_semantic_kernel.testing", "ScriptedChatCompletion"),
}
_MARK = "rac_prove"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{_MARK}(prover, allow_named=False): run the test once "
                                       "per rac prove injection point (see proof_test)")


@pytest.fixture
def rac_clock() -> VirtualClock:
    """A virtual clock for RAC's backoff, leases and timeouts."""
    from rac.testing.clock import VirtualClock

    return VirtualClock()


@pytest.fixture
def rac_log(tmp_path: Path) -> str:
    """The URL of a fresh SQLite log in the test's temporary folder."""
    return f"sqlite:///{tmp_path / 'rac.db'}"


@pytest.fixture
def rac_engine(rac_log: str, rac_clock: VirtualClock) -> Iterator[Callable[..., RAC]]:
    """A factory of engines on ``rac_log`` and ``rac_clock``; keywords go to ``rac.RAC``.
    Their stores are closed when the test ends."""
    import rac

    made: list[RAC] = []

    def make(**kw: Any) -> RAC:
        kw.setdefault("store", rac_log)
        kw.setdefault("clock", rac_clock)
        kw.setdefault("load_entrypoints", False)
        engine = rac.RAC(**kw)
        made.append(engine)
        return engine

    yield make
    for engine in made:
        engine.store.close()


@pytest.fixture
def rac_travel_world(tmp_path: Path) -> Iterator[TravelWorld]:
    """A travel world (flights, hotels, cars, charges) in a file of the test's folder."""
    from rac.testing.world import TravelWorld

    world = TravelWorld(str(tmp_path / "world.db"))
    yield world
    world.close()


@pytest.fixture
def rac_scripted_model() -> Callable[[str], Any]:
    """``rac_scripted_model(adapter)``: the scripted model class of an installed adapter."""

    def get(adapter: str) -> Any:
        try:
            module, name = SCRIPTED_MODELS[adapter]
        except KeyError:
            raise ValueError(f"no scripted model for {adapter!r}: one of "
                             f"{sorted(SCRIPTED_MODELS)}") from None
        try:
            return getattr(importlib.import_module(module), name)
        except ImportError as e:
            dist = module.split(".")[0].replace("_", "-")
            pytest.skip(f"{adapter}'s scripted model needs {dist} installed ({e})")

    return get


class ProofCase:
    """One injection point of a proof, ready to run (the value of ``rac_proof_point``)."""

    def __init__(self, prover: Prover, point: Point, allow_named: bool) -> None:
        self.prover = prover
        self.point = point
        self.allow_named = allow_named

    def run(self) -> PointResult:
        """Run the scenario with the point injected and judge it."""
        return self.prover.run_point(self.point)

    def verify(self) -> PointResult:
        """Run the point; fail the test on a false clean, an error, or (unless allowed) an
        effect left live that a declaration could have undone."""
        result = self.run()
        if not result.ok or (result.gap and not self.allow_named):
            pytest.fail(result.explain(), pytrace=False)
        return result

    def __repr__(self) -> str:
        return self.point.name


class SkippedPoints:
    """The points a proof asked for and could not run (the value of ``rac_proof_point`` for
    the one test that says so)."""

    def __init__(self, reasons: list[str]) -> None:
        self.reasons = reasons

    def verify(self) -> None:
        """Fail: a point asked for and skipped proves nothing."""
        pytest.fail("skipped " + "; ".join(self.reasons), pytrace=False)

    def __repr__(self) -> str:
        return "skipped"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "rac_proof_point" not in metafunc.fixturenames:
        return
    mark = metafunc.definition.get_closest_marker(_MARK)
    if mark is None:
        raise pytest.UsageError(f"{metafunc.definition.nodeid} asks for rac_proof_point "
                                "without a rac_prove mark (use rac.testing.pytest_plugin."
                                "proof_test)")
    prover: Prover = mark.args[0] if mark.args else mark.kwargs["prover"]
    allow_named = bool(mark.kwargs.get("allow_named", False))
    points = prover.points()
    cases: list[Any] = [ProofCase(prover, p, allow_named) for p in points]
    names = [p.name for p in points]
    if prover.skipped:
        cases.append(SkippedPoints(list(prover.skipped)))
        names.append("skipped points")
    metafunc.parametrize("rac_proof_point", cases, ids=names)


def proof_test(scenario: Callable[..., Any] | str, *, allow_named: bool = False,
               **kw: Any) -> Callable[[ProofCase], None]:
    """A test function that pytest runs once per injection point of ``scenario`` (the
    keywords are :class:`rac.testing.proof.Prover`'s). Assign it to a ``test_`` name."""
    from rac.testing.proof import Prover

    prover = Prover(scenario, **kw)

    @pytest.mark.rac_prove(prover, allow_named=allow_named)
    def test_rollback(rac_proof_point: ProofCase | SkippedPoints) -> None:
        rac_proof_point.verify()

    return test_rollback


__all__ = ["ProofCase", "SCRIPTED_MODELS", "proof_test", "rac_clock", "rac_engine", "rac_log",
           "rac_scripted_model", "rac_travel_world"]
