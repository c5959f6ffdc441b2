"""The recovery declarations an MCP tool carries, parsed and validated.

RAC's own format is one entry of the tool's ``_meta``, under :data:`META_KEY` (a reverse-DNS
key, as the MCP specification asks of ``_meta`` keys)::

    {"io.github.rac-agents/recovery": {
        "compensation": {"tool": "cancel_flight", "args": {"booking_id": "result.booking_id"}},
        "lookup": {"tool": "find_bookings", "args": {"passenger": "args.passenger"},
                   "items": "result.bookings", "match": {"request_key": "key"}},
        "before": {"tool": "get_seat", "args": {"booking_id": "args.booking_id"}},
        "effect": "unsafe",
        "irreversible": false,
        "errors_before_effect": true,
        "alternatives": ["book_flight_partner"]}}

Every field is optional. ``errors_before_effect: true`` says the tool's error results
(``isError``) come before any effect: without it RAC takes an error result as a call that may
have happened (MCP server frameworks turn any exception into one, after the tool may have
written); it is believed from a trusted server only (see :mod:`rac.mcp.trust`). Two other shapes are read for interoperability: the ``recovery``
annotation of the MCP proposal SEP-3172 (``{"strategy": "compensation",
"compensatingOperation": {"operationId": ..., "parameters": {...}}}``, parameters as OpenAPI
runtime expressions ``$response.body#/field`` and ``$request.body#/field``; another strategy
declares nothing and is logged), and the
``x-compensation-pair`` annotation or input-schema key of the reference implementation
(a compensating tool's name). Before the reverse-DNS key, RAC read a bare ``rac`` key; it is
still read.

Parsing checks shapes only; :func:`validate` checks that every tool named exists on the same
server. Both raise :class:`rac.ConfigurationError` naming the server, the tool and the field.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rac.errors import ConfigurationError
from rac.events import emit
from rac.registry import BeforeImage, Lookup

#: The ``_meta`` key under which a tool declares how RAC recovers it.
META_KEY = "io.github.rac-agents/recovery"
#: The key RAC read before :data:`META_KEY` (still read).
LEGACY_META_KEY = "rac"
#: The annotation proposed by SEP-3172 ("optional recovery metadata in ToolAnnotations").
SEP_3172_ANNOTATION = "recovery"
#: The annotation (or input-schema key) of the reference implementation.
REFERENCE_ANNOTATION = "x-compensation-pair"
#: Effect classes a tool may declare.
EFFECTS = ("read_only", "idempotent", "keyed", "unsafe")

_FIELDS = ("compensation", "lookup", "before", "effect", "irreversible", "alternatives",
           "errors_before_effect")
_COMP_ROOTS = ("result", "args")
_LOOKUP_ROOTS = ("args", "key")


@dataclass(frozen=True)
class ToolDeclaration:
    """What one MCP tool declares about its recovery, in the server's names, not yet judged
    for trust (see :mod:`rac.mcp.trust`). ``lookup`` and ``before`` are :class:`rac.Lookup`
    and :class:`rac.BeforeImage` (the tools they name are the server's).

    ``source`` names where the compensation came from: ``"_meta"`` (:data:`META_KEY`),
    ``"_meta.rac"``, ``"SEP-3172"`` or ``"x-compensation-pair"``.
    """

    tool: str
    compensator: str | None = None
    args: Mapping[str, str] | None = None
    lookup: Lookup | None = None
    before: BeforeImage | None = None
    effect: str | None = None
    irreversible: bool = False
    alternatives: tuple[str, ...] = ()
    hints: Mapping[str, Any] = field(default_factory=dict)
    #: the server says the tool's error results come before any effect
    errors_before_effect: bool = False
    source: str | None = None

    def referenced_tools(self) -> dict[str, str]:
        """Each tool this declaration names, with the field that names it."""
        refs: dict[str, str] = {}
        if self.compensator is not None:
            refs[self.compensator] = "compensation.tool"
        if self.lookup is not None:
            refs.setdefault(self.lookup.tool, "lookup.tool")
        if self.before is not None:
            refs.setdefault(self.before.tool, "before.tool")
        for i, alt in enumerate(self.alternatives):
            refs.setdefault(alt, f"alternatives[{i}]")
        return refs


class _Where:
    """Builds error messages naming the server, the tool and the field."""

    def __init__(self, server: str | None, tool: str, base: str) -> None:
        self.server, self.tool, self.base = server, tool, base

    def error(self, fld: str, problem: str) -> ConfigurationError:
        head = f"MCP server {self.server!r}, tool {self.tool!r}" if self.server \
            else f"MCP tool {self.tool!r}"
        path = f"{self.base}.{fld}" if fld else self.base
        return ConfigurationError(f"{head}: field '{path}' {problem}")


def _path(value: Any, roots: tuple[str, ...], where: _Where, fld: str) -> str:
    """A declared path, checked: a root (``result``, ``args``, ``before``, ``key``) and
    field names separated by dots."""
    if not isinstance(value, str) or not value.strip():
        raise where.error(fld, f"must be a path such as '{roots[0]}.id', got {value!r}")
    parts = value.strip().split(".")
    if parts[0] not in roots or any(not p for p in parts) or (parts[0] == "key" and len(parts) > 1):
        allowed = ", ".join(f"'{r}'" for r in roots)
        raise where.error(fld, f"= {value!r} must start with one of {allowed} and name fields "
                               "separated by dots")
    return value.strip()


def _paths(value: Any, roots: tuple[str, ...], where: _Where, fld: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise where.error(fld, "must map parameter names to paths such as 'result.booking_id'")
    out: dict[str, str] = {}
    for param, path in value.items():
        if not isinstance(param, str) or not param:
            raise where.error(fld, f"has a key that is not a parameter name: {param!r}")
        out[param] = _path(path, roots, where, f"{fld}.{param}")
    return out


def _tool_name(value: Any, where: _Where, fld: str) -> str:
    if not isinstance(value, str) or not value:
        raise where.error(fld, f"must name a tool of the same server, got {value!r}")
    return value


def _ours(entry: Any, where: _Where) -> dict[str, Any]:
    """The fields of RAC's own ``_meta`` entry, checked."""
    if not isinstance(entry, Mapping):
        raise where.error("", f"must be an object, got {type(entry).__name__}")
    unknown = set(entry) - set(_FIELDS)
    if unknown:
        raise where.error("", f"has unknown field(s) {sorted(unknown)}; expected some of "
                              f"{list(_FIELDS)}")
    out: dict[str, Any] = {}
    before = entry.get("before")
    if before is not None:
        if not isinstance(before, Mapping) or set(before) - {"tool", "args", "on_failure"}:
            raise where.error("before", "must be an object with 'tool', 'args' and "
                                        "'on_failure'")
        on_failure = before.get("on_failure", "refuse")
        if on_failure not in ("refuse", "run"):
            raise where.error("before.on_failure", f"must be 'refuse' or 'run', got "
                                                   f"{on_failure!r}")
        out["before"] = BeforeImage(tool=_tool_name(before.get("tool"), where, "before.tool"),
                                    args=_paths(before.get("args"), _LOOKUP_ROOTS, where,
                                                "before.args"),
                                    on_failure=on_failure)
    comp = entry.get("compensation")
    if comp is not None:
        roots = (*_COMP_ROOTS, "before") if "before" in out else _COMP_ROOTS
        if isinstance(comp, str):
            out["compensator"] = _tool_name(comp, where, "compensation")
        elif isinstance(comp, Mapping):
            if set(comp) - {"tool", "args"}:
                raise where.error("compensation", f"has unknown field(s) "
                                  f"{sorted(set(comp) - {'tool', 'args'})}; expected 'tool', "
                                  "'args'")
            out["compensator"] = _tool_name(comp.get("tool"), where, "compensation.tool")
            if comp.get("args") is not None:
                out["args"] = _paths(comp.get("args"), roots, where, "compensation.args")
        else:
            raise where.error("compensation", "must be a tool name or an object with 'tool' "
                                              "and 'args'")
    lookup = entry.get("lookup")
    if lookup is not None:
        if not isinstance(lookup, Mapping) or set(lookup) - {"tool", "args", "items", "match",
                                                             "created_after"}:
            raise where.error("lookup", "must be an object with 'tool', 'args', 'items', "
                                        "'match' and 'created_after'")
        items = lookup.get("items")
        created = lookup.get("created_after")
        if created is not None and not (isinstance(created, str) and created.strip()):
            raise where.error("lookup.created_after", f"must name the item field holding its "
                                                      f"creation time, got {created!r}")
        out["lookup"] = Lookup(
            tool=_tool_name(lookup.get("tool"), where, "lookup.tool"),
            args=_paths(lookup.get("args"), _LOOKUP_ROOTS, where, "lookup.args"),
            items=None if items is None else _path(items, ("result",), where, "lookup.items"),
            match=_paths(lookup.get("match"), _LOOKUP_ROOTS, where, "lookup.match"),
            created_after=created)
    effect = entry.get("effect")
    if effect is not None:
        if effect not in EFFECTS:
            raise where.error("effect", f"must be one of {list(EFFECTS)}, got {effect!r}")
        out["effect"] = effect
    irreversible = entry.get("irreversible")
    if irreversible is not None:
        if not isinstance(irreversible, bool):
            raise where.error("irreversible", f"must be true or false, got {irreversible!r}")
        out["irreversible"] = irreversible
    before_effect = entry.get("errors_before_effect")
    if before_effect is not None:
        if not isinstance(before_effect, bool):
            raise where.error("errors_before_effect", f"must be true or false, got "
                                                      f"{before_effect!r}")
        out["errors_before_effect"] = before_effect
    alts = entry.get("alternatives")
    if alts is not None:
        if not isinstance(alts, list | tuple) or not all(isinstance(a, str) and a for a in alts):
            raise where.error("alternatives", "must be a list of tool names")
        out["alternatives"] = tuple(alts)
    if out.get("effect") == "read_only" and "compensator" in out:
        raise where.error("effect", "is 'read_only' but a compensation is declared: a tool "
                                    "with no side effect has nothing to undo")
    if out.get("irreversible") and "compensator" in out:
        raise where.error("irreversible", "is true but a compensation is declared")
    return out


def _runtime_expression(expr: Any, where: _Where, fld: str) -> str:
    """An OpenAPI runtime expression (SEP-3172's parameter binding) as a RAC path."""
    if not isinstance(expr, str):
        raise where.error(fld, f"must be a runtime expression such as "
                               f"'$response.body#/booking_id', got {expr!r}")
    for prefix, root in (("$response.body", "result"), ("$request.body", "args")):
        if expr == prefix or expr == prefix + "#" or expr == prefix + "#/":
            if root == "args":
                break
            return root
        if expr.startswith(prefix + "#/"):
            pointer = expr[len(prefix) + 2:].split("/")
            parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer]
            if all(p and "." not in p for p in parts):
                return ".".join((root, *parts))
    raise where.error(fld, f"= {expr!r} is not a runtime expression RAC can follow; use "
                           "'$response.body#/<field>' or '$request.body#/<field>'")


