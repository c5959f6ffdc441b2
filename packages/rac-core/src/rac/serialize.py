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

#: The names of secrets, one vocabulary for mapping keys (:func:`is_secret_key`) and for
#: ``name=value`` / ``name: value`` pairs in free text (:func:`redact_text`).
SECRET_NAMES = (
    r"password|passwd|passphrase|secret|token(?!s)|api[_ -]?key|apikey|access[_-]?key"
    r"|(?:stripe|signing|encryption|master|client|license|private|aws|ssh|session|secret"
    r"|account)[_-]?key|authorization|credential|session[_-]?id|sessionid|jwt|cookie"
    r"|signature|cvv|cvc")
#: Keys whose values are replaced by :data:`REDACTED` wherever they appear.
SECRET_KEY_PATTERN = re.compile(SECRET_NAMES + r"|card[_-]?(number|num|no)$", re.IGNORECASE)
_SECRET_WHOLE_KEYS = frozenset({"auth", "pwd", "pin", "ssn", "pan", "sig", "otp",
                                "set-cookie", "x-api-key", "bearer"})
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


#: Tokens that are secrets by their shape alone: Stripe-style live/test keys (``sk_live_``,
#: ``sk-live-``, ``rk_test_``), OpenAI-style ``sk-...`` keys, GitHub and Slack tokens, AWS
#: access key ids, JSON web tokens. Each starts with one of :data:`_TOKEN_STARTS`.
_TOKEN = re.compile(
    r"(?:sk|rk)[-_](?:live|test|proj)[-_][A-Za-z0-9_-]{6,}|sk-[A-Za-z0-9_-]{16,}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}(?![0-9A-Z])"
    r"|eyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}")
_TOKEN_STARTS = ("sk-", "sk_", "rk-", "rk_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "xox",
                 "AKIA", "eyJ")
#: ``Bearer ...``, ``Basic ...``, ``Token ...`` (the word is checked case-insensitively).
_BEARER = re.compile(r"[BbTt][A-Za-z]{4,5}\s+(?=[A-Za-z0-9._~+/=-]{6})")
_BEARER_WORDS = frozenset({"bearer", "basic", "token"})
_BEARER_VALUE = re.compile(r"[A-Za-z0-9._~+/=-]+")
#: Where a digit run long enough for a card number starts (checked by CARD_NUMBER_PATTERN).
_DIGITS = re.compile(r"[0-9][0-9 -]{11,}[0-9]")
#: What may stand between a secret's name and its value: ``=``, ``:``, quotes, spaces.
_SEPARATOR = re.compile(r"[=:]")
#: A secret's name before a separator (``password``, ``x_api_key``, ``"token"``, ``API key
#: provided``, ``?key``): the words that name one.
_NAME_WORDS = re.compile(r"(?:" + SECRET_NAMES + r"|auth|sig)", re.IGNORECASE)
#: The characters of a secret's name, read backwards from a separator (on the reversed text).
_NAME_REVERSED = re.compile(r"\s*[\"']?((?:dedivorp\s+)?)([a-z0-9_.-]*[a-z0-9_-])([?&;]?)")
_QUERY_NAMES = frozenset({"key", "sig", "code", "pwd"})
_WORD_BEFORE = re.compile(r" ([a-z]{2,20})")


@functools.lru_cache(maxsize=4096)
def _names_a_secret(name: str, query: bool) -> bool:
    return (query and name in _QUERY_NAMES) or _NAME_WORDS.search(name) is not None


def _secret_name_before(text: str, i: int) -> bool:
    """True if the separator at ``text[i]`` follows a secret's name (``password``,
    ``x_api_key "``, ``API key provided``, ``?key``): read backwards from it, with one
    anchored match on the reversed 64 characters before it."""
    before = text[max(0, i - 64):i].lower()[::-1]
    m = _NAME_REVERSED.match(before)
    if m is None:
        return False
    name = m.group(2)[::-1]
    if m.group(1) and name.endswith(("api key", "api_key", "api-key")):
        return True
    if m.group(1):  # "... key provided:": the words before "provided"
        rest = before[m.end(1):]
        words = re.match(r"[a-z _-]{1,20}", rest)
        return words is not None and _NAME_WORDS.search(words.group(0)[::-1]) is not None
    if _names_a_secret(name, bool(m.group(3))):
        return True
    two = _WORD_BEFORE.match(before, m.end(2))  # "api key", "secret token": two words
    return two is not None and _names_a_secret(f"{two.group(1)[::-1]} {name}", False)


