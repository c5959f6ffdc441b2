"""Which earlier call a later call depends on: where an id-like value returned by one call is
passed as an argument of another. Ordinary strings shared by chance (a city, a date, a name)
never make an edge."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
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


def argument_values(args: Mapping[str, Any]) -> list[Any]:
    """Every string and integer in a call's arguments, nested ones included (booleans are
    not integers here). The common case, a flat dict of scalars, is read in one pass."""
    out: list[Any] = []
    stack: list[Any] | None = None
    for v in args.values():
        t = type(v)
        if t is str or t is int:
            out.append(v)
        elif v is None or t is float or t is bool:
            continue
        else:
            if stack is None:
                stack = []
            stack.append(v)
    while stack:
        v = stack.pop()
        if isinstance(v, Mapping):
            stack.extend(v.values())
        elif isinstance(v, list | tuple):
            stack.extend(v)
        elif isinstance(v, str | int) and not isinstance(v, bool):
            out.append(v)
    return out


class DependencyIndex:
    """Maps id-like values produced by completed calls to the seq that produced them.

    A value counts as produced by a call only when it appears in that call's result and not in
    its own arguments or in any earlier call's arguments (a customer id echoed back by every
    booking is nobody's product). A tool may narrow what it produces to named result fields
    (``produces``), or to nothing. Indexing is lazy about what counts as an id: candidates are
    remembered cheaply and :func:`is_id_like` runs only when a later argument matches one.
    """

    def __init__(self) -> None:
        # value -> (seq, key): key is the result field it came from, or None once verified.
        self._producers: dict[Any, tuple[int, str | None]] = {}
        #: every scalar any call of the run was given
        self._inputs: set[Any] = set()
        #: what :meth:`add_result_later` and ``dependencies(..., owned=True)`` left for the next
        #: lookup, in the order it happened: (seq, result, args, fields); seq None for inputs
        self._later: list[tuple[int | None, Any, Mapping[str, Any] | None,
                                Iterable[str] | None]] = []

    def _catch_up(self) -> None:
        """Index what was left for later, in order (an input noted before a result was
        returned stays an input)."""
        later = self._later
        if later:
            self._later = []
            for seq, result, args, fields in later:
                if seq is None:
                    if args:
                        self._note_inputs(argument_values(args))
                else:
                    self._index(seq, result, args, fields)

    def add_result_later(self, seq: int, result: Any, args: Mapping[str, Any] | None, *,
                         fields: Iterable[str] | None = None) -> None:
        """:meth:`add_result`, done when a lookup next needs it: for the log's own copies of a
        call's result and arguments, which nobody changes afterwards."""
        self._later.append((seq, result, args, fields))

    def add_result(self, seq: int, result: Any, args: Mapping[str, Any] | None = None,
                   flat_args: bool = False, *, fields: Iterable[str] | None = None) -> None:
        """Remember the ids a completed call returned (the first producer of a value wins).

        ``fields``, when given, are the only result fields whose values count (an empty list:
        none). ``flat_args`` is accepted for compatibility and ignored."""
        self._catch_up()
        self._index(seq, result, args, fields)

    def _index(self, seq: int, result: Any, args: Mapping[str, Any] | None,
               fields: Iterable[str] | None) -> None:
        own: Collection[Any] = argument_values(args) if args else ()
        if len(own) > 8:
            own = set(own)
        inputs = self._inputs
        producers = self._producers
        if fields is not None:
            data = as_fields(result)
            if not isinstance(data, Mapping):
                return
            for f in fields:
                v = data.get(f)
                if isinstance(v, str | int) and not isinstance(v, bool) and v not in own \
                        and v not in inputs:
                    producers.setdefault(v, (seq, None))
            return
        if type(result) is dict:
            for k, v in result.items():
                t = type(v)
                if (t is str and len(v) >= 4) or (t is int and v >= 1000):
                    if v not in producers and v not in own and v not in inputs:
                        producers[v] = (seq, k)
                elif t is dict or t is list or t is tuple:
                    break
            else:
                return
        for value in result_ids(result):
            if value not in own and value not in inputs:
                producers.setdefault(value, (seq, None))

    def forget(self, seqs: Iterable[int]) -> None:
        """Drop the ids produced by these records (they were compensated)."""
        self._catch_up()
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

    def dependencies(self, args: Mapping[str, Any], *, owned: bool = False) -> list[int]:
        """Seqs of the calls whose ids appear in ``args``; the values of ``args`` are
        remembered as inputs of the run (no later call produces them). ``owned``: ``args``
        is the log's own copy, which nobody changes, so remembering it may wait."""
        if self._later:
            self._catch_up()
        elif not self._producers:  # nothing produced yet: nothing to depend on
            if owned:
                self._later.append((None, None, args, None))
            else:
                self._note_inputs(argument_values(args))
            return []
        producers = self._producers
        inputs = self._inputs
        room = len(inputs) < 100_000
        found: set[int] | None = None
        for v in argument_values(args):
            if v in producers:
                seq = self._producer(v)
                if seq is not None:
                    if found is None:
                        found = set()
                    found.add(seq)
            elif room:
                inputs.add(v)
        return sorted(found) if found else []

    def _note_inputs(self, values: list[Any]) -> None:
        """Remember argument values as inputs (bounded), except those already produced."""
        if len(self._inputs) < 100_000:
            producers = self._producers
            self._inputs.update(v for v in values if v not in producers)