def _fields(obj: Any) -> Any:
    """``obj`` as a mapping when it is a pydantic model or plain object (the mcp 2.x SDK gives
    nested annotation values as objects with snake_case attributes); other values unchanged."""
    if obj is None or isinstance(obj, Mapping | str | int | float | bool | list | tuple):
        return obj
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        return dump(by_alias=True, exclude_none=True)
    if hasattr(obj, "__dict__"):
        return {k: v for k, v in vars(obj).items() if not k.startswith("_") and v is not None}
    return obj


def _get(holder: Mapping[str, Any], wire: str, snake: str) -> Any:
    """A field by its wire (camelCase) name, or by the snake_case attribute name of mcp 2.x."""
    value = holder.get(wire)
    return _fields(holder.get(snake) if value is None else value)


def _sep_3172(recovery: Any, where: _Where) -> dict[str, Any]:
    """SEP-3172's ``recovery`` annotation as RAC's fields. A strategy other than
    ``"compensation"`` (the only one the proposal defines; it keeps the field open for others)
    declares nothing RAC can use: it is logged and the tool keeps RAC's default protection."""
    recovery = _fields(recovery)
    if not isinstance(recovery, Mapping):
        raise where.error("", f"must be an object, got {type(recovery).__name__}")
    strategy = recovery.get("strategy")
    if not isinstance(strategy, str) or not strategy:
        raise where.error("strategy", f"must name a recovery strategy such as 'compensation', "
                                      f"got {strategy!r}")
    if strategy != "compensation":
        emit("rac.mcp.recovery_strategy_unknown", level="warning", server=where.server,
             tool=where.tool, strategy=strategy, status="ignored",
             reason="RAC follows only the 'compensation' strategy of SEP-3172; the tool is "
                    "protected as a side effect with no declared undo")
        return {}
    op = _get(recovery, "compensatingOperation", "compensating_operation")
    if not isinstance(op, Mapping):
        raise where.error("compensatingOperation", "must be an object with 'operationId' and "
                                                   "'parameters'")
    params = _get(op, "parameters", "parameters") or {}
    if not isinstance(params, Mapping):
        raise where.error("compensatingOperation.parameters", "must map parameter names to "
                                                              "runtime expressions")
    return {"compensator": _tool_name(_get(op, "operationId", "operation_id"), where,
                                      "compensatingOperation.operationId"),
            "args": {str(k): _runtime_expression(v, where, f"compensatingOperation."
                                                           f"parameters.{k}")
                     for k, v in params.items()}}


