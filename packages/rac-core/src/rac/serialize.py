"""Turning tool arguments and results into JSON-safe, redacted, size-capped values for the log."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import json.scanner
import re
from collections.abc import Callable, Mapping
from typing import Any

#: Keys whose values are replaced by :data:`REDACTED` wherever they appear.
SECRET_KEY_PATTERN = re.compile(
    r"password|passwd|passphrase|secret|token(?!s)|api[_-]?key|authorization|credential|"
    r"private[_-]?key|card[_-]?(number|num|no)$|cvv|cvc",
    re.IGNORECASE,
)
_SECRET_WHOLE_KEYS = frozenset({"auth", "pwd", "pin", "ssn", "pan", "cookie"})
#: Digit runs that look like payment card numbers (13 to 19 digits, spaces or dashes allowed).
CARD_NUMBER_PATTERN = re.compile(r"\b(?:\d[ -]?){12,18}\d\b")
REDACTED = "[REDACTED]"
#: Largest serialised size (characters) of one stored value before it is truncated.
DEFAULT_MAX_CHARS = 64_000


def _luhn_ok(digits: str) -> bool:
    total, alt = 0, False
    for ch in reversed(digits):
        d = ord(ch) - 48
        if alt:
            d *= 2
            if d > 9:
                d -= 9
        total += d
        alt = not alt
    return total % 10 == 0


#: Secrets written inside free text: a bearer/basic credential, and ``key=value`` pairs (query
#: strings, form bodies, ``password: ...``) whose key names a secret.
_BEARER_PATTERN = re.compile(r"\b(Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=-]{6,}", re.IGNORECASE)
_SECRET_PAIR_PATTERN = re.compile(
    r"(?P<key>[A-Za-z0-9_.-]*(?:password|passwd|passphrase|secret|token|api[_-]?key|apikey"
    r"|access[_-]?key|auth|credential|signature|sig|session[_-]?id|cvv|cvc)[A-Za-z0-9_.-]*)"
    r"(?P<sep>[\"']?\s*[=:]\s*[\"']?)(?P<value>[^\s&\"',;}]+)",
    re.IGNORECASE)


def redact_text(text: str) -> str:
    """``text`` with the secrets it spells out replaced by :data:`REDACTED`: bearer tokens,
    ``key=value``/``key: value`` pairs whose key names a secret (``?api_key=...``,
    ``password=...``), and card numbers that pass the Luhn check. Applied to error messages
    and string values before they are stored or emitted."""
    if len(text) < 6:
        return text
    if any(c in text for c in "=:") or " " in text:
        text = _BEARER_PATTERN.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
        text = _SECRET_PAIR_PATTERN.sub(
            lambda m: f"{m.group('key')}{m.group('sep')}{REDACTED}", text)
    if len(text) < 13 or not any(c.isdigit() for c in text):
        return text

    def repl(m: re.Match[str]) -> str:
        digits = re.sub(r"\D", "", m.group(0))
        return REDACTED if _luhn_ok(digits) else m.group(0)

    return CARD_NUMBER_PATTERN.sub(repl, text)


_redact_text = redact_text  # the name older modules import


def _redact_json_text(text: str, depth: int) -> str:
    """A JSON document held in a string, with its secrets redacted (re-encoded only if
    something was redacted); text that is not JSON is treated as text."""
    try:
        data = json.loads(text)
    except ValueError:
        return _redact_text(text)
    clean = to_jsonable(data, _depth=depth + 1)
    if clean == data:
        return text
    return json.dumps(clean, ensure_ascii=False)


@functools.lru_cache(maxsize=4096)
def is_secret_key(key: str) -> bool:
    """True if a mapping key names a secret (password, token, api_key, card number, ...)."""
    return key.lower() in _SECRET_WHOLE_KEYS or bool(SECRET_KEY_PATTERN.search(key))


#: String keys known not to name a secret; bounded, read on every call.
_PLAIN_KEY_SET: set[str] = set()
_OPENERS = ("{", "[")
_CLOSERS = ("}", "]")
#: The standard decoder's scanner: (value, end index) of the JSON text starting at an index
_scan_json: Callable[[str, int], tuple[Any, int]] = json.scanner.make_scanner(
    json.JSONDecoder())  # type: ignore[arg-type]  # typeshed types the factory as its own arg
_SCALAR_TYPES = frozenset({int, float, bool, type(None)})


def to_jsonable(value: Any, *, redact: bool = True, _depth: int = 0) -> Any:
    """A JSON-safe copy of ``value``: pydantic models and dataclasses become dicts, secrets are
    redacted, JSON strings stay strings, and anything else unknown becomes a tagged ``repr``."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        if redact and value[:1] in ("{", "[") and value[-1:] in ("}", "]"):
            return _redact_json_text(value, _depth)
        return _redact_text(value) if redact else value
    if _depth > 32:
        return {"__type__": type(value).__name__, "repr": "<nested too deep>"}
    if type(value) is dict:
        copied = plain_copy(value)  # most tool arguments and results
        if copied is not None:
            return copied
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            key = str(k)
            if redact and is_secret_key(key) and v is not None:
                out[key] = REDACTED
            else:
                out[key] = to_jsonable(v, redact=redact, _depth=_depth + 1)
        return out
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v, redact=redact, _depth=_depth + 1) for v in value]
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            return to_jsonable(dump(mode="json"), redact=redact, _depth=_depth + 1)
        except Exception:  # noqa: BLE001 - fall through to repr
            pass
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_jsonable(dataclasses.asdict(value), redact=redact, _depth=_depth + 1)
    if isinstance(value, bytes):
        return {"__type__": "bytes", "len": len(value),
                "sha256": hashlib.sha256(value).hexdigest()}
    text = repr(value)
    return {"__type__": f"{type(value).__module__}.{type(value).__qualname__}",
            "repr": _redact_text(text)[:2000]}


