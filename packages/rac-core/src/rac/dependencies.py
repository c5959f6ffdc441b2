"""Which earlier call a later call depends on: where an id-like value returned by one call is
passed as an argument of another. Ordinary strings shared by chance (a city, a date, a name)
never make an edge."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from rac.serialize import as_fields

_ID_KEY = re.compile(r"(^|_)(id|ids|ref|reference|number|no|code|confirmation|token)$|Id$",
                     re.IGNORECASE)
_DATE_LIKE = re.compile(
    r"^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$|^\d{1,2}:\d{2}"
    r"|^\d{1,2}[-/ .][A-Za-z]{3,9}[-/ .]\d{2,4}$|^[A-Za-z]{3,9}[-/ .]\d{1,2}[-/ .,]+\d{2,4}$")


_ID_CHARS = re.compile(r"[A-Za-z0-9][A-Za-z0-9_\-:.]{3,127}")
_isdigit = str.isdigit
_isalpha = str.isalpha


def is_id_like(value: Any) -> bool:
    """True for opaque identifiers (``"F-1023"``, ``"bk_9f2c"``, a UUID): mixed letters and
    digits, no spaces, not a date or time. Words and bare numbers are not ids."""
    if type(value) is not str or not _ID_CHARS.fullmatch(value):
        return False
    if not any(map(_isdigit, value)) or not any(map(_isalpha, value)):
        return False
    return not _DATE_LIKE.match(value)


def result_ids(result: Any, *, limit: int = 64) -> list[Any]:
    """Id-like values in a result: values of id-named fields (``booking_id``, ``ref``) and opaque
    id-like strings anywhere, including a bare id returned on its own."""
    out: list[Any] = []
    if type(result) is dict:
        for k, v in result.items():  # fast path: a flat dict of scalars
            tv = type(v)
            if tv is str:
                if is_id_like(v):
                    out.append(v)
            elif tv is int:
                if v >= 1000 and _ID_KEY.search(k):
                    out.append(v)
            elif tv is not float and tv is not bool and v is not None:
                break
        else:
            return out[:limit]
        out = []

    def walk(value: Any, key: str | None, depth: int) -> None:
        if len(out) >= limit or depth > 4:
            return
        value = as_fields(value) if depth else value
        if isinstance(value, Mapping):
            for k, v in value.items():
                walk(v, str(k), depth + 1)
        elif isinstance(value, list | tuple):
            for v in value[:limit]:
                walk(v, key, depth + 1)
        elif isinstance(value, str):
            if is_id_like(value):
                out.append(value)
        elif isinstance(value, int) and not isinstance(value, bool) and key is not None:
            if _ID_KEY.search(key) and value >= 1000:
                out.append(value)

    walk(as_fields(result), None, 0)
    return out


#: key -> True if the key names an id (``booking_id``, ``ref``); bounded.
_ID_KEYS: dict[str, bool] = {}


def first_result_id(result: Any) -> Any:
    """A short handle for a result in a report: the value of its first id-named field
    (``booking_id``, ``ref``) that is a short word or a number of 4+ digits, else the first
    id-like value anywhere in it; None if none."""
    if type(result) is dict:
        keys = _ID_KEYS
        for k, v in result.items():
            named = keys.get(k)
            if named is None:
                if type(k) is not str:
                    continue
                named = bool(_ID_KEY.search(k))
                if len(keys) < 4096:
                    keys[k] = named
            if named:
                t = type(v)
                if t is str:
                    if v and len(v) <= 128 and " " not in v:
                        return v
                elif t is int and v >= 1000:
                    return v
    ids = result_ids(result, limit=1)
    return ids[0] if ids else None


def argument_values(args: Mapping[str, Any]) -> Iterable[Any]:
    """Every scalar in a call's arguments, nested ones included."""
    stack: list[Any] = list(args.values())
    while stack:
        v = stack.pop()
        if isinstance(v, Mapping):
            stack.extend(v.values())
        elif isinstance(v, list | tuple):
            stack.extend(v)
        elif isinstance(v, str | int) and not isinstance(v, bool):
            yield v


def _echoed_nested(value: Any, args: Mapping[str, Any]) -> bool:
    """True if ``value`` is among the call's nested arguments (inside a dict or list)."""
    for v in args.values():
        t = type(v)
        if t is not str and t is not int and t is not float and t is not bool and v is not None:
            return value in set(argument_values(args))  # nested arguments: the rare case
    return False


class DependencyIndex:
    """Maps id-like values produced by completed calls to the seq that produced them.

    Indexing is lazy about what counts as an id: a flat result's strings and large integers are
    remembered as candidates (a dict insert each), and :func:`is_id_like` runs only when a later
    call's argument matches one, which is rare, instead of on every value of every result.
    """

    def __init__(self) -> None:
        # value -> (seq, key): key is the result field it came from, or None once verified.
        self._producers: dict[Any, tuple[int, str | None]] = {}

    def add_result(self, seq: int, result: Any, args: Mapping[str, Any] | None = None,
                   flat_args: bool = False) -> None:
        """Remember the ids a completed call returned (the first producer of a value wins).

        Values the call was given in ``args`` and merely echoes back (a customer id, say) are
        not its products: a later call passing them does not depend on this one.
        ``flat_args`` says the arguments hold no nested dicts or lists (spares a scan).
        """
        producers = self._producers
        if type(result) is dict:
            given = args.values() if args else ()
            for k, v in result.items():
                t = type(v)
                if (t is str and len(v) >= 4) or (t is int and v >= 1000):
                    if v not in producers and v not in given and not (
                            given and not flat_args
                            and _echoed_nested(v, args)):  # type: ignore[arg-type]
                        producers[v] = (seq, k)
                elif t is dict or t is list or t is tuple:
                    break
            else:
                return
        echoed: set[Any] | None = set(argument_values(args)) if args else None
        for value in result_ids(result):
            if not (echoed and value in echoed):
                producers.setdefault(value, (seq, None))

    def forget(self, seqs: Iterable[int]) -> None:
        """Drop the ids produced by these records (they were compensated)."""
        gone = set(seqs)
        if gone:
            self._producers = {v: p for v, p in self._producers.items() if p[0] not in gone}

    def _producer(self, value: Any) -> int | None:
        found = self._producers.get(value)
        if found is None:
            return None
        seq, key = found
        if key is None:
            return seq
        if type(value) is str:
            return seq if is_id_like(value) else None
        return seq if _ID_KEY.search(str(key)) else None

    def dependencies(self, args: Mapping[str, Any]) -> list[int]:
        """Seqs of the calls whose ids appear in ``args``."""
        producers = self._producers
        if not producers:
            return []
        found: set[int] | None = None
        for v in args.values():  # fast path: flat arguments, usually matching nothing
            t = type(v)
            if t is str or t is int:
                if v in producers:
                    seq = self._producer(v)
                    if seq is not None:
                        if found is None:
                            found = set()
                        found.add(seq)
            elif t is not float and t is not bool and v is not None:
                found = set()
                for x in argument_values(args):
                    if x in producers:
                        seq = self._producer(x)
                        if seq is not None:
                            found.add(seq)
                break
        return sorted(found) if found else []