def parse(name: str, meta: Mapping[str, Any], annotations: Mapping[str, Any],
          input_schema: Mapping[str, Any] | None = None, *,
          server: str | None = None) -> ToolDeclaration:
    """The declaration of one tool from its ``_meta``, annotations and input schema."""
    found: dict[str, Any] = {}
    source: str | None = None
    for key, label in ((META_KEY, "_meta"), (LEGACY_META_KEY, "_meta.rac")):
        entry = meta.get(key)
        if entry is not None:
            found = _ours(entry, _Where(server, name, f"_meta.{key}"))
            source = label
            break
    if "compensator" not in found:
        recovery = annotations.get(SEP_3172_ANNOTATION)
        if recovery is not None:
            found.update(_sep_3172(recovery, _Where(server, name, "annotations.recovery")))
            source = "SEP-3172"
    if "compensator" not in found:
        for base, holder in (("annotations", annotations), ("inputSchema", input_schema or {})):
            pair = holder.get(REFERENCE_ANNOTATION)
            if pair is not None:
                found["compensator"] = _tool_name(
                    pair, _Where(server, name, f"{base}.{REFERENCE_ANNOTATION}"), "")
                source = REFERENCE_ANNOTATION
                break
    if found.get("compensator") == name and "before" not in found:
        # A tool may undo itself only from a before-image (calling it again with the values
        # it replaced).
        raise _Where(server, name, _field_path_of(source, "compensation.tool")).error(
            "", f"refers to the tool itself ({name!r}); name the tool that undoes it, or "
                "declare a 'before' image to restore")
    hints = {k: annotations[k] for k in ("readOnlyHint", "destructiveHint", "idempotentHint",
                                         "openWorldHint") if k in annotations}
    return ToolDeclaration(tool=name, hints=hints, source=source if found else None, **found)


def validate(declarations: Iterable[ToolDeclaration], listed: Iterable[str], *,
             server: str | None = None) -> None:
    """Check that every tool the declarations name is one of the server's ``listed`` tools."""
    names = set(listed)
    for decl in declarations:
        for ref, fld in decl.referenced_tools().items():
            if ref not in names:
                raise _Where(server, decl.tool, _field_path(decl, fld)).error(
                    "", f"names {ref!r}, which the server does not list (listed tools: "
                        f"{sorted(names)})")


def _field_path(decl: ToolDeclaration, fld: str) -> str:
    """Where in the tool's description the field ``fld`` of ``decl`` was read."""
    return _field_path_of(decl.source, fld)


def _field_path_of(source: str | None, fld: str) -> str:
    if fld == "compensation.tool" and source == "SEP-3172":
        return "annotations.recovery.compensatingOperation.operationId"
    if fld == "compensation.tool" and source == REFERENCE_ANNOTATION:
        return f"annotations.{REFERENCE_ANNOTATION}"
    key = LEGACY_META_KEY if source == "_meta.rac" else META_KEY
    return f"_meta.{key}.{fld}"
