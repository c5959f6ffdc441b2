"""What ``enable_rac`` accepts and refuses, and what importing the adapter pulls in."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

import pytest
from semantic_kernel import Kernel
from semantic_kernel.functions import kernel_function

import rac
from rac.testing import TravelWorld
from rac_semantic_kernel import enable_rac, enabled_engine
from tests.adapters.semantic_kernel.support import FLIGHT, travel_kernel, trip_agent


def test_refuses_what_is_not_a_kernel() -> None:
    with pytest.raises(rac.ConfigurationError, match="semantic_kernel.Kernel.*got dict"):
        enable_rac({"plugins": []}, compensations={})


def test_refuses_an_engine_and_keywords_together(make_engine: Callable[..., rac.RAC]) -> None:
    with pytest.raises(rac.ConfigurationError, match=r"not both.*\['store'\]"):
        enable_rac(Kernel(), rac=make_engine(), store="memory://")


def test_refuses_an_engine_that_is_not_one() -> None:
    with pytest.raises(rac.ConfigurationError, match="rac= must be a rac.RAC engine, got str"):
        enable_rac(Kernel(), rac="sqlite:///x.db")  # type: ignore[arg-type]


def test_refuses_a_compensator_nobody_has(world: TravelWorld) -> None:
    engine = rac.RAC(compensations={"travel-book_flight": "travel-void_flight"},
                     store="memory://")
    with pytest.raises(rac.ConfigurationError,
                       match=r"compensations\['travel-book_flight'\]\.tool: .*plugin 'travel' "
                             r"of this kernel has no function 'void_flight'"):
        enable_rac(travel_kernel(world), rac=engine)


def test_refuses_an_alternative_nobody_has(world: TravelWorld) -> None:
    engine = rac.RAC(alternatives={"book_car": ["hire_bike"]}, store="memory://")
    with pytest.raises(rac.ConfigurationError,
                       match=r"alternatives\['book_car'\]: 'hire_bike' is neither a function "
                             r"of this kernel"):
        enable_rac(travel_kernel(world), rac=engine)


class Ferry:
    @kernel_function(description="Book a ferry.")
    def book_flight(self, passenger: str) -> str:  # same function name as travel's
        return "ferry"

    @kernel_function(description="Cancel a ferry.")
    def cancel_flight(self, booking_id: str) -> str:
        return "cancelled"


def test_an_ambiguous_bare_name_is_refused_with_the_candidates(world: TravelWorld) -> None:
    kernel = travel_kernel(world)
    kernel.add_plugin(Ferry(), plugin_name="ferry")
    engine = rac.RAC(compensations={"book_flight": "cancel_flight"}, store="memory://")
    with pytest.raises(rac.ConfigurationError,
                       match=r"'book_flight' is ambiguous.*\['ferry-book_flight', "
                             r"'travel-book_flight'\].*plugin-function"):
        enable_rac(kernel, rac=engine)


def test_a_compensator_may_be_an_engine_tool(world: TravelWorld) -> None:
    def void_flight(booking_id: str) -> dict[str, str]:
        return {"voided": booking_id}

    engine = rac.RAC(compensations={"travel-book_flight": "void_flight"}, store="memory://")
    engine.register_tools([void_flight])
    enable_rac(travel_kernel(world), rac=engine)
    assert engine.registry.pairs["travel-book_flight"].tool == "void_flight"


async def test_enabling_twice_is_harmless(world: TravelWorld,
                                          make_engine: Callable[..., rac.RAC]) -> None:
    engine = make_engine()
    agent, _ = trip_agent(travel_kernel(world), [[FLIGHT], "Booked."])
    enable_rac(agent, rac=engine)
    enable_rac(agent, rac=engine)
    enable_rac(agent.kernel, rac=engine)
    assert len(agent.kernel.auto_function_invocation_filters) == 1
    assert len(agent.kernel.function_invocation_filters) == 1
    assert enabled_engine(agent) is engine

    await agent.get_response(messages="Fly.")

    (info,) = engine.store.list_runs()
    assert len(engine.store.get_records(info.run_id)) == 1  # one record: not run twice


def test_enabling_with_another_engine_is_refused(world: TravelWorld,
                                                 make_engine: Callable[..., rac.RAC]) -> None:
    kernel = enable_rac(travel_kernel(world), rac=make_engine())
    with pytest.raises(rac.ConfigurationError, match="already has RAC enabled with another"):
        enable_rac(kernel, rac=make_engine())


def test_keywords_build_an_engine(world: TravelWorld) -> None:
    kernel = enable_rac(travel_kernel(world), compensations={"book_flight": "cancel_flight"},
                        store="memory://")
    engine = enabled_engine(kernel)
    assert engine is not None
    assert engine.registry.pairs["travel-book_flight"].tool == "travel-cancel_flight"


def test_importing_the_adapter_pulls_in_no_other_framework() -> None:
    code = ("import sys, rac_semantic_kernel, rac_semantic_kernel.testing\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
            "('langchain', 'langchain_core', 'langgraph', 'crewai', 'llama_index'))\n"
            "print(bad)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"
