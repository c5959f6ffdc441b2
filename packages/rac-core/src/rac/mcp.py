"""Compensation pairs found in MCP tool metadata.

An MCP server declares how to undo a tool in the tool's ``_meta`` (``meta`` in the Python SDK)::

    @app.tool(meta={"rac": {"compensation": {"tool": "cancel_flight",
                                             "args": {"booking_id": "result.booking_id"}},
                            "alternatives": ["book_flight_partner"]}})
    def book_flight(...): ...

``compensation`` may also be just the compensating tool's name. A tool whose annotations say
``readOnlyHint: true`` and that declares no compensation is treated as read-only. By the MCP
specification annotations and metadata are untrusted hints: RAC validates them like any other
declaration (a malformed entry raises :class:`rac.ConfigurationError` naming the tool and the
field) and never executes anything because of them. This module reads the SDK's objects by
attribute (``name``, ``meta``, ``annotations``) or dicts, and does not import ``mcp``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rac.errors import ConfigurationError

#: The key under ``_meta`` where RAC looks for its declarations.
META_KEY = "rac"


@dataclass
class MCPDeclarations:
    """What a list of MCP tools declares, ready for ``rac.RAC(**declarations.as_kwargs())``."""

    compensations: dict[str, Any] = field(default_factory=dict)
    alternatives: dict[str, list[str]] = field(default_factory=dict)
    read_only: list[str] = field(default_factory=list)

    def as_kwargs(self) -> dict[str, Any]:
        """The declarations as keyword arguments of :class:`rac.RAC`."""
        return {"compensations": self.compensations, "alternatives": self.alternatives,
                "read_only": self.read_only}


def _get(obj: Any, *names: str) -> Any:
    for name in names:
        if isinstance(obj, Mapping):
            if name in obj:
                return obj[name]
        elif getattr(obj, name, None) is not None:
            return getattr(obj, name)
    return None


def declarations_from_mcp(tools: Iterable[Any]) -> MCPDeclarations:
    """Read RAC declarations from MCP tools (``mcp.types.Tool`` objects or their dicts)."""
    out = MCPDeclarations()
    for tool in tools:
        name = _get(tool, "name")
        if not isinstance(name, str) or not name:
            raise ConfigurationError(f"MCP tool without a name: {tool!r}")
        meta = _get(tool, "meta", "_meta") or {}
        if not isinstance(meta, Mapping):
            raise ConfigurationError(f"MCP tool {name!r}: field '_meta' must be an object")
        ours = meta.get(META_KEY)
        if ours is not None and not isinstance(ours, Mapping):
            raise ConfigurationError(f"MCP tool {name!r}: field '_meta.{META_KEY}' must be an "
                                     f"object, got {type(ours).__name__}")
        ours = ours or {}
        unknown = set(ours) - {"compensation", "alternatives"}
        if unknown:
            raise ConfigurationError(f"MCP tool {name!r}: unknown field(s) in "
                                     f"'_meta.{META_KEY}': {sorted(unknown)}")
        comp = ours.get("compensation")
        if comp is not None:
            if not isinstance(comp, str | Mapping):
                raise ConfigurationError(
                    f"MCP tool {name!r}: field '_meta.{META_KEY}.compensation' must be a tool "
                    f"name or an object with 'tool' and 'args'")
            if isinstance(comp, Mapping):
                args = comp.get("args")
                if args is not None and not (isinstance(args, Mapping) and all(
                        isinstance(k, str) and isinstance(v, str) for k, v in args.items())):
                    raise ConfigurationError(
                        f"MCP tool {name!r}: field '_meta.{META_KEY}.compensation.args' must map "
                        f"parameter names to paths such as 'result.booking_id'")
                comp = dict(comp)
            out.compensations[name] = comp
        alts = ours.get("alternatives")
        if alts is not None:
            if not isinstance(alts, list) or not all(isinstance(a, str) for a in alts):
                raise ConfigurationError(f"MCP tool {name!r}: field '_meta.{META_KEY}."
                                         f"alternatives' must be a list of tool names")
            out.alternatives[name] = list(alts)
        annotations = _get(tool, "annotations")
        read_only = _get(annotations, "readOnlyHint") if annotations is not None else None
        if read_only is True and comp is None:
            out.read_only.append(name)
    return out
