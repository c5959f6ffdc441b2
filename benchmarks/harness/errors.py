"""The errors the worlds and the fault layer raise: what real tools raise, nothing of RAC's.

A world refuses a request with a ``ValueError`` worded as the tool words it (tau2's tools do
exactly this). The fault layer raises ``TimeoutError``, ``ConnectionResetError`` and
``httpx.HTTPStatusError`` on a real ``httpx.Response`` carrying the status code and, for a 429,
a ``Retry-After`` header. The mid-response faults (:data:`MID_RESPONSE`) raise each client
library's own class for a response lost after the request was sent: httpx's ``ReadError``,
requests' ``ChunkedEncodingError`` (around urllib3's ``ProtocolError``, as requests raises it),
urllib3's ``ProtocolError``, ``ssl.SSLEOFError``, aiohttp's ``ClientPayloadError``, a gRPC
``AioRpcError`` with status ``DEADLINE_EXCEEDED``, psycopg's ``OperationalError`` "server closed
the connection unexpectedly", and anyio's ``BrokenResourceError`` (what an MCP client's stream
raises once the call it was waiting on timed out). No class here subclasses a ``rac.*`` error:
RAC has to classify them the way it classifies any tool's errors, and the approaches without
RAC read the same exception (its type and text), as a model reads a tool error.
"""

from __future__ import annotations

import errno
import ssl
from collections.abc import Callable

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


def _request(tool: str) -> httpx.Request:
    return httpx.Request("POST", f"https://api.example.test/v1/{tool}")


def httpx_read(tool: str) -> Exception:
    """httpx lost the response body (``httpx.ReadError``, a ``TransportError``)."""
    return httpx.ReadError("[Errno 104] Connection reset by peer", request=_request(tool))


def urllib3_protocol(tool: str) -> Exception:
    """urllib3 read a broken chunked body (``urllib3.exceptions.ProtocolError``)."""
    from urllib3.exceptions import ProtocolError

    return ProtocolError("Connection broken: IncompleteRead(0 bytes read, 512 more expected)")


def requests_chunked(tool: str) -> Exception:
    """requests' ``ChunkedEncodingError``, wrapping urllib3's ``ProtocolError`` as requests
    does when the body of a response is cut off."""
    from requests.exceptions import ChunkedEncodingError

    return ChunkedEncodingError(urllib3_protocol(tool))


def ssl_eof(tool: str) -> Exception:
    """The TLS stream ended mid-response (``ssl.SSLEOFError``)."""
    return ssl.SSLEOFError(8, "EOF occurred in violation of protocol (_ssl.c:2427)")


def aiohttp_payload(tool: str) -> Exception:
    """aiohttp read less than the response announced (``ClientPayloadError``)."""
    from aiohttp import ClientPayloadError

    return ClientPayloadError("Response payload is not completed: <TransferEncodingError: "
                              "400, message='Not enough data to satisfy transfer length "
                              "header.'>")


def grpc_deadline(tool: str) -> Exception:
    """A gRPC call past its deadline (``grpc.aio.AioRpcError``, ``DEADLINE_EXCEEDED``): the
    server may well have carried it out."""
    import grpc
    from grpc.aio import AioRpcError, Metadata

    return AioRpcError(grpc.StatusCode.DEADLINE_EXCEEDED, Metadata(), Metadata(),
                       details="Deadline Exceeded")


def psycopg_closed(tool: str) -> Exception:
    """The database connection dropped during the statement (psycopg's ``OperationalError``):
    the commit may or may not have happened."""
    from psycopg import OperationalError

    return OperationalError("consuming input failed: server closed the connection "
                            "unexpectedly\n\tThis probably means the server terminated "
                            "abnormally\n\tbefore or while processing the request.")


def anyio_broken(tool: str) -> Exception:
    """anyio's ``BrokenResourceError``: an MCP client's stream after the call it waited on
    timed out (the server carried on)."""
    from anyio import BrokenResourceError

    return BrokenResourceError()


#: fault kind -> the exception a client library raises when the response to a sent request
#: is lost (each one's own class, constructed as the library constructs it)
MID_RESPONSE: dict[str, Callable[[str], Exception]] = {
    "httpx_read": httpx_read,
    "requests_chunked": requests_chunked,
    "urllib3_protocol": urllib3_protocol,
    "ssl_eof": ssl_eof,
    "aiohttp_payload": aiohttp_payload,
    "grpc_deadline": grpc_deadline,
    "psycopg_closed": psycopg_closed,
    "anyio_broken": anyio_broken,
}


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
