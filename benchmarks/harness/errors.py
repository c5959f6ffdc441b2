"""The errors the worlds and the fault layer raise: what real tools raise, nothing of RAC's.

A world refuses a request with a ``ValueError`` worded as the tool words it (tau2's tools do
exactly this). The fault layer raises ``TimeoutError``, ``ConnectionResetError`` and
``httpx.HTTPStatusError`` on a real ``httpx.Response`` carrying the status code and, for a 429,
a ``Retry-After`` header. No class here subclasses a ``rac.*`` error: RAC has to classify them
the way it classifies any tool's errors, and the approaches without RAC read the same exception
(its type and text), as a model reads a tool error.
"""

from __future__ import annotations

import errno

import httpx

#: what an HTTP API says for each status the fault layer injects
REASONS = {400: "Bad Request", 403: "Forbidden", 409: "Conflict", 429: "Too Many Requests",
           500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable",
           504: "Gateway Timeout"}


def http_error(tool: str, status: int, message: str | None = None, *,
               retry_after: float | None = None) -> httpx.HTTPStatusError:
    """An ``httpx.HTTPStatusError`` as ``response.raise_for_status()`` raises it for a call of
    ``tool`` answered with ``status`` (a real request and response, headers included)."""
    request = httpx.Request("POST", f"https://api.example.test/v1/{tool}")
    headers = {"Retry-After": f"{retry_after:g}"} if retry_after is not None else {}
    response = httpx.Response(status, request=request, headers=headers,
                              json={"error": message or REASONS.get(status, "error")})
    text = message or (f"{'Server' if status >= 500 else 'Client'} error '{status} "
                       f"{REASONS.get(status, '')}' for url '{request.url}'")
    return httpx.HTTPStatusError(text, request=request, response=response)


def timeout(tool: str, message: str | None = None) -> TimeoutError:
    """The client gave up waiting (``TimeoutError``, what ``socket`` and ``asyncio`` raise)."""
    return TimeoutError(message or f"{tool}: timed out after 30.0 seconds")


def connection_reset(tool: str, message: str | None = None) -> ConnectionResetError:
    """The server closed the connection mid-response (``ECONNRESET``)."""
    return ConnectionResetError(errno.ECONNRESET, message or "Connection reset by peer")


def looks_transient(message: str) -> bool:
    """How a prompted model reads an error: by its words only (misleading text misleads it)."""
    text = message.lower()
    permanent_words = ("permanent", "rejected", "not found", "full", "invalid", "breakdown",
                       "overlap", "unknown", "no longer", "precedence", "not enough",
                       "declined", "too many reservations")
    if any(w in text for w in permanent_words):
        return False
    return any(w in text for w in ("timeout", "timed out", "503", "502", "504", "429",
                                   "try again", "unavailable", "overloaded", "temporar",
                                   "connection reset", "too many requests"))