_VALUE_AFTER = re.compile(r"\s*[\"']?([^\s&\"',;}]+)")
_ASCII_WORD = re.compile(r"[A-Za-z0-9_]")


def _secret_spans(text: str) -> list[tuple[int, int, str]]:
    """Where ``text`` spells out a secret: (start, end, replacement) of each, in no order.
    Every search is a C-level scan for a literal or a character class; Python code runs only
    at the (rare) places such a scan stops, so the cost is linear in the text."""
    spans: list[tuple[int, int, str]] = []
    find = text.find
    for start in _TOKEN_STARTS:  # tokens secret by their shape
        i = find(start)
        while i != -1:
            if i == 0 or not _ASCII_WORD.match(text, i - 1):
                m = _TOKEN.match(text, i)
                if m is not None:
                    spans.append((i, m.end(), REDACTED))
            i = find(start, i + 1)
    for m in _BEARER.finditer(text):  # Bearer / Basic / Token credentials
        word = m.group(0).split(None, 1)[0].lower()
        i = m.start()
        if word in _BEARER_WORDS and (i == 0 or not _ASCII_WORD.match(text, i - 1)):
            v = _BEARER_VALUE.match(text, m.end())
            if v is not None and v.end() - m.end() >= 6:
                spans.append((m.end(), v.end(), REDACTED))
    for m in _SEPARATOR.finditer(text):  # name=value, name: value, ?key=value
        i = m.start()
        if not _secret_name_before(text, i):
            continue
        v = _VALUE_AFTER.match(text, i + 1)
        if v is not None:
            spans.append((v.start(1), v.end(1), REDACTED))
    for m in _DIGITS.finditer(text):  # card numbers that pass the Luhn check
        lo = max(0, m.start() - 1)
        for c in CARD_NUMBER_PATTERN.finditer(text, lo, min(len(text), m.end() + 1)):
            if _luhn_ok(re.sub(r"\D", "", c.group(0))):
                spans.append((c.start(), c.end(), REDACTED))
    return spans


#: Every place a secret may start, in one pattern: a separator (``=``, ``:``), the start of a
#: token secret by its shape, ``Bearer``/``Basic``/``Token``, a digit run long enough for a
#: card number. One call on a short text says it is clean (most values are); on a long text
#: the separate scans of :func:`_secret_spans` are faster (this one stops at every ``e``,
#: ``s``, ``t``...).
_MAY_HOLD_A_SECRET = re.compile(
    r"(?P<sep>[=:])|(?P<tok>(?:sk|rk)[-_]|gh[pousr]_|xox[abprs]-|AKIA|eyJ)"
    r"|(?P<bear>(?:[Bb]earer|BEARER|[Bb]asic|BASIC|[Tt]oken|TOKEN)\s+)"
    r"|(?P<card>[0-9][0-9 -]{11,}[0-9])")
_SHORT = 256


def _short_spans(text: str) -> list[tuple[int, int, str]]:
    """:func:`_secret_spans` of a short text, from the one scan of :data:`_MAY_HOLD_A_SECRET`
    (one call instead of a scan per shape: what a short text costs is calls, not characters)."""
    spans: list[tuple[int, int, str]] = []
    for m in _MAY_HOLD_A_SECRET.finditer(text):
        kind, i = m.lastgroup, m.start()
        if kind == "sep":
            if _secret_name_before(text, i):
                v = _VALUE_AFTER.match(text, i + 1)
                if v is not None:
                    spans.append((v.start(1), v.end(1), REDACTED))
        elif kind == "card":
            for c in CARD_NUMBER_PATTERN.finditer(text, max(0, i - 1),
                                                  min(len(text), m.end() + 1)):
                if _luhn_ok(re.sub(r"\D", "", c.group(0))):
                    spans.append((c.start(), c.end(), REDACTED))
        elif i and _ASCII_WORD.match(text, i - 1):
            continue  # inside a word: "task_id", "subtoken"
        elif kind == "tok":
            t = _TOKEN.match(text, i)
            if t is not None:
                spans.append((i, t.end(), REDACTED))
        else:
            v = _BEARER_VALUE.match(text, m.end())
            if v is not None and v.end() - m.end() >= 6:
                spans.append((m.end(), v.end(), REDACTED))
    return spans


