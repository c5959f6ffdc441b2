"""A small real MCP server (stdio) over the demo's travel world, whose tools declare their
recovery for RAC: which tool undoes each booking, how to look a booking up, and which tools only
read.

Run it as ``python examples/mcp_travel_server.py --world trips.db`` (or
``python -m rac.demo.mcp_travel_server``); ``rac demo --mcp`` does. The world is a SQLite file,
so its state outlives each server process (langchain-mcp-adapters starts one per call unless you
hold a session). Faults for demos and tests: ``--fail TOOL=KIND[@after][xN]``, KIND one of
``permanent`` (the tool reports an error), ``crash`` (the process exits: the client sees the
connection close) or ``hang`` (the tool never answers: the client times out); ``@after`` makes
the booking first, ``xN`` limits the fault to the first N calls (counted in the world file).
``--http PORT`` serves streamable HTTP on ``http://127.0.0.1:PORT/mcp`` instead of stdio.

Works with mcp 1.x (``FastMCP``) and mcp 2.x (``MCPServer``).
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rac.mcp import recovery_meta
from rac.testing.world import TravelWorld

FAULT_KINDS = ("permanent", "crash", "hang")


@dataclass(frozen=True)
class Fault:
    """A fault of one tool: what happens, before or after the booking, for how many calls."""

    tool: str
    kind: str
    after: bool = False
    times: int | None = None

    @classmethod
    def parse(cls, spec: str) -> Fault:
        """``TOOL=KIND[@after][xN]``."""
        tool, sep, rest = spec.partition("=")
        times: int | None = None
        if "x" in rest:
            rest, _, count = rest.rpartition("x")
            times = int(count)
        kind, _, phase = rest.partition("@")
        if not sep or not tool or kind not in FAULT_KINDS or phase not in ("", "after", "before"):
            raise ValueError(f"--fail {spec!r}: expected TOOL=KIND[@after][xN], KIND one of "
                             f"{', '.join(FAULT_KINDS)}")
        return cls(tool, kind, phase == "after", times)


class FaultBook:
    """Counts fault hits in the world file, so ``xN`` holds across server processes."""

    def __init__(self, path: str, faults: list[Fault]) -> None:
        self.faults = {f.tool: f for f in faults}
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS mcp_fault_hits (tool TEXT PRIMARY KEY, "
                         "hits INTEGER NOT NULL)")

    def take(self, tool: str) -> Fault | None:
        """The fault this call of ``tool`` hits, if any (and count it)."""
        fault = self.faults.get(tool)
        if fault is None:
            return None
        row = self._db.execute("SELECT hits FROM mcp_fault_hits WHERE tool=?", (tool,)).fetchone()
        hits = row[0] if row else 0
        if fault.times is not None and hits >= fault.times:
            return None
        self._db.execute("INSERT OR REPLACE INTO mcp_fault_hits VALUES (?, ?)", (tool, hits + 1))
        return fault


def _strike(fault: Fault) -> None:
    if fault.kind == "crash":
        os._exit(17)  # the client sees the connection close with its request outstanding
    if fault.kind == "hang":
        threading.Event().wait()  # never answers
    raise RuntimeError(f"{fault.tool} is not available on those dates")


def _sdk() -> tuple[Any, Any]:
    """The server class and ``ToolAnnotations`` of the installed mcp (1.x or 2.x)."""
    import importlib

    try:  # mcp 1.x
        return (importlib.import_module("mcp.server.fastmcp").FastMCP,
                importlib.import_module("mcp.types").ToolAnnotations)
    except ImportError:  # mcp 2.x
        return (importlib.import_module("mcp.server.mcpserver").MCPServer,
                importlib.import_module("mcp_types").ToolAnnotations)


def build_server(world_path: str, faults: list[Fault] | None = None) -> Any:
    """The MCP server over the travel world in ``world_path``."""
    server_cls, annotations_cls = _sdk()

    def hints(**kw: bool) -> Any:
        return annotations_cls.model_validate(kw)  # wire (camelCase) names on both lines

    world = TravelWorld(world_path)
    book = FaultBook(world_path, faults or [])
    app = server_cls("travel")

    def guarded(tool: str, effect: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        fault = book.take(tool)
        if fault is not None and not fault.after:
            _strike(fault)
        result = effect()
        if fault is not None:
            _strike(fault)
        return result

    def live(kind: str, who: str) -> dict[str, Any]:
        return {"bookings": [b for b in world.live(kind) if b["who"] == who]}

    reads = hints(readOnlyHint=True, openWorldHint=False)
    booking = hints(readOnlyHint=False, destructiveHint=False, idempotentHint=False)
    cancelling = hints(readOnlyHint=False, destructiveHint=True, idempotentHint=True)
    read_only = recovery_meta(effect="read_only")
    undone = recovery_meta(effect="idempotent")

    def undo(cancel: str, find: str, who: str, place: str) -> dict[str, Any]:
        return recovery_meta(
            compensation=cancel, args={"booking_id": "result.booking_id"},
            lookup={"tool": find, "args": {who: f"args.{who}"}, "items": "result.bookings",
                    "match": {"place": f"args.{place}"}})

    def search_flights(origin: str, dest: str) -> dict[str, Any]:
        """List flights from origin to dest."""
        return world.search_flights(origin, dest)

    def book_flight(passenger: str, origin: str, dest: str) -> dict[str, Any]:
        """Book a seat for passenger on a flight from origin to dest."""
        return guarded("book_flight", lambda: world.book_flight(passenger, origin, dest))

    def cancel_flight(booking_id: str) -> dict[str, Any]:
        """Cancel a flight booking (a booking that does not exist is a no-op)."""
        return guarded("cancel_flight", lambda: world.cancel_flight(booking_id))

    def find_flights(passenger: str) -> dict[str, Any]:
        """The passenger's live flight bookings."""
        return live("flight", passenger)

    def book_hotel(guest: str, city: str, nights: int) -> dict[str, Any]:
        """Book a hotel room in city for a number of nights."""
        return guarded("book_hotel", lambda: world.book_hotel(guest, city, nights))

    def cancel_hotel(booking_id: str) -> dict[str, Any]:
        """Cancel a hotel booking (a booking that does not exist is a no-op)."""
        return guarded("cancel_hotel", lambda: world.cancel_hotel(booking_id))

    def find_hotels(guest: str) -> dict[str, Any]:
        """The guest's live hotel bookings."""
        return live("hotel", guest)

    def book_car(driver: str, city: str) -> dict[str, Any]:
        """Book a rental car in city."""
        return guarded("book_car", lambda: world.book_car(driver, city))

    def cancel_car(booking_id: str) -> dict[str, Any]:
        """Cancel a car booking (a booking that does not exist is a no-op)."""
        return guarded("cancel_car", lambda: world.cancel_car(booking_id))

    def find_cars(driver: str) -> dict[str, Any]:
        """The driver's live car bookings."""
        return live("car", driver)

    # Each tool with its annotations (the specification's hints) and RAC's ``_meta`` entry.
    declared: list[tuple[Callable[..., dict[str, Any]], Any, dict[str, Any]]] = [
        (search_flights, reads, read_only),
        (book_flight, booking, undo("cancel_flight", "find_flights", "passenger", "dest")),
        (cancel_flight, cancelling, undone),
        (find_flights, reads, read_only),
        (book_hotel, booking, undo("cancel_hotel", "find_hotels", "guest", "city")),
        (cancel_hotel, cancelling, undone),
        (find_hotels, reads, read_only),
        (book_car, booking, undo("cancel_car", "find_cars", "driver", "city")),
        (cancel_car, cancelling, undone),
        (find_cars, reads, read_only),
    ]
    for fn, hinted, meta in declared:
        app.tool(annotations=hinted, meta=meta)(fn)
    return app


def main(argv: list[str] | None = None) -> None:
    """Serve the travel world over stdio."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--world", default=os.environ.get("RAC_TRAVEL_WORLD", "travel-world.db"),
                        help="the world's SQLite file (default: $RAC_TRAVEL_WORLD or "
                             "travel-world.db)")
    parser.add_argument("--fail", action="append", default=[], metavar="TOOL=KIND[@after][xN]",
                        help="inject a fault (repeatable)")
    parser.add_argument("--http", type=int, metavar="PORT",
                        help="serve streamable HTTP on 127.0.0.1:PORT/mcp instead of stdio "
                             "(mcp 1.x)")
    args = parser.parse_args(argv)
    try:
        faults = [Fault.parse(spec) for spec in args.fail]
    except ValueError as e:
        parser.error(str(e))
    app = build_server(args.world, faults)
    if args.http is None:
        app.run()  # stdio
        return
    settings = getattr(app, "settings", None)
    if settings is None or not hasattr(settings, "port"):
        parser.error("--http needs mcp 1.x (FastMCP); this mcp's server has no such settings")
    settings.host, settings.port, settings.log_level = "127.0.0.1", args.http, "WARNING"
    app.run(transport="streamable-http")


if __name__ == "__main__":
    main()
