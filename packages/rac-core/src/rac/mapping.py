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
from rac.registry import Compensation, parse_path
from rac.serialize import as_fields

_MISSING = object()

#: Parameters RAC fills itself when a compensator declares them.
IDEMPOTENCY_PARAM = "idempotency_key"


def resolve_path(path: str, args: Mapping[str, Any], result: Any, *, tool: str,
                 param: str, before: Any = None) -> Any:
    """The value at ``path`` (``result.x.y`` / ``args.x`` / ``before.x``); raises
    CompensationMappingError if a field on the way is missing."""
    return resolve_in(path, {"args": args, "result": result, "before": before}, tool=tool,
                      param=param)


def resolve_in(path: str, sources: Mapping[str, Any], *, tool: str, param: str) -> Any:
    """The value at ``path`` whose first part names one of ``sources`` (``args``, ``result``,
    ``before``, ``key``); raises CompensationMappingError if a field on the way is missing."""
    roots = tuple(sources)
    root, parts = parse_path(path, tool=tool, param=param, roots=roots)
    value: Any = sources[root]
    if not parts:
        return as_fields(value) if root in ("result", "before") else value
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


def map_arguments(compensation: Compensation, *, tool: str, args: Mapping[str, Any],
                  result: Any, params: list[str] | None, required: list[str],
                  idempotency_key: str | None = None, before: Any = None,
                  key_param: str = IDEMPOTENCY_PARAM) -> dict[str, Any]:
    """The arguments for ``compensation.tool`` undoing a call of ``tool``.

    ``args``/``result`` are the original call's, ``before`` its before-image (if one was
    declared); ``params``/``required`` describe the compensator's parameters (None if unknown).
    ``idempotency_key``, the compensation's own key, is passed as ``key_param`` to a
    compensator that takes it. Raises :class:`CompensationMappingError` naming the parameter that cannot be mapped, and
    never fills a parameter from an empty field (None, ``""``, missing) unless the
    compensation declares it ``optional``: ``"cannot map argument 'booking_ref' of
    cancel_hotel"``.
    """
    comp_tool = compensation.tool
    spec = compensation.args
    sources = {"args": args, "result": result, "before": before}
    origin: dict[str, str] = {}
    if callable(spec) and not isinstance(spec, Mapping):
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
        origin = dict.fromkeys(mapped, "the argument mapper")
    elif isinstance(spec, Mapping):
        mapped = {}
        for param, path in spec.items():
            try:
                mapped[param] = resolve_in(path, sources, tool=comp_tool, param=param)
            except CompensationMappingError:
                if param not in compensation.optional:
                    raise  # a missing field: an optional parameter is left out instead
        origin = {param: repr(path) for param, path in spec.items()}
    else:
        mapped = _match_by_name(comp_tool, tool, args, result, params, required, key_param)
        origin = dict.fromkeys(mapped, "a field of the same name")
    if (idempotency_key is not None and params is not None and key_param in params
            and key_param not in mapped):
        mapped[key_param] = idempotency_key  # the compensation's own key: repeats dedupe
    if params is not None:
        for p in required:
            if p not in mapped:
                raise CompensationMappingError(
                    f"cannot map argument {p!r} of {comp_tool}: declare it, e.g. "
                    f"Compensation(tool={comp_tool!r}, args={{{p!r}: 'result.<field>'}})")
    refuse_empty(mapped, compensation, tool=tool, origin=origin)
    return mapped


def empty(value: Any) -> bool:
    """True for a value a compensator cannot undo anything with: None or a blank string."""
    return value is None or (isinstance(value, str) and not value.strip())


def refuse_empty(mapped: Mapping[str, Any], compensation: Compensation, *, tool: str,
                 origin: Mapping[str, str] | None = None) -> None:
    """Raise :class:`CompensationMappingError` naming the first argument of ``mapped`` that
    is empty (None, ``""``) unless ``compensation.optional`` names it: a compensator given an
    empty id undoes nothing and answers that it went well."""
    for p, v in mapped.items():
        if empty(v) and p not in compensation.optional:
            src = (origin or {}).get(p, "its source")
            raise CompensationMappingError(
                f"cannot map argument {p!r} of {compensation.tool} (undoing {tool}): {src} is "
                f"{v!r}; RAC does not call {compensation.tool} with {p}={v!r} (declare "
                f"Compensation(..., optional=[{p!r}]) if an empty value undoes it)")


def _match_by_name(comp_tool: str, tool: str, args: Mapping[str, Any], result: Any,
                   params: list[str] | None, required: list[str],
                   key_param: str = IDEMPOTENCY_PARAM) -> dict[str, Any]:
    if params is None:
        raise CompensationMappingError(
            f"cannot map the arguments of {comp_tool}: its parameters are unknown; declare "
            f"them with Compensation(tool={comp_tool!r}, args={{...}})")
    fields = as_fields(result)
    mapped: dict[str, Any] = {}
    unmapped: list[str] = []
    for p in params:
        if p == key_param:
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


__all__ = ["IDEMPOTENCY_PARAM", "empty", "map_arguments", "refuse_empty", "resolve_in",
           "resolve_path"]
