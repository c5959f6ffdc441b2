"""Deciding whether a failure is worth retrying, whether the call may have happened, and
whether a returned result is a failure.

Only structured signals count: exception types, status codes, ``Retry-After``, and result fields
(``error``, ``status``, ``success``/``ok``). Free text is never searched for words like
"failed".

**"Did not happen" needs evidence.** A failure is ``transient`` or ``permanent`` (nothing
happened) only when something says so: a known pre-send error (the connection was refused, the
name did not resolve, the connect or pool wait timed out, HTTP 408/425/429/503, arguments that
Python could not bind to a tool function's signature, so the function never ran), one of RAC's
own error classes raised by the tool, a declaration (``errors_before_effect``, a
``rac_classify_error`` plugin, an MCP server's recovery metadata). Everything else is
``ambiguous``: an exception of a type no rule knows, an error a library raises once the request
was sent (a response lost mid-body, a read timeout, a reset connection), any other HTTP status,
and an error *result* (a tool may write and then answer an error). :data:`LIBRARY_ERRORS` is the
table of the HTTP, TLS, RPC and database libraries' exceptions RAC knows, matched by package
and class name: this module imports none of them.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import FunctionType, MethodType
from typing import Any

from rac.errors import AmbiguousError, PermanentError, ResultError, TransientError
from rac.serialize import as_fields, to_jsonable


class ErrorKind(StrEnum):
    """``transient``: the failure came before any effect and may go away (retried).
    ``permanent``: it came before any effect and will not go away (straight to alternatives).
    ``ambiguous``: the call may have taken effect (a timeout, a response lost after sending,
    an error nothing classified): retried only where a repeat is safe, else reconciled or in
    doubt. Only evidence makes a failure transient or permanent (see the module docstring)."""

    TRANSIENT = "transient"
    PERMANENT = "permanent"
    AMBIGUOUS = "ambiguous"


@dataclass(frozen=True, slots=True)
class Classification:
    """The verdict on one failure: its kind, why, and, if the error said so, when to retry.

    ``kind`` may be given as its string (``Classification("ambiguous")``); anything else is
    refused at once. ``fallback`` is True when no rule knew the error (an exception of an
    unknown type, an error result nothing declared): it is ``ambiguous``, the call may have
    happened. ``final`` is True when a repeat would get the same answer (the server answered:
    an HTTP 4xx, an error result): the call is then not repeated even where a repeat is safe
    (compensations are: an undo is worth another try). ``declared`` is True when a permanent
    verdict rests only on a declaration that the error comes before any effect
    (``errors_before_effect``): nothing happened, which says nothing of whether it would go
    away, so an undo is tried again under ``compensation_retry``. ``reason`` says what the
    verdict rests on (it is written to the log).
    """

    kind: ErrorKind
    retry_after: float | None = None
    reason: str = ""
    fallback: bool = False
    final: bool = False
    declared: bool = False

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

    @property
    def happened(self) -> str:
        """Whether the failed attempt's effect happened: ``"no"`` (transient, permanent: a rule
        or a declaration says it came before any effect) or ``"maybe"`` (ambiguous)."""
        return "maybe" if self.kind is ErrorKind.AMBIGUOUS else "no"


T, P, A = ErrorKind.TRANSIENT, ErrorKind.PERMANENT, ErrorKind.AMBIGUOUS
_SENT = "the request was sent and the answer was lost or cut short"
_ANSWERED = "the server answered after the request reached it"
#: What RAC knows of other libraries' exceptions: (top-level package, class name) -> (kind,
#: why). Matched along the exception's MRO, nearest class first, so a subclass listed here
#: wins over its base. Errors raised before anything was sent are transient (or permanent when
#: a repeat cannot help); every error raised once the request was out is ambiguous. Types of
#: these libraries not listed fall to their listed base class.
LIBRARY_ERRORS: dict[tuple[str, str], tuple[ErrorKind, str]] = {
    # Python itself
    ("builtins", "ConnectionRefusedError"): (T, "the connection was refused: nothing was sent"),
    ("socket", "gaierror"): (T, "the host name did not resolve: nothing was sent"),
    ("builtins", "TimeoutError"): (A, "it timed out: " + _SENT),
    ("builtins", "ConnectionError"): (A, "the connection was lost: " + _SENT),
    ("http.client", "IncompleteRead"): (A, "the response was cut short: " + _SENT),
    ("http.client", "BadStatusLine"): (A, "the response was unreadable: " + _SENT),
    ("ssl", "SSLCertVerificationError"): (
        P, "the server's certificate was refused during the handshake: nothing was sent"),
    ("ssl", "SSLError"): (A, "the TLS connection failed: " + _SENT),
    # httpx, and httpcore beneath it
    **{(pkg, name): verdict for pkg in ("httpx", "httpcore") for name, verdict in {
        "ConnectError": (T, "the connection could not be made: nothing was sent"),
        "ConnectTimeout": (T, "the connection timed out before it was made: nothing was sent"),
        "PoolTimeout": (T, "no connection of the pool came free: nothing was sent"),
        "UnsupportedProtocol": (P, "the URL's scheme is not supported: nothing was sent"),
        "InvalidURL": (P, "the URL is invalid: nothing was sent"),
        "HTTPError": (A, _SENT), "TransportError": (A, _SENT), "NetworkError": (A, _SENT),
        "ProtocolError": (A, _SENT), "TimeoutException": (A, "it timed out: " + _SENT),
    }.items()},
    # requests and urllib3 (requests' ConnectionError and urllib3's MaxRetryError wrap the
    # error that decides: see _CAUSES)
    ("requests", "ConnectTimeout"): (T, "the connection timed out before it was made: "
                                        "nothing was sent"),
    ("requests", "InvalidURL"): (P, "the URL is invalid: nothing was sent"),
    ("requests", "MissingSchema"): (P, "the URL has no scheme: nothing was sent"),
    ("requests", "InvalidSchema"): (P, "the URL's scheme is not supported: nothing was sent"),
    ("requests", "InvalidHeader"): (P, "a header is invalid: nothing was sent"),
    ("requests", "JSONDecodeError"): (A, "the response body was not JSON: " + _SENT),
    ("requests", "RequestException"): (A, _SENT),
    ("urllib3", "NewConnectionError"): (T, "the connection could not be made: "
                                           "nothing was sent"),
    ("urllib3", "ConnectTimeoutError"): (T, "the connection timed out before it was made: "
                                            "nothing was sent"),
    ("urllib3", "EmptyPoolError"): (T, "no connection of the pool came free: "
                                       "nothing was sent"),
    ("urllib3", "LocationValueError"): (P, "the URL is invalid: nothing was sent"),
    ("urllib3", "HTTPError"): (A, _SENT),
    # aiohttp
    ("aiohttp", "ClientConnectorCertificateError"): (
        P, "the server's certificate was refused during the handshake: nothing was sent"),
    ("aiohttp", "ClientConnectorError"): (T, "the connection could not be made: "
                                             "nothing was sent"),
    ("aiohttp", "ConnectionTimeoutError"): (T, "the connection timed out before it was "
                                               "made: nothing was sent"),
    ("aiohttp", "InvalidURL"): (P, "the URL is invalid: nothing was sent"),
    ("aiohttp", "NonHttpUrlClientError"): (P, "the URL is not HTTP: nothing was sent"),
    ("aiohttp", "ClientError"): (A, _SENT),
    # gRPC: read by status code (see _grpc)
    ("grpc", "RpcError"): (A, _SENT),
    # psycopg: the connection could not be made, or the server refused a new session
    ("psycopg", "ConnectionTimeout"): (T, "the connection timed out before it was made: "
                                          "nothing was sent"),
    ("psycopg", "CannotConnectNow"): (T, "the server refused a new session: "
                                         "nothing was sent"),
    ("psycopg", "TooManyConnections"): (T, "the server refused a new session: "
                                           "nothing was sent"),
    ("psycopg", "SqlclientUnableToEstablishSqlconnection"): (
        T, "the connection could not be made: nothing was sent"),
    ("psycopg", "Error"): (A, "the database call failed after it was sent (a lost "
                              "connection, a failed statement): it may have committed"),
    # anyio: a stream broken under a call (an MCP client whose call timed out)
    ("anyio", "BrokenResourceError"): (A, "the stream broke under the call: " + _SENT),
    ("anyio", "EndOfStream"): (A, "the stream ended under the call: " + _SENT),
    ("anyio", "IncompleteRead"): (A, "the response was cut short: " + _SENT),
}
#: Wrappers whose own verdict defers to the error they wrap (its ``reason`` attribute, its
#: first argument, its cause): requests' ``ConnectionError`` of a refused connection is
#: transient, of a response lost mid-way ambiguous.
_CAUSES = frozenset({("requests", "ConnectionError"), ("requests", "SSLError"),
                     ("requests", "ProxyError"), ("requests", "RetryError"),
                     ("urllib3", "MaxRetryError")})
#: gRPC status codes that say the server has no such method: nothing ran.
_GRPC_NOT_RUN = frozenset({"UNIMPLEMENTED"})
#: gRPC status codes of a server that answered (a repeat gets the same answer).
_GRPC_ANSWERED = frozenset({"INVALID_ARGUMENT", "NOT_FOUND", "ALREADY_EXISTS",
                            "PERMISSION_DENIED", "FAILED_PRECONDITION", "OUT_OF_RANGE",
                            "UNAUTHENTICATED"})
#: Exception class names (anywhere in the MRO) that say the request may have been carried
#: out (it was sent and the answer was lost): read as known ambiguous errors.
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
            if isinstance(val, int) and not isinstance(val, bool) and 100 <= val <= 599:
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
    """408, 425, 429 and 503 are transient (the server says it did not carry the request
    out); any other status is ambiguous (the server answered after the request reached it:
    it may have acted, whatever the status)."""
    if code in (408, 425, 429, 503):
        return ErrorKind.TRANSIENT
    return ErrorKind.AMBIGUOUS


def _package(cls: type) -> str:
    module = cls.__module__ or ""
    if module.startswith("http.client"):
        return "http.client"
    return module.split(".", 1)[0]


def _library_rule(error: BaseException) -> tuple[tuple[str, str], ErrorKind, str] | None:
    """The nearest class of ``error``'s MRO that :data:`LIBRARY_ERRORS` lists (or that is a
    wrapper of :data:`_CAUSES`), with its verdict."""
    for cls in type(error).__mro__:
        key = (_package(cls), cls.__name__)
        if key in _CAUSES:
            return key, ErrorKind.AMBIGUOUS, _SENT
        found = LIBRARY_ERRORS.get(key)
        if found is not None:
            return key, found[0], found[1]
    return None


def _wrapped(error: BaseException) -> Iterator[BaseException]:
    """What a wrapper wraps: urllib3's ``reason``, an exception passed as an argument, the
    cause."""
    for inner in (getattr(error, "reason", None), *getattr(error, "args", ())[:1],
                  error.__cause__, error.__context__):
        if isinstance(inner, BaseException) and inner is not error:
            yield inner


def _grpc(error: BaseException) -> Classification | None:
    code = getattr(error, "code", None)
    if not callable(code):
        return None
    try:
        status = code()
    except Exception:  # noqa: BLE001 - a call object that cannot say: no code
        return None
    name = str(getattr(status, "name", status))
    if name in _GRPC_NOT_RUN:
        return Classification(ErrorKind.PERMANENT, None,
                              f"gRPC {name}: the server has no such method, nothing ran")
    if name in _GRPC_ANSWERED:
        return Classification(ErrorKind.AMBIGUOUS, None, f"gRPC {name}: {_ANSWERED}, it may "
                                                         "have acted", final=True)
    return Classification(ErrorKind.AMBIGUOUS, None, f"gRPC {name}: {_SENT}")


def _known(error: BaseException, depth: int = 0) -> Classification | None:
    """The verdict of a rule that knows ``error`` (not RAC's own classes), or None."""
    rule = _library_rule(error)
    if rule is not None:
        key, kind, why = rule
        name = type(error).__name__
        if key in _CAUSES and depth < 4:
            for inner in _wrapped(error):
                verdict = _known(inner, depth + 1)
                if verdict is not None:
                    return Classification(verdict.kind, verdict.retry_after,
                                          f"{name} ({verdict.reason})")
        if key[0] == "grpc":
            found = _grpc(error)
            if found is not None:
                return found
        code = _status_code(error)
        if code is not None and kind is ErrorKind.AMBIGUOUS:
            return _http(code, error)
        return Classification(kind, _retry_after(error) if kind is ErrorKind.TRANSIENT
                               else None, f"{name}: {why}")
    code = _status_code(error)
    if code is not None:
        return _http(code, error)
    for cls in type(error).__mro__:
        if any(part in cls.__name__ for part in _AMBIGUOUS_NAME_PARTS):
            return Classification(ErrorKind.AMBIGUOUS, None, f"{cls.__name__}: {_SENT}")
    return None


def _http(code: int, error: BaseException) -> Classification:
    kind = classify_http_status(code)
    if kind is ErrorKind.TRANSIENT:
        return Classification(kind, _retry_after(error),
                              f"HTTP {code}: the server did not carry the request out")
    return Classification(kind, None, f"HTTP {code}: {_ANSWERED}, it may have acted",
                          final=code < 500 or code in (501, 505))


#: Set on a TypeError that :func:`mark_unbound` saw raised binding a tool function's arguments.
_UNBOUND = "__rac_unbound__"


def mark_unbound(error: TypeError, fn: Callable[..., Any], args: Mapping[str, Any]) -> None:
    """Mark ``error`` as raised binding ``args`` to ``fn``, before any of ``fn`` ran, when the
    evidence says so (then :func:`default_classify` calls it permanent: the call did not
    happen). Called by the frame that calls ``fn`` (:meth:`rac.Tool.from_function`), with the
    error it caught. The evidence: ``fn`` is a Python function or method (the interpreter binds
    its arguments before its first line runs), the error's traceback holds no frame below the
    caller's (``fn``'s own frame never started: a TypeError from its body, or from anything it
    called, has one), and ``fn``'s own signature refuses the same arguments
    (``inspect.signature(fn).bind(**args)`` raises TypeError too). Anything else, such as a
    builtin, a ``functools.partial`` or a wrapper whose body ran, leaves ``error`` unmarked,
    and so ambiguous."""
    tb = error.__traceback__
    if tb is None or tb.tb_next is not None:
        return
    target = fn.__func__ if isinstance(fn, MethodType) else fn
    if not isinstance(target, FunctionType):
        return
    try:
        inspect.signature(fn, follow_wrapped=False).bind(**args)
    except TypeError as refused:
        name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", "the tool")
        setattr(error, _UNBOUND, f"TypeError: the arguments do not fit {name}() ({refused}), "
                                 "so Python refused the call before the tool ran")
    except ValueError:  # no signature to read: no evidence
        return


def default_classify(error: BaseException) -> Classification:
    """RAC's built-in classification of an exception (see the module docstring).

    ``rac.TransientError`` and ``rac.PermanentError`` (raised by the tool: it says nothing
    happened), ``rac.AmbiguousError``, a TypeError raised binding a tool function's arguments
    (permanent: the call never reached the tool, see :func:`mark_unbound`), a
    :class:`rac.ResultError` (ambiguous unless it says it is transient, or its ``ambiguous``
    is False), then :data:`LIBRARY_ERRORS` and status codes. An exception no rule knows is ``ambiguous``, as a ``fallback``: it may have
    happened.
    """
    if isinstance(error, TransientError):
        return Classification(ErrorKind.TRANSIENT, error.retry_after,
                              "TransientError: the tool says nothing happened")
    if isinstance(error, AmbiguousError):
        return Classification(ErrorKind.AMBIGUOUS, None,
                              "AmbiguousError: the tool says it may have happened")
    if isinstance(error, PermanentError):
        return Classification(ErrorKind.PERMANENT, None,
                              "PermanentError: the tool says nothing happened")
    unbound = getattr(error, _UNBOUND, None) if isinstance(error, TypeError) else None
    if isinstance(unbound, str):
        return Classification(ErrorKind.PERMANENT, None, unbound)
    if isinstance(error, ResultError):
        if error.transient:
            return Classification(ErrorKind.TRANSIENT, error.retry_after,
                                  "an error result that says it may be retried")
        if error.ambiguous is False:
            return Classification(ErrorKind.PERMANENT, None,
                                  "an error result declared to come before any effect",
                                  declared=True)
        return Classification(ErrorKind.AMBIGUOUS, None,
                              "an error result: the tool may have acted before it answered",
                              fallback=error.ambiguous is None, final=True)
    found = _known(error)
    if found is not None:
        return found
    return Classification(ErrorKind.AMBIGUOUS, None,
                          f"{type(error).__name__}: no rule knows this error, so the call "
                          "may have happened", fallback=True)


def declared_before_effect(error: BaseException, declared: Iterable[type[BaseException]],
                           verdict: Classification) -> Classification | None:
    """The verdict when ``error`` is one of the ``declared`` types that come before any
    effect (``errors_before_effect``): ``verdict`` if it already says nothing happened, else
    permanent. None when it is not one of them."""
    if not isinstance(error, tuple(declared)):
        return None
    if not verdict.ambiguous:
        return verdict
    return Classification(ErrorKind.PERMANENT, None,
                          f"{type(error).__name__}: declared to come before any effect "
                          "(errors_before_effect)", declared=True)


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
