"""A call's framework id (a model's ``tool_call_id``) is written on every record the call makes,
on the blocking path (its shortcut too), the async path and the alternatives, and it survives
the store: a resumed agent finds its calls by it in a fresh process."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import rac
from rac.testing import TravelWorld, VirtualClock


def _engine(world: TravelWorld, store: str, **kw: Any) -> rac.RAC:
    return rac.RAC(compensations={"book_flight": "cancel_flight", "book_car": "cancel_car",
                                  "rent_car": "return_rental"},
                   store=store, tools=world.tools(), clock=VirtualClock(),
                   load_entrypoints=False, **kw)


def _invoke(world: TravelWorld) -> Any:
    return lambda name, args: getattr(world, name)(**args)


@pytest.mark.parametrize("fast", [True, False])
def test_the_call_id_is_on_the_record_and_in_the_log(world: TravelWorld, tmp_path: Path,
                                                       fast: bool) -> None:
    store = f"sqlite:///{tmp_path / 'rac.db'}"
    eng = _engine(world, store)
    eng.fast_path = fast
    with eng.run() as run:
        run.execute("book_flight", {"passenger": "ann", "origin": "LHR", "dest": "CDG"},
                    _invoke(world), call_id="call-1")
        run.execute("book_flight", {"passenger": "ann", "origin": "LHR", "dest": "CDG"},
                    _invoke(world))
        run_id = run.run_id
    again = _engine(world, store)  # another engine on the same file: a fresh process's view
    assert [r.call_id for r in again.store.get_records(run_id)] == ["call-1", ""]


def test_the_alternatives_of_a_call_carry_its_id(world: TravelWorld) -> None:
    world.fail("book_car", "permanent", message="no cars")
    eng = _engine(world, "memory://", alternatives={"book_car": ["rent_car"]})

    async def main() -> str:
        async with eng.run() as run:
            async def ainvoke(name: str, args: dict[str, Any]) -> Any:
                return getattr(world, name)(**args)

            await run.aexecute("book_car", {"driver": "ann", "city": "Paris"}, ainvoke,
                               call_id="call-car")
            return run.run_id

    run_id = asyncio.run(main())
    assert [(r.tool, r.status, r.call_id) for r in eng.store.get_records(run_id)] == [
        ("book_car", rac.RecordStatus.FAILED, "call-car"),
        ("rent_car", rac.RecordStatus.COMPLETED, "call-car")]
