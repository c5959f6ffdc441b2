"""Issue 25, mistakes at declaration: a misspelt tool or parameter name, a lookup or
before-image that names the action itself or a tool that changes the world, and a declared
dependency cycle are refused with an exception that names what is wrong (and the name meant),
before anything runs."""

from __future__ import annotations

from typing import Any

import pytest

import rac
from rac.testing import TravelWorld


def send_mail(to: str) -> str:
    """Send an email (it cannot be unsent)."""
    return f"sent to {to}"


@pytest.mark.parametrize("decl", [
    {"irreversible": {"send_mial": "refuse"}},
    {"effects": {"send_mial": "idempotent"}},
    {"errors_before_effect": {"send_mial": (ValueError,)}},
    {"produces": {"send_mial": ["id"]}},
])
def test_a_misspelt_tool_name_is_refused_with_the_name_meant(world: TravelWorld,
                                                             decl: dict[str, Any]) -> None:
    """irreversible={"send_mial": "refuse"} left send_mail running freely (issue 25)."""
    with pytest.raises(rac.ConfigurationError,
                       match=r"\['send_mial'\]: no tool is called 'send_mial'; did you mean "
                             r"'send_mail'\?"):
        rac.RAC(tools=[*world.tools(), send_mail], store="memory://", **decl)


def test_a_misspelt_name_is_caught_when_the_run_gets_the_tool(world: TravelWorld) -> None:
    # the engine does not know send_mail yet; a run (an adapter's agent) gives it
    engine = rac.RAC(tools=world.tools(), store="memory://",
                     compensations={"book_flight": "cancel_flight"},
                     irreversible={"send_mial": "refuse"})
    with pytest.raises(rac.ConfigurationError, match="did you mean 'send_mail'"):
        with engine.run(tools=[send_mail]) as run:
            run.call("send_mail", to="ann")


def test_a_name_far_from_every_tool_may_be_a_tool_given_later(world: TravelWorld) -> None:
    engine = rac.RAC(tools=world.tools(), store="memory://",
                     compensations={"book_flight": "cancel_flight"},
                     irreversible={"send_mail": "refuse"})
    with engine.run() as run, pytest.raises(rac.CallRefused):
        run.call(send_mail, to="ann")  # given to this one call: refused as declared


def test_a_misspelt_lookup_subject_is_refused(world: TravelWorld) -> None:
    with pytest.raises(rac.ConfigurationError, match="did you mean 'book_flight'"):
        rac.RAC(tools=[*world.tools(), *world.lookup_tools()], store="memory://",
                read_only=["find_bookings"],
                lookups={"book_flihgt": rac.Lookup("find_bookings",
                                                   args={"who": "args.passenger"})})


def test_a_misspelt_parameter_says_which_one_was_meant(world: TravelWorld) -> None:
    with pytest.raises(rac.ConfigurationError,
                       match=r"compensations\['book_flight'\].args: 'cancel_flight' has no "
                             r"parameter 'bookng_id' \(did you mean 'booking_id'\?\)"):
        rac.RAC(tools=world.tools(), store="memory://",
                compensations={"book_flight": rac.Compensation(
                    "cancel_flight", args={"bookng_id": "result.booking_id"})})


@pytest.mark.parametrize("label", ["lookup", "before"])
def test_a_lookup_or_before_image_may_not_be_the_action_itself(label: str) -> None:
    read = (rac.Lookup("book_flight", args={"who": "args.passenger"}) if label == "lookup"
            else rac.BeforeImage("book_flight", args={"who": "args.passenger"}))
    with pytest.raises(rac.ConfigurationError,
                       match=rf"compensations\['book_flight'\].{label}.tool names "
                             r"'book_flight' itself"):
        rac.RAC(store="memory://", compensations={"book_flight": rac.Compensation(
            "cancel_flight", args={"booking_id": "result.booking_id"}, **{label: read})})
    with pytest.raises(rac.ConfigurationError, match=r"lookups\['book_flight'\].tool names"):
        rac.RAC(store="memory://", lookups={"book_flight": rac.Lookup("book_flight")})


@pytest.mark.parametrize("how", ["compensated", "irreversible", "effect"])
def test_a_lookup_may_not_name_a_tool_that_changes_the_world(world: TravelWorld,
                                                            how: str) -> None:
    """RAC calls a lookup outside the log: a lookup that books something would leave an
    effect no record holds."""
    decl: dict[str, Any] = {"compensations": {"book_flight": "cancel_flight",
                                              "book_car": "cancel_car"}}
    if how == "irreversible":
        decl["compensations"] = {"book_flight": "cancel_flight"}
        decl["irreversible"] = {"book_car": "run"}
    elif how == "effect":
        decl["compensations"] = {"book_flight": "cancel_flight"}
        decl["effects"] = {"book_car": "unsafe"}
    why = {"compensated": "it has a compensation", "irreversible": "it is declared irreversible",
           "effect": "its effect class is 'unsafe'"}[how]
    with pytest.raises(rac.ConfigurationError,
                       match=rf"lookups\['book_flight'\].tool: 'book_car' changes the world "
                             rf"\({why}\)"):
        rac.RAC(tools=world.tools(), store="memory://",
                lookups={"book_flight": rac.Lookup("book_car", args={"driver": "args.passenger",
                                                                    "city": "args.dest"})},
                **decl)


def test_a_declared_dependency_cycle_is_refused_before_the_call_runs(
        make_engine: Any, world: TravelWorld) -> None:
    """The flight declared it depends on the next record (#2), and the hotel (#2) that it
    depends on the flight: each waited for the other, and neither was ever undone."""
    engine = make_engine()

    def invoke(name: str, args: dict[str, Any]) -> Any:
        return getattr(world, name)(**args)

    with engine.run() as run:
        first = run.execute("book_flight", {"passenger": "ann", "origin": "SFO", "dest": "CDG"},
                            invoke, depends_on=[2])
        assert first.ok
        second = run.execute("book_hotel", {"guest": "ann", "city": "Paris", "nights": 1},
                             invoke, depends_on=[1])
        assert second.refused and isinstance(second.error, rac.CallRefused)
        assert "a record that depends on it: #2 -> #1 -> #2" in (second.message or "")
        assert [b["kind"] for b in world.live()] == ["flight"]  # the hotel never ran
        report = run.rollback()
    assert report.clean and world.live() == []
    hotel = [r for r in run.records() if r.tool == "book_hotel"][0]
    assert (hotel.status, hotel.happened) == (rac.RecordStatus.FAILED, "no")
