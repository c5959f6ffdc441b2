"""The two copies RAC keeps of a value: the stored copy (JSON-safe, redacted, capped: what the
log displays, exports and emits) and, when that differs, the exact copy an undo needs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rac.serialize import plain_copy, redact_text, store_value, to_jsonable


def stored_copy(value: Any, max_chars: int) -> Any:
    """What the log shows of ``value``."""
    return store_value(value, max_chars)


def exact(value: Any) -> Any:
    """``value`` as JSON-safe data, unredacted and untruncated."""
    return to_jsonable(value, redact=False)


def exact_copy(value: Any, stored: Any) -> dict[str, Any] | None:
    """Undo data for compensation arguments: None when the stored copy is already exact."""
    full = exact(value)
    return None if full == stored else {"args": full}


def redacted_by_source(stored: Any, mapping: Any) -> Any:
    """Compensation arguments as the log shows them, redacted by where each one comes from as
    well as by its own name: a parameter a declared mapping fills from a secret-named field
    (``{"account": "args.stripe_key"}``) is :data:`rac.serialize.REDACTED` whatever its name."""
    if not isinstance(mapping, Mapping) or not isinstance(stored, dict):
        return stored
    from rac.serialize import REDACTED, is_secret_key

    secret = [param for param, path in mapping.items() if param in stored
              and stored[param] is not None
              and any(is_secret_key(part) for part in str(path).split(".")[1:])]
    if not secret:
        return stored
    return {**stored, **dict.fromkeys(secret, REDACTED)}


def error_text(err: BaseException) -> str:
    """An error as the log and the agent see it: its message (or type), secrets scrubbed,
    at most 2,000 characters."""
    text = str(err) or type(err).__name__
    return redact_text(text)[:2000]


Needed = tuple[frozenset[str] | None, frozenset[str] | None]
#: (compensation, compensator params) -> fields, by identity (declarations do not change)
_NEEDED: dict[tuple[int, int], tuple[Any, Any, Needed]] = {}


def needed_fields(compensation: Any, params: list[str] | None) -> Needed:
    """The fields of a call's arguments and of its result that undoing it may read (None: all
    of them): what a declared mapping's paths name, else the compensator's parameter names.
    Worked out once per declaration and compensator."""
    key = (id(compensation), id(params))
    hit = _NEEDED.get(key)
    if hit is not None and hit[0] is compensation and hit[1] is params:
        return hit[2]
    found = _needed_fields(compensation, params)
    if len(_NEEDED) < 4096:
        _NEEDED[key] = (compensation, params, found)
    return found


def _needed_fields(compensation: Any, params: list[str] | None) -> Needed:
    spec = getattr(compensation, "args", None)
    if isinstance(spec, Mapping):
        arg_fields: set[str] = set()
        result_fields: set[str] = set()
        whole_args = whole_result = False
        for path in spec.values():
            parts = str(path).split(".")
            if parts[0] == "args":
                if len(parts) == 1:
                    whole_args = True
                else:
                    arg_fields.add(parts[1])
            elif parts[0] == "result":
                if len(parts) == 1:
                    whole_result = True
                else:
                    result_fields.add(parts[1])
        return (None if whole_args else frozenset(arg_fields),
                None if whole_result else frozenset(result_fields))
    if spec is None and params is not None:
        names = frozenset(params)
        return names, names
    return None, None


def undo_part(value: Any, stored: Any, fields: frozenset[str] | None) -> Any:
    """The exact copy of the ``fields`` of ``value`` (all when None) that differ from the
    stored copy, or None when the stored copy already holds them exactly."""
    if value is None or type(value) in (int, float, bool) or plain_copy(value) is not None:
        return None  # a plain value: the stored copy is exact
    full = exact(value)
    if fields is not None and isinstance(full, dict):
        full = {k: v for k, v in full.items() if k in fields}
        if isinstance(stored, dict) and all(stored.get(k) == v for k, v in full.items()):
            return None
        return full or None
    return None if full == stored else full
