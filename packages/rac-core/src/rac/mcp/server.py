"""For MCP server authors: the ``_meta`` entry that tells RAC how to recover a tool.

Example (FastMCP, mcp 1.x; ``meta=`` works the same on mcp 2.x's ``MCPServer``)::

    from rac.mcp import recovery_meta

    @app.tool(meta=recovery_meta(
        compensation="cancel_flight", args={"booking_id": "result.booking_id"},
        lookup={"tool": "find_bookings", "args": {"passenger": "args.passenger"},
                "items": "result.bookings", "match": {"request_key": "key"}}))
    def book_flight(passenger: str, dest: str, request_key: str) -> dict: ...

The entry is checked when it is built, so a typo fails when the server starts, not when a
client needs the undo. Importing :mod:`rac.mcp` costs the server nothing beyond RAC's core.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rac.mcp.declarations import META_KEY, parse
from rac.registry import BeforeImage, Lookup


def _plain(spec: Mapping[str, Any] | Lookup | BeforeImage | None) -> Any:
    if spec is None:
        return None
    if isinstance(spec, Lookup | BeforeImage):
        spec = spec.model_dump(exclude_defaults=True)
    return {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in spec.items()}


def recovery_meta(*, compensation: str | None = None, args: Mapping[str, str] | None = None,
                  lookup: Mapping[str, Any] | Lookup | None = None,
                  before: Mapping[str, Any] | BeforeImage | None = None,
                  effect: str | None = None, irreversible: bool | None = None,
                  alternatives: Iterable[str] | None = None,
                  errors_before_effect: bool | None = None,
                  meta: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``_meta`` of a tool declaring how RAC recovers it (see :mod:`rac.mcp.declarations`
    for each field). ``errors_before_effect=True`` says the tool's error results come before any
    effect (only a client that trusts the server believes it). ``meta`` holds other ``_meta``
    entries to keep beside RAC's.

    Raises :class:`rac.ConfigurationError` naming the field when a value is malformed; tool
    names are checked against the server's tools by the client, when it lists them.
    """
    entry: dict[str, Any] = {}
    if compensation is not None:
        entry["compensation"] = {"tool": compensation, **({"args": dict(args)} if args else {})}
    elif args:
        entry["compensation"] = {"tool": None, "args": dict(args)}  # rejected by the check
    if lookup is not None:
        entry["lookup"] = _plain(lookup)
    if before is not None:
        entry["before"] = _plain(before)
    if effect is not None:
        entry["effect"] = effect
    if irreversible is not None:
        entry["irreversible"] = irreversible
    if alternatives is not None:
        entry["alternatives"] = list(alternatives)
    if errors_before_effect is not None:
        entry["errors_before_effect"] = errors_before_effect
    parse("<this tool>", {META_KEY: entry}, {})
    return {**dict(meta or {}), META_KEY: entry}
