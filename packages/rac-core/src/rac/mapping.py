"""Building a compensating call's arguments from the original call's arguments and result.

Three ways, in order of precedence: a callable ``(args, result) -> dict``; declared paths
(``{"booking_id": "result.booking_id"}``); or, by default, the compensator's own parameter names
matched against the result's fields, then the original arguments. RAC never guesses: a parameter
it cannot map unambiguously is an error that names it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rac.dependencies import is_id_like
from rac.errors import CompensationMappingError
from rac.registry import Compensation, _parse_path, parse_path
from rac.serialize import as_fields, is_secret_key

_MISSING = object()

#: Parameters RAC fills itself when a compensator declares them.
IDEMPOTENCY_PARAM = "idempotency_key"


def resolve_path(path: str, args: Mapping[str, Any], result: Any, *, tool: str,
                 param: str) -> Any:
    """The value at ``path`` (``result.x.y`` / ``args.x``); raises CompensationMappingError if a
    field on the way is missing."""
    root, parts = _parse_path(path, tool, param) if type(path) is str \
        else parse_path(path, tool=tool, param=param)
    value: Any = result if root == "result" else args
    if not parts:
        return as_fields(value) if root == "result" else value
    for i, part in enumerate(parts):
        if type(value) is dict and part in value:  # the common case, without as_fields
            value = value[part]
            continue
        value = as_fields(value)
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list | tuple) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        elif not isinstance(value, Mapping | list | tuple) and hasattr(value, part):
            value = getattr(value, part)
        else:
            walked = ".".join((root, *parts[:i]))
            raise CompensationMappingError(
                f"cannot map argument {param!r} of the compensation of {tool!r}: "
                f"{walked!r} has no field {part!r}")
    return value


_PATHS: dict[int, tuple[Mapping[str, Any], list[tuple[str, Any, bool, str | None]]]] = {}
_FLAT: dict[int, tuple[Mapping[str, Any], bool]] = {}


def copies_fields(spec: Any) -> bool:
    """True if ``spec`` (a compensation's ``args``) only copies single fields
    (``"result.x"``/``"args.y"``) into parameters whose names are not secrets: mapped from flat
    plain dicts, such arguments are flat and plain too (nothing to redact in the log)."""
    if type(spec) is not dict:
        return False
    hit = _FLAT.get(id(spec))
    if hit is not None and hit[0] is spec:
        return hit[1]
    flat = all(field is not None and not is_secret_key(param)
               for param, _path, _from_result, field in _one_field_paths(spec, ""))
    if len(_FLAT) < 4096:
        _FLAT[id(spec)] = (spec, flat)
    return flat


def _one_field_paths(spec: Mapping[str, Any], tool: str
                     ) -> list[tuple[str, Any, bool, str | None]]:
    """``(param, path, from_result, field)`` for each declared path, where ``field`` is the one
    field a ``"result.x"``/``"args.x"`` path names (None for longer or other paths); parsed once
    per declaration (cached by identity: declarations are not changed once registered)."""
    hit = _PATHS.get(id(spec))
    if hit is not None and hit[0] is spec:
        return hit[1]
    out: list[tuple[str, Any, bool, str | None]] = []
    for param, path in spec.items():
        if type(path) is str:
            root, parts = _parse_path(path, tool, param)
            out.append((param, path, root == "result", parts[0] if len(parts) == 1 else None))
        else:
            out.append((param, path, False, None))
    if len(_PATHS) < 4096:
        _PATHS[id(spec)] = (spec, out)
    return out


def field_plan(compensation: Compensation, params: list[str] | None, required: list[str]
               ) -> list[tuple[str, bool, str]] | None:
    """``(param, from_result, field)`` for each declared argument when every one is a single
    field of the original result or arguments and every required parameter of the
    compensator is declared (the idempotency key aside): such arguments are looked up
    directly, with :func:`map_positional` as the fallback for anything else (a missing
    field, a result that is not a dict). None when the declaration is not of that form."""
    spec = compensation.args
    if type(spec) is not dict or params is None:
        return None
    paths = _one_field_paths(spec, compensation.tool)
    if any(field is None for _param, _path, _from_result, field in paths):
        return None
    if any(p not in spec and p != IDEMPOTENCY_PARAM for p in required):
        return None
    return [(param, from_result, field) for param, _path, from_result, field in paths
            if field is not None]


def map_arguments(compensation: Compensation, *, tool: str, args: Mapping[str, Any],
                  result: Any, params: list[str] | None, required: list[str],
                  idempotency_key: str | None = None) -> dict[str, Any]:
    """The arguments for ``compensation.tool`` undoing a call of ``tool``.

    ``params``/``required`` describe the compensator's parameters (None if unknown). Raises
    :class:`CompensationMappingError` with a message such as
    ``"cannot map argument 'booking_ref' of cancel_hotel"``.
    """
    return map_positional(compensation, tool, args, result, params, required, idempotency_key)


def map_positional(compensation: Compensation, tool: str, args: Mapping[str, Any], result: Any,
                   params: list[str] | None, required: list[str],
                   idempotency_key: str | None) -> dict[str, Any]:
    """:func:`map_arguments` with positional parameters (a rollback calls it once per record)."""
    comp_tool = compensation.tool
    spec = compensation.args
    if type(spec) is dict:
        mapped = {}
        hit = _PATHS.get(id(spec))
        paths = hit[1] if hit is not None and hit[0] is spec else _one_field_paths(spec, comp_tool)
        for param, path, from_result, field in paths:
            # a one-field path into a dict is looked up here; anything else is walked
            source = result if from_result else args
            if field is not None and type(source) is dict and field in source:
                mapped[param] = source[field]
            else:
                mapped[param] = resolve_path(path, args, result, tool=comp_tool, param=param)
    elif callable(spec) and not isinstance(spec, Mapping):
        try:
            out = spec(dict(args), result)
        except Exception as e:
            raise CompensationMappingError(
                f"the argument mapper of {comp_tool} (undoing {tool}) raised "
                f"{type(e).__name__}: {e}") from e
        if not isinstance(out, Mapping):
            raise CompensationMappingError(
                f"the argument mapper of {comp_tool} (undoing {tool}) returned "
                f"{type(out).__name__}, not a dict")
        mapped = dict(out)
    elif isinstance(spec, Mapping):
        mapped = {param: resolve_path(path, args, result, tool=comp_tool, param=param)
                  for param, path in spec.items()}
    else:
        mapped = _match_by_name(comp_tool, tool, args, result, params, required)
    if (idempotency_key is not None and params is not None and IDEMPOTENCY_PARAM in params
            and IDEMPOTENCY_PARAM not in mapped):
        mapped[IDEMPOTENCY_PARAM] = idempotency_key
    if params is not None:
        for p in required:
            if p not in mapped:
                raise CompensationMappingError(
                    f"cannot map argument {p!r} of {comp_tool}: declare it, e.g. "
                    f"Compensation(tool={comp_tool!r}, args={{{p!r}: 'result.<field>'}})")
    return mapped


def _match_by_name(comp_tool: str, tool: str, args: Mapping[str, Any], result: Any,
                   params: list[str] | None, required: list[str]) -> dict[str, Any]:
    if params is None:
        raise CompensationMappingError(
            f"cannot map the arguments of {comp_tool}: its parameters are unknown; declare "
            f"them with Compensation(tool={comp_tool!r}, args={{...}})")
    fields = as_fields(result)
    mapped: dict[str, Any] = {}
    unmapped: list[str] = []
    for p in params:
        if p == IDEMPOTENCY_PARAM:
            continue
        if isinstance(fields, Mapping) and p in fields:
            mapped[p] = fields[p]
        elif p in args:
            mapped[p] = args[p]
        else:
            unmapped.append(p)
    # A bare id returned on its own (such as "F-102") fills the one required parameter left, if
    # exactly one is left: that is a unique match, not a guess. Free text never does.
    still_required = [p for p in unmapped if p in required]
    if len(still_required) == 1 and (is_id_like(fields) or (
            type(fields) is int and fields >= 1000)):
        mapped[still_required[0]] = fields
    return mapped


__all__ = ["IDEMPOTENCY_PARAM", "map_arguments", "resolve_path"]
