"""Telling effects apart, for lookups: what a lookup's item is (its fields, when RAC can read
them), what identifies it (every id-named field it has, never just the first), whether it is
the effect another call is known to have made, whether it existed before a call, and whether
an object still holds what a call says it held (:func:`drift`).

Pure functions of values: no I/O, no locks. :mod:`rac.run.reconcile` uses them to decide
whether a lookup found *this* call's effect; a before-image restore
(:func:`rac.run.compensation.later_writer`) and :mod:`rac.undo` to decide whether someone
else changed an object since.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from rac.dependencies import _ID_KEY, is_id_like
from rac.serialize import as_fields

#: A value is "cannot tell": neither the same effect nor another one.
UNKNOWN_SAME = None
#: What a value in a logged copy looks like when RAC redacted or cut it: never compared.
_HIDDEN = ("[REDACTED", "…")


def read_item(item: Any) -> Mapping[str, Any] | None:
    """The fields of one item of a lookup's result, or None when RAC cannot read it as
    fields: mappings, JSON objects, pydantic models and dataclasses, namedtuples, and plain
    objects (their attributes) are read; a bare value is not."""
    fields = as_fields(item)
    if isinstance(fields, Mapping):
        return fields
    as_dict = getattr(item, "_asdict", None)
    if callable(as_dict) and isinstance(item, tuple):
        try:
            found = as_dict()
        except Exception:  # noqa: BLE001 - an odd tuple subclass: not readable
            return None
        return found if isinstance(found, Mapping) else None
    if isinstance(item, str | bytes | int | float | bool | list | tuple | set | frozenset) \
            or item is None:
        return None
    attrs = getattr(item, "__dict__", None)
    if isinstance(attrs, Mapping):
        return {k: v for k, v in attrs.items() if isinstance(k, str) and not k.startswith("_")}
    return None


def identity(fields: Mapping[str, Any] | Any) -> dict[str, Any] | None:
    """What identifies an item: every field named like an id (``booking_id``, ``ref``,
    ``customer_id``...) whose value is a string or an integer; a bare id-like value stands for
    itself (``{"": value}``). None when nothing identifies it."""
    if not isinstance(fields, Mapping):
        return {"": fields} if is_id_like(fields) else None
    found = {k: v for k, v in fields.items()
             if type(k) is str and _ID_KEY.search(k) and (
                 type(v) is str or type(v) is int) and v != ""}
    return found or None


def fingerprint(ident: Mapping[str, Any]) -> str:
    """A short, stable hash of an identity (what a snapshot keeps: no values in the clear)."""
    text = json.dumps(dict(ident), sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def same_effect(ident: Mapping[str, Any] | None, other: Any) -> bool | None:
    """Whether the item with identity ``ident`` is the effect whose result is ``other``:
    True when ``other`` holds every one of its id fields with the same values, False when one
    of them differs, None when nothing can tell (``other`` unknown or cut short, no identity,
    ids that do not overlap, or only some of them)."""
    if ident is None or other is None:
        return UNKNOWN_SAME
    data = as_fields(other)
    if isinstance(data, Mapping) and data.get("__truncated__") is True:
        return UNKNOWN_SAME
    if "" in ident:  # a bare id: is it among the other effect's ids?
        value = ident[""]
        if not isinstance(data, Mapping):
            return data == value or UNKNOWN_SAME
        return True if value in (identity(data) or {}).values() else UNKNOWN_SAME
    if not isinstance(data, Mapping):
        return UNKNOWN_SAME
    shared = 0
    for key, value in ident.items():
        if key in data:
            if data[key] != value:
                return False
            shared += 1
    return True if shared == len(ident) else UNKNOWN_SAME


def _visible(value: Any) -> bool:
    return not (isinstance(value, str) and any(value.startswith(h) or value.endswith(h)
                                               for h in _HIDDEN))


@dataclass(frozen=True, slots=True)
class Drift:
    """How an object, as the world shows it now, compares with what a call says it held:
    ``fields``, the fields compared (empty: nothing can tell); ``changed``, the first of them
    whose value differs (None: none does), with what the call said (``then``) and what the
    world shows (``now``)."""

    fields: tuple[str, ...]
    changed: str | None = None
    then: Any = None
    now: Any = None


def drift(now: Mapping[str, Any], *sources: Any, ignore: Collection[str] = ()) -> Drift:
    """Whether ``now`` still holds what ``sources`` say (each a call's arguments, result or
    before-image, read as fields; a later source wins on a field they share): compared on the
    fields they share with ``now``, less ``ignore`` and any value RAC redacted or cut."""
    said: dict[str, Any] = {}
    for src in sources:
        data = as_fields(src)
        if isinstance(data, Mapping):
            said.update(data)
    fields = tuple(k for k, v in said.items() if k in now and k not in ignore
                   and _visible(v) and _visible(now[k]))
    for k in fields:
        if now[k] != said[k]:
            return Drift(fields, k, said[k], now[k])
    return Drift(fields)


def snapshot_of(items: Iterable[Mapping[str, Any] | Any]) -> dict[str, Any]:
    """What a snapshot keeps of the items that matched a call's lookup before it ran: the
    fingerprint of each one's identity, and how many had none."""
    ids: list[str] = []
    unidentified = 0
    for item in items:
        ident = identity(item)
        if ident is None:
            unidentified += 1
        else:
            ids.append(fingerprint(ident))
    return {"ids": sorted(set(ids)), "unidentified": unidentified}


def timestamp(value: Any) -> float | None:
    """A creation time as epoch seconds: a number, or an ISO 8601 string (a naive one is
    taken as UTC); None when it is neither."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        text = value.strip().replace("Z", "+00:00")
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            return None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.timestamp()
    return None


__all__ = ["Drift", "drift", "fingerprint", "identity", "read_item", "same_effect", "snapshot_of",
           "timestamp"]
