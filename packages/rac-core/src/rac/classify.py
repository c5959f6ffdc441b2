"""Deciding whether a failure is worth retrying, and whether a returned result is a failure.

Only structured signals count: exception types, status codes, ``Retry-After``, and result fields
(``error``, ``status``, ``success``/``ok``). Free text is never searched for words like
"failed".
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from rac.errors import AmbiguousError, PermanentError, ResultError, TransientError
from rac.serialize import as_fields, to_jsonable


class ErrorKind(StrEnum):
    """``transient`` failures happened before any effect and are retried; ``permanent`` ones go
    straight to alternatives; ``ambiguous`` ones may have taken effect (a timeout, a connection
    lost after sending): retried only where a repeat is safe, else reconciled or in doubt."""

    TRANSIENT = "transient"
    PERMANENT = "permanent"
    AMBIGUOUS = "ambiguous"


@dataclass(frozen=True, slots=True)
class Classification:
    """The verdict on one failure: its kind and, if the error said so, when to retry.

    ``kind`` may be given as its string (``Classification("ambiguous")``); anything else is
    refused at once. ``fallback`` is True when no rule knew the error (an exception of an
    unknown type, taken as permanent): compensations are still retried after such errors.
    """

    kind: ErrorKind
    retry_after: float | None = None
    reason: str = ""
    fallback: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.kind, ErrorKind):
            try:
                object.__setattr__(self, "kind", ErrorKind(self.kind))
            except ValueError:
                raise ValueError(f"Classification kind must be one of "
                                 f"{[k.value for k in ErrorKind]}, got {self.kind!r}") from None

    @property
    def transient(self) -> bool:
        """True if the failure happened before any effect and may go away by retrying."""
        return self.kind is ErrorKind.TRANSIENT

    @property
    def ambiguous(self) -> bool:
        """True if the call may have taken effect."""
        return self.kind is ErrorKind.AMBIGUOUS


#: Exception class names (anywhere in the MRO) that say the request never reached the tool.
_TRANSIENT_NAME_PARTS = ("ConnectError", "ConnectTimeout", "ConnectionRefused", "ServiceUnavailable",
                         "TooManyRequests", "RateLimit", "Throttl")
#: Exception class names that say the request may have been carried out: it was sent and
#: the answer was lost.
_AMBIGUOUS_NAME_PARTS = ("Timeout", "TimedOut", "RemoteProtocolError", "ConnectionReset",
                         "ConnectionAborted", "ServerDisconnected", "IncompleteRead",
                         "ConnectionClosed", "ConnectionError")
_FAILED_STATUSES = {"error", "failed", "failure"}  # all begin with e or f (see below)
_SIGNAL_KEYS = frozenset({"error", "status", "success", "ok"})
_FLAG_KEYS = _SIGNAL_KEYS - {"status"}


def _status_code(err: BaseException) -> int | None:
    for obj in (err, getattr(err, "response", None)):
        if obj is None:
            continue
        for attr in ("status_code", "status", "code", "http_status"):
            val = getattr(obj, attr, None)
            if isinstance(val, int) and 100 <= val <= 599:
                return val
    return None


def _retry_after(err: BaseException) -> float | None:
    val = getattr(err, "retry_after", None)
    if isinstance(val, int | float):
        return float(val)
    for obj in (err, getattr(err, "response", None)):
        headers = getattr(obj, "headers", None)
        if headers is None:
            continue
        try:
            raw = headers.get("retry-after") or headers.get("Retry-After")
        except Exception:  # noqa: BLE001 - odd header containers
            raw = None
        if raw is not None:
            try:
                return max(float(raw), 0.0)
            except (TypeError, ValueError):
                return None
    return None


def classify_http_status(code: int) -> ErrorKind:
    """408, 425, 429 and 503 are transient (the request was not carried out); 500, 502, 504
    and other 5xx are ambiguous (it may have been); other 4xx are permanent."""
    if code in (408, 425, 429, 503):
        return ErrorKind.TRANSIENT
    if code >= 500:
        return ErrorKind.AMBIGUOUS
    return ErrorKind.PERMANENT


def default_classify(error: BaseException) -> Classification:
    """RAC's built-in classification of an exception.

    ``rac.TransientError`` and ``ConnectionRefusedError`` (nothing was sent), 408/425/429/503
    and ``Retry-After``: transient. ``rac.AmbiguousError``, ``TimeoutError``, a connection
    reset, aborted or closed, HTTP 5xx other than 503, and exception types whose names say
    timeout or lost connection: ambiguous. ``rac.PermanentError``, other 4xx: permanent. An
    exception of any other type: permanent, as a ``fallback``.
    """
    if isinstance(error, TransientError):
        return Classification(ErrorKind.TRANSIENT, error.retry_after, "TransientError")
    if isinstance(error, AmbiguousError):
        return Classification(ErrorKind.AMBIGUOUS, None, "AmbiguousError")
    if isinstance(error, PermanentError):
        return Classification(ErrorKind.PERMANENT, None, "PermanentError")
    if isinstance(error, ResultError):
        kind = ErrorKind.AMBIGUOUS if getattr(error, "ambiguous", False) else (
            ErrorKind.TRANSIENT if error.transient else ErrorKind.PERMANENT)
        return Classification(kind, error.retry_after, "error in result")
    if isinstance(error, ConnectionRefusedError):
        return Classification(ErrorKind.TRANSIENT, None, type(error).__name__)
    if isinstance(error, TimeoutError | ConnectionError):
        return Classification(ErrorKind.AMBIGUOUS, None, type(error).__name__)
    code = _status_code(error)
    if code is not None:
        return Classification(classify_http_status(code), _retry_after(error), f"HTTP {code}")
    for cls in type(error).__mro__:
        if any(part in cls.__name__ for part in _TRANSIENT_NAME_PARTS):
            return Classification(ErrorKind.TRANSIENT, _retry_after(error), cls.__name__)
        if any(part in cls.__name__ for part in _AMBIGUOUS_NAME_PARTS):
            return Classification(ErrorKind.AMBIGUOUS, None, cls.__name__)
    return Classification(ErrorKind.PERMANENT, None, type(error).__name__, fallback=True)


def default_detect_result_error(result: Any) -> ResultError | None:
    """A :class:`ResultError` if the result's structure says the call failed, else None."""
    if type(result) is dict:
        # The common case, decided without building anything: a plain dict with no signal
        # field, or whose signal fields all say it went well.
        if _SIGNAL_KEYS.isdisjoint(result):
            return None
        if _FLAG_KEYS.isdisjoint(result):  # only a status: the usual shape of a success
            status = result["status"]
            if type(status) is str and (status[:1] not in "efEF"
                                        or status.lower() not in _FAILED_STATUSES):
                return None
        err = result.get("error")
        status = result.get("status")
        if (err is None or err is False or err == "") and result.get("success") is not False \
                and result.get("ok") is not False and (
                    status is None or (type(status) is str and (
                        status[:1] not in "efEF" or status.lower() not in _FAILED_STATUSES))):
            return None
    if result is None or type(result) in (int, float, bool):
        return None
    data = as_fields(result)
    if not isinstance(data, Mapping):
        return None
    message: str | None = None
    err = data.get("error")
    if err not in (None, False, "", {}, []):
        message = err if isinstance(err, str) else json.dumps(to_jsonable(err), default=str)
    status = data.get("status")
    if message is None and isinstance(status, str) and status.lower() in _FAILED_STATUSES:
        message = str(data.get("message") or data.get("detail") or f"status {status!r}")
    for key in ("success", "ok"):
        if message is None and data.get(key) is False:
            message = str(data.get("message") or data.get("detail") or f"{key} is false")
    if message is None:
        return None
    code = data.get("status_code") or data.get("code")
    retryable = data.get("retryable")
    transient = bool(retryable) if isinstance(retryable, bool) else (
        isinstance(code, int) and 100 <= code <= 599
        and classify_http_status(code) is ErrorKind.TRANSIENT)
    ra = data.get("retry_after")
    return ResultError(message, result, transient=transient,
                       retry_after=float(ra) if isinstance(ra, int | float) else None)