def as_fields(value: Any) -> Any:
    """Read ``value`` as structured data: parse JSON strings, dump pydantic models and dataclasses.

    Used for mapping arguments and detecting errors; returns the value unchanged when it has no
    structure (a plain string, a number).
    """
    if type(value) is str or isinstance(value, str):
        s = value
        if s[:1] not in _OPENERS or s[-1:] not in _CLOSERS:
            s = value.strip()
            if s[:1] not in _OPENERS or s[-1:] not in _CLOSERS:
                return value
        # json.loads minus its checks and whitespace scans: s is a str, and starts and ends
        # with a bracket (tool results are read on every call)
        try:
            parsed, end = _scan_json(s, 0)
        except (ValueError, StopIteration):
            return value
        return parsed if end == len(s) else value
    if isinstance(value, Mapping):
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            return dump()
        except Exception:  # noqa: BLE001
            return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def _rough_size(value: Any, limit: int) -> int:
    """A cheap upper-bound-ish estimate of a JSON value's size, stopping once past ``limit``."""
    stack = [value]
    size = 0
    while stack and size <= limit:
        v = stack.pop()
        if type(v) is str:
            size += len(v) + 2
        elif type(v) is dict:
            size += 2
            for k, x in v.items():
                size += len(k) + 4
                stack.append(x)
        elif type(v) is list:
            size += 2
            stack.extend(v)
        else:
            size += 24
    return size


def cap(value: Any, max_chars: int = DEFAULT_MAX_CHARS) -> Any:
    """Return ``value`` or, when its JSON exceeds ``max_chars``, a marker holding its hash,
    its size and a truncated prefix, so the log stays bounded and nothing is silently lost."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str) and len(value) <= max_chars:
        return value
    if _rough_size(value, max_chars // 2) <= max_chars // 2:
        return value
    text = json.dumps(value, default=str, ensure_ascii=False)
    if len(text) <= max_chars:
        return value
    return {"__truncated__": True, "sha256": hashlib.sha256(text.encode()).hexdigest(),
            "size": len(text), "prefix": text[: max(max_chars // 4, 256)]}


def plain_copy(value: Any) -> dict[str, Any] | None:
    """A copy of ``value`` if it is a small flat dict of scalars under plain string keys, whose
    strings are too short to hold a card number (most tool arguments and results): such a dict
    needs no redaction and no cap, so the copy is what the log stores. None otherwise."""
    if type(value) is not dict or len(value) > 64:
        return None
    if not _PLAIN_KEY_SET.issuperset(value) and not _learn_keys(value):
        return None
    for v in value.values():
        tv = type(v)
        if tv is str:
            # long enough to hold a card number, or a short "key=value" that may spell out a
            # secret: the general path redacts it
            if len(v) >= 13 or (len(v) >= 5 and ("=" in v or ":" in v)):
                return None
        elif tv not in _SCALAR_TYPES:
            return None
    return dict(value)


def _learn_keys(value: dict[Any, Any]) -> bool:
    """True if every key of ``value`` is a plain (non-secret) string; remembers plain keys so
    that :func:`plain_copy` checks them all at once next time (bounded)."""
    for k in value:
        if k not in _PLAIN_KEY_SET:
            if type(k) is not str or is_secret_key(k):
                return False
            if len(_PLAIN_KEY_SET) < 4096:
                _PLAIN_KEY_SET.add(k)
    return True


def store_value(value: Any, max_chars: int = DEFAULT_MAX_CHARS) -> Any:
    """Everything a value goes through before it is written to the log or an event: a
    JSON-safe, redacted copy, capped at ``max_chars``."""
    copied = plain_copy(value)
    if copied is not None:
        return copied
    return cap(to_jsonable(value), max_chars)
