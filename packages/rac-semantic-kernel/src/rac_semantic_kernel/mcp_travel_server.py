"""A stdio MCP server over a travel world stored in a SQLite file, for tests and examples.

``python -m rac_semantic_kernel.mcp_travel_server WORLD.db`` serves ``book-flight`` (whose
``_meta`` declares its compensation, ``cancel-flight``, as RAC reads it), ``cancel-flight``,
``book-car`` (fails for the city ``Atlantis``: an ``isError`` result) and ``cancel-car``, and
``search_flights`` (read-only by its annotations, which RAC believes only of a trusted server). Open ``rac.testing.TravelWorld(WORLD.db)`` in
the client to see what the server booked.
"""

from __future__ import annotations

import sys
from typing import Any

from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations

from rac.testing import TravelWorld

world = TravelWorld(sys.argv[1] if len(sys.argv) > 1 else ":memory:")
app = FastMCP("travel")


@app.tool(name="book-flight", annotations=ToolAnnotations(readOnlyHint=False),
          meta={"rac": {"compensation": {"tool": "cancel-flight",
                                         "args": {"booking_id": "result.booking_id"}}}})
def book_flight(passenger: str, origin: str, dest: str) -> dict[str, Any]:
    """Book a flight; returns the booking."""
    return world.book_flight(passenger, origin, dest)


@app.tool(name="cancel-flight", annotations=ToolAnnotations(destructiveHint=True))
def cancel_flight(booking_id: str) -> dict[str, Any]:
    """Cancel a flight booking."""
    return world.cancel_flight(booking_id)


@app.tool(name="book-car", annotations=ToolAnnotations(readOnlyHint=False),
          meta={"rac": {"compensation": "cancel-car"}})
def book_car(driver: str, city: str) -> dict[str, Any]:
    """Book a car; there are never cars in Atlantis (the tool then fails)."""
    if city == "Atlantis":
        raise ValueError("no cars in Atlantis")
    return world.book_car(driver, city)


@app.tool(name="cancel-car", annotations=ToolAnnotations(destructiveHint=True))
def cancel_car(booking_id: str) -> dict[str, Any]:
    """Cancel a car booking."""
    return world.cancel_car(booking_id)


@app.tool(name="search_flights", annotations=ToolAnnotations(readOnlyHint=True))
def search_flights(origin: str, dest: str) -> dict[str, Any]:
    """Search flights (changes nothing)."""
    return world.search_flights(origin, dest)


if __name__ == "__main__":
    app.run()
