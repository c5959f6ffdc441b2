"""What the model reads after a failure carries no file-system paths and no advice to the
developer ("declare it, e.g. Compensation(...)", "register it with rac.RAC(tools=[...])"):
those stay in the log (the records' errors, which ``rac show`` prints) for the operator.
Checked on real runs, on the text the agent receives (``outcome.message``, the kit's
``failure_text``) and on the records."""

from __future__ import annotations

from typing import Any

import pytest

import rac
from rac.adapters import failure_text
from rac.report import for_model

#: What advice to a developer looks like in RAC's texts.
ADVICE = ("declare it", "declare them", "register it", "give it to the agent", "rac.RAC(",
          "Compensation(", "Lookup(", "tools=[")


def told_nothing_for_the_developer(text: str) -> None:
    for piece in ADVICE:
        assert piece not in text, f"{piece!r} reached the model: {text}"
    assert "/home/" not in text and "/srv/" not in text, text


def engine(**kw: Any) -> rac.RAC:
    kw.setdefault("store", "memory://")
    return rac.RAC(load_entrypoints=False, **kw)


def call(run: rac.Run, name: str, fn: Any, **args: Any) -> rac.CallOutcome:
    """A call the way an adapter makes it (``run.execute`` with the framework's invoke)."""
    return run.execute(name, args, lambda n, a: fn(**a) if n == name else run.tool(n).invoke(a))  # type: ignore[union-attr]


def test_an_undo_whose_arguments_cannot_be_mapped_is_named_without_the_advice() -> None:
    def book_flight(passenger: str) -> dict[str, Any]:
        return {"flight": "FL-7"}  # no booking_id: cancel_flight's argument cannot be mapped

    def cancel_flight(booking_id: str) -> dict[str, Any]:
        return {"cancelled": True}

    def book_car(driver: str) -> dict[str, Any]:
        raise rac.PermanentError("no cars left")

    eng = engine(tools=[book_flight, cancel_flight, book_car],
                 compensations={"book_flight": "cancel_flight", "book_car": "cancel_flight"})
    with eng.run() as run:
        assert call(run, "book_flight", book_flight, passenger="ann").ok
        failed = call(run, "book_car", book_car, driver="ann")
    told = failure_text(failed)
    assert "book_flight FL-7 (undo via cancel_flight failed: cannot map argument 'booking_id' of " \
           "cancel_flight)" in told, told
    told_nothing_for_the_developer(told)
    [flight] = [r for r in run.records() if r.tool == "book_flight"]
    assert "declare it, e.g. Compensation(tool='cancel_flight'" in (flight.error or "")


def test_a_compensator_the_run_cannot_call_is_named_without_the_advice() -> None:
    def book_flight(passenger: str) -> dict[str, Any]:
        return {"booking_id": "FL-7"}

    def book_car(driver: str) -> dict[str, Any]:
        raise rac.PermanentError("no cars left")

    # The adapter offers the agent's tools, and the compensator is not among them.
    eng = engine(compensations={"book_flight": "cancel_flight"})
    with eng.run() as run:
        assert call(run, "book_flight", book_flight, passenger="ann").ok
        failed = call(run, "book_car", book_car, driver="ann")
    told = failure_text(failed)
    assert "compensating tool 'cancel_flight' is not available to this run)" in told, told
    told_nothing_for_the_developer(told)
    assert "register it" in (run.records()[0].error or "")


def test_paths_in_a_tools_error_are_not_shown_to_the_model() -> None:
    def book_flight(passenger: str) -> dict[str, Any]:
        return {"booking_id": "FL-7"}

    def cancel_flight(booking_id: str) -> dict[str, Any]:
        raise PermissionError(13, "Permission denied", "/srv/airline/ledger.db")

    def book_car(driver: str) -> dict[str, Any]:
        raise FileNotFoundError(2, "No such file", "/home/ann/app/cars.db")

    eng = engine(tools=[book_flight, cancel_flight, book_car],
                 compensations={"book_flight": "cancel_flight"},
                 compensation_retry=rac.RetryPolicy(max_attempts=1), no_compensation="warn")
    with eng.run() as run:
        assert call(run, "book_flight", book_flight, passenger="ann").ok
        failed = call(run, "book_car", book_car, driver="ann")
    told = failure_text(failed)
    assert "No such file: '<path>'" in told and "Permission denied: '<path>'" in told, told
    told_nothing_for_the_developer(told)
    assert any("/home/ann/app/cars.db" in (r.error or "") for r in run.records())


def test_an_alternative_nobody_has_is_reported_without_the_advice() -> None:
    def book_car(driver: str) -> dict[str, Any]:
        raise rac.PermanentError("no cars left")

    eng = engine(alternatives={"book_car": ["rent_car"]}, no_compensation="warn")
    with eng.run() as run:
        failed = run.execute("book_car", {"driver": "ann"},
                             rac.adapters.route(run, "book_car", lambda a: book_car(**a)))
    told = failure_text(failed)
    assert "rent_car (failed: rent_car is neither a tool of this agent nor registered with " \
           "the engine)" in told, told
    told_nothing_for_the_developer(told)


@pytest.mark.parametrize(("text", "shown"), [
    ("cannot map argument 'booking_id' of cancel_flight: declare it, e.g. "
     "Compensation(tool='cancel_flight', args={'booking_id': 'result.<field>'})",
     "cannot map argument 'booking_id' of cancel_flight"),
    ("cannot map the arguments of cancel_flight: its parameters are unknown; declare them with "
     "Compensation(tool='cancel_flight', args={...})",
     "cannot map the arguments of cancel_flight: its parameters are unknown"),
    ("cannot settle run-1#2: book_flight declares no lookup (rac.Compensation(..., "
     "lookup=rac.Lookup(...)))", "cannot settle run-1#2: book_flight declares no lookup"),
    ("open('/var/lib/app/world.db') failed; see C:\\Users\\ann\\log.txt",
     "open('<path>') failed; see <path>"),
    ("sqlite:////home/ann/rac.db is locked", "<path> is locked"),
    # what is not a path stays: a route, a ratio, a URL's path, a date
    ("SFO->CDG 2/3 seats at https://api.example.com/v1/book on 2026/01/02",
     "SFO->CDG 2/3 seats at https://api.example.com/v1/book on 2026/01/02"),
])
def test_for_model_cuts_advice_and_paths_only(text: str, shown: str) -> None:
    assert for_model(text) == shown