def redact_text(text: str) -> str:
    """``text`` with the secrets it spells out replaced by :data:`REDACTED`: bearer tokens,
    ``name=value``/``name: value`` pairs whose name names a secret (``?api_key=...``,
    ``password=...``, ``API key provided: ...``), ``?key=...`` in URLs, tokens secret by their
    shape (``sk_live_...``, ``sk-...``, ``ghp_...``, JWTs), and card numbers that pass the
    Luhn check. Applied to error messages and string values before they are stored or
    emitted. Linear in the text's length (see :func:`_secret_spans`)."""
    n = len(text)
    if n < 6:
        return text
    spans = _short_spans(text) if n <= _SHORT else _secret_spans(text)
    if not spans:
        return text
    spans.sort()
    out: list[str] = []
    at = 0
    for start, end, repl in spans:
        if start < at:  # overlaps one already replaced
            if end > at:
                at = end
            continue
        out.append(text[at:start])
        out.append(repl)
        at = end
    out.append(text[at:])
    return "".join(out)


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
    strings hold nothing that could be a secret (most tool arguments and results): such a dict
    needs no redaction and no cap, so the copy is what the log stores. None otherwise."""
    if type(value) is not dict or len(value) > 64:
        return None
    if not _PLAIN_KEY_SET.issuperset(value) and not _learn_keys(value):
        return None
    for v in value.values():
        tv = type(v)
        if tv is str:
            # long enough to hold a card number, or a short "key=value" that may spell out a
            # secret: checked here when short (ids, UUIDs, timestamps, URLs: the redaction
            # finds nothing and hands the same string back), else left to the general path
            n = len(v)
            if (n >= 13 or (n >= 5 and ("=" in v or ":" in v))) and (
                    n > _SHORT or redact_text(v) is not v):
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
    JSON-safe, redacted copy, capped at ``max_chars``.

    A value that may be over the cap (:func:`_rough_size` stops counting there) is redacted
    only as far as the truncated marker shows it: its size and hash come from one
    serialisation of the value (``json.dumps``, in C), and redaction runs over the first
    ``max_chars // 4`` characters (and a margin) only, so a 1 MB result costs a small multiple
    of serialising it, not a redaction pass over all of it."""
    copied = plain_copy(value)
    if copied is not None:
        return copied
    if _rough_size(value, max_chars) <= max_chars:
        return cap(to_jsonable(value), max_chars)
    return _capped(value, max_chars)


#: Characters redacted past the end of a truncated marker's prefix: a secret the cut
#: falls inside is still seen whole enough to be recognised.
_MARGIN = 512


def _capped(value: Any, max_chars: int) -> Any:
    """:func:`store_value` of a value that may exceed ``max_chars``."""
    try:
        text = json.dumps(value, default=_exact_leaf, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):  # odd keys, a cycle: the walk copes
        text = json.dumps(to_jsonable(value, redact=False), default=str, ensure_ascii=False)
    if len(text) <= max_chars:  # the estimate was high: it fits, redacted whole
        return cap(to_jsonable(value), max_chars)
    keep = max(max_chars // 4, 256)
    head, _ = _head(value, keep + _MARGIN, 0)
    prefix = json.dumps(head, default=str, ensure_ascii=False)[:keep]
    return {"__truncated__": True, "sha256": hashlib.sha256(text.encode()).hexdigest(),
            "size": len(text), "prefix": prefix}


def _exact_leaf(value: Any) -> Any:
    return to_jsonable(value, redact=False)


def _head(value: Any, budget: int, depth: int) -> tuple[Any, int]:
    """A redacted JSON-safe copy of the start of ``value``: at least its first ``budget``
    characters of JSON when it has that many, and little more; with the characters used."""
    if type(value) is str:
        if len(value) > budget:
            value = value[:budget]
        return redact_text(value), len(value) + 2
    if depth > 32 or not isinstance(value, Mapping | list | tuple):
        leaf = to_jsonable(value, _depth=depth)
        if type(leaf) is str:
            return _head(leaf, budget, depth)
        return leaf, len(json.dumps(leaf, default=str, ensure_ascii=False))
    used = 2
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if used > budget:
                break
            key = str(k)
            if is_secret_key(key) and v is not None:
                out[key], n = REDACTED, len(REDACTED) + 2
            else:
                out[key], n = _head(v, budget - used, depth + 1)
            used += len(key) + 4 + n
        return out, used
    items: list[Any] = []
    for v in value:
        if used > budget:
            break
        item, n = _head(v, budget - used, depth + 1)
        items.append(item)
        used += n + 2
    return items, used
