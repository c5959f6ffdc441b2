"""The two copies RAC keeps of a value: the stored copy (JSON-safe, redacted, capped: what the
log displays, exports and emits) and, when that differs, the exact copy an undo needs."""

from __future__ import annotations

from typing import Any

from rac.serialize import cap, plain_copy, redact_text, store_value, to_jsonable


def stored_copy(value: Any, max_chars: int) -> Any:
    """What the log shows of ``value``."""
    return store_value(value, max_chars)


def exact(value: Any) -> Any:
    """``value`` as JSON-safe data, unredacted and untruncated."""
    return to_jsonable(value, redact=False)


def stored_and_exact(value: Any, max_chars: int) -> tuple[Any, Any]:
    """The stored copy of ``value``, and its exact copy when that differs (else None)."""
    plain = plain_copy(value)
    if plain is not None:
        return plain, None
    stored = cap(to_jsonable(value), max_chars)
    full = exact(value)
    return stored, (None if full == stored else full)


def exact_copy(value: Any, stored: Any) -> dict[str, Any] | None:
    """Undo data for compensation arguments: None when the stored copy is already exact."""
    full = exact(value)
    return None if full == stored else {"args": full}


def error_text(err: BaseException) -> str:
    """An error as the log and the agent see it: its message (or type), secrets scrubbed,
    at most 2,000 characters."""
    text = str(err) or type(err).__name__
    return redact_text(text)[:2000]
