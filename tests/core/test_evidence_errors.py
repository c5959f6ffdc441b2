"""Issue 25, errors: RAC says a failed call did not happen only on evidence. Each library's
real exception classes (httpx, requests/urllib3, ssl, aiohttp, gRPC, psycopg, anyio), raised
by real I/O where the machine allows it (a refused loopback port, a server that cuts its
response short), are classified by package and name; a tool that commits and then raises any
of the mid-response ones, or an exception of a type nobody knows, or answers an error, is
never taken as a call that did not happen."""

from __future__ import annotations

import asyncio
import socket
import ssl
import threading
from collections.abc import Iterator
from typing import Any

import aiohttp
import anyio
import grpc
import grpc.aio
import httpx
import psycopg
import psycopg.errors
import pytest
import requests
import urllib3
import urllib3.exceptions

import rac
import rac.mcp
from rac.classify import ErrorKind, default_classify
from rac.testing import TravelWorld

A, T, P = ErrorKind.AMBIGUOUS, ErrorKind.TRANSIENT, ErrorKind.PERMANENT
FLIGHT = {"passenger": "ann", "origin": "SFO", "dest": "CDG"}


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def cut_short() -> Iterator[str]:
    """A loopback HTTP server that promises 100 bytes of body, sends 7 and hangs up: the
    request reached it, the response was lost mid-body."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(30)
                try:
                    conn.recv(65536)
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n"
                                 b"Content-Type: application/json\r\n\r\n{\"id\":")
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}/book"
    stop.set()
    thread.join(10)
    server.close()


def raised(fn: Any) -> BaseException:
    try:
        fn()
    except BaseException as e:  # noqa: BLE001 - the error is what the test reads
        return e
    raise AssertionError("expected the call to fail")


def araised(coro: Any) -> BaseException:
    async def main() -> BaseException:
        try:
            await coro()
        except BaseException as e:  # noqa: BLE001
            return e
        raise AssertionError("expected the call to fail")
    return asyncio.run(main())


# -- real I/O: refused before anything was sent, lost mid-body ------------------------------------
def test_a_refused_connection_is_transient_in_every_http_library() -> None:
    url = f"http://127.0.0.1:{closed_port()}/book"

    async def aio() -> None:
        async with aiohttp.ClientSession() as session, session.get(url) as resp:
            await resp.read()

    errors = {
        "httpx": raised(lambda: httpx.get(url, timeout=30)),
        "requests": raised(lambda: requests.get(url, timeout=30)),
        "urllib3": raised(lambda: urllib3.PoolManager(retries=False).request(
            "GET", url, timeout=30)),
        "aiohttp": araised(aio),
    }
    assert type(errors["requests"]).__name__ == "ConnectionError"  # wraps the refusal
    for lib, err in errors.items():
        verdict = default_classify(err)
        assert verdict.kind is T, (lib, err, verdict)
        assert "nothing was sent" in verdict.reason, (lib, verdict)


def test_a_response_lost_mid_body_is_ambiguous_in_every_http_library(cut_short: str) -> None:
    async def aio() -> None:
        async with aiohttp.ClientSession() as session, session.get(cut_short) as resp:
            await resp.read()

    def stream_requests() -> None:
        requests.get(cut_short, timeout=30).json()

    errors = {
        "httpx": raised(lambda: httpx.get(cut_short, timeout=30)),
        "requests": raised(stream_requests),
        "urllib3": raised(lambda: urllib3.PoolManager(retries=False).request(
            "GET", cut_short, timeout=30)),
        "aiohttp": araised(aio),
    }
    assert isinstance(errors["aiohttp"], aiohttp.ClientPayloadError)
    for lib, err in errors.items():
        verdict = default_classify(err)
        assert verdict.kind is A and not verdict.fallback, (lib, err, verdict)


# -- the real classes, as the libraries construct them ---------------------------------------------
def _status(code: int) -> httpx.HTTPStatusError:
    request = httpx.Request("POST", "http://127.0.0.1/book")
    return httpx.HTTPStatusError(f"{code}", request=request,
                                 response=httpx.Response(code, request=request))


def _requests_refused() -> requests.ConnectionError:
    inner = urllib3.exceptions.MaxRetryError(
        None, "/book", urllib3.exceptions.NewConnectionError(None, "Connection refused"))
    return requests.ConnectionError(inner)


def _requests_aborted() -> requests.ConnectionError:
    return requests.ConnectionError(urllib3.exceptions.ProtocolError(
        "Connection aborted.", ConnectionResetError(104, "reset by peer")))


TABLE: list[tuple[str, BaseException, ErrorKind]] = [
    ("httpx ReadError", httpx.ReadError("peer closed"), A),
    ("httpx WriteError", httpx.WriteError("broken pipe"), A),
    ("httpx RemoteProtocolError", httpx.RemoteProtocolError("incomplete body"), A),
    ("httpx ReadTimeout", httpx.ReadTimeout("timed out"), A),
    ("httpx WriteTimeout", httpx.WriteTimeout("timed out"), A),
    ("httpx ConnectError", httpx.ConnectError("refused"), T),
    ("httpx ConnectTimeout", httpx.ConnectTimeout("timed out"), T),
    ("httpx PoolTimeout", httpx.PoolTimeout("no connection"), T),
    ("httpx UnsupportedProtocol", httpx.UnsupportedProtocol("ftp"), P),
    ("httpx 503", _status(503), T),
    ("httpx 429", _status(429), T),
    ("httpx 500", _status(500), A),
    ("httpx 404", _status(404), A),
    ("requests ChunkedEncodingError", requests.exceptions.ChunkedEncodingError("cut"), A),
    ("requests ReadTimeout", requests.exceptions.ReadTimeout("timed out"), A),
    ("requests ConnectTimeout", requests.exceptions.ConnectTimeout("timed out"), T),
    ("requests ConnectionError (refused)", _requests_refused(), T),
    ("requests ConnectionError (aborted)", _requests_aborted(), A),
    ("requests ContentDecodingError", requests.exceptions.ContentDecodingError("gzip"), A),
    ("requests MissingSchema", requests.exceptions.MissingSchema("no scheme"), P),
    ("urllib3 ProtocolError", urllib3.exceptions.ProtocolError("Connection broken"), A),
    ("urllib3 IncompleteRead", urllib3.exceptions.IncompleteRead(7, 93), A),
    ("urllib3 ReadTimeoutError", urllib3.exceptions.ReadTimeoutError(None, "/", "read"), A),
    ("urllib3 NewConnectionError", urllib3.exceptions.NewConnectionError(None, "refused"), T),
    ("urllib3 NameResolutionError",
     urllib3.exceptions.NameResolutionError("h", None, socket.gaierror(-2, "unknown")), T),
    ("ssl SSLEOFError", ssl.SSLEOFError(8, "EOF occurred in violation of protocol"), A),
    ("ssl SSLZeroReturnError", ssl.SSLZeroReturnError(6, "TLS/SSL connection closed"), A),
    ("ssl SSLError", ssl.SSLError(1, "bad record mac"), A),
    ("ssl SSLCertVerificationError", ssl.SSLCertVerificationError(1, "unknown issuer"), P),
    ("aiohttp ClientPayloadError", aiohttp.ClientPayloadError("Response payload is not "
                                                              "completed"), A),
    ("aiohttp ServerDisconnectedError", aiohttp.ServerDisconnectedError(), A),
    ("aiohttp SocketTimeoutError", aiohttp.SocketTimeoutError("read timed out"), A),
    ("aiohttp ConnectionTimeoutError", aiohttp.ConnectionTimeoutError("connect"), T),
    ("gRPC DEADLINE_EXCEEDED", grpc.aio.AioRpcError(
        grpc.StatusCode.DEADLINE_EXCEEDED, grpc.aio.Metadata(), grpc.aio.Metadata()), A),
    ("gRPC UNAVAILABLE", grpc.aio.AioRpcError(
        grpc.StatusCode.UNAVAILABLE, grpc.aio.Metadata(), grpc.aio.Metadata()), A),
    ("gRPC INVALID_ARGUMENT", grpc.aio.AioRpcError(
        grpc.StatusCode.INVALID_ARGUMENT, grpc.aio.Metadata(), grpc.aio.Metadata()), A),
    ("gRPC UNIMPLEMENTED", grpc.aio.AioRpcError(
        grpc.StatusCode.UNIMPLEMENTED, grpc.aio.Metadata(), grpc.aio.Metadata()), P),
    ("psycopg server closed the connection", psycopg.OperationalError(
        "consuming input failed: server closed the connection unexpectedly"), A),
    ("psycopg SerializationFailure", psycopg.errors.SerializationFailure("conflict"), A),
    ("psycopg ConnectionTimeout", psycopg.errors.ConnectionTimeout("connect"), T),
    ("anyio BrokenResourceError", anyio.BrokenResourceError(), A),
    ("anyio EndOfStream", anyio.EndOfStream(), A),
    ("TimeoutError", TimeoutError("timed out"), A),
    ("ConnectionResetError", ConnectionResetError(104, "reset"), A),
    ("ConnectionRefusedError", ConnectionRefusedError(111, "refused"), T),
    ("socket.gaierror", socket.gaierror(-2, "Name or service not known"), T),
]


@pytest.mark.parametrize(("label", "error", "kind"), TABLE, ids=[t[0] for t in TABLE])
def test_each_librarys_real_exception_class(label: str, error: BaseException,
                                            kind: ErrorKind) -> None:
    verdict = default_classify(error)
    assert verdict.kind is kind, (label, verdict)
    assert not verdict.fallback  # a rule knew it
    assert verdict.happened == ("maybe" if kind is A else "no")


def test_the_core_imports_none_of_these_libraries() -> None:
    import subprocess
    import sys

    code = ("import sys, rac, rac.classify, rac.mcp; from rac.run.attempts import classify; "
            "bad = [m for m in ('httpx', 'requests', 'urllib3', 'aiohttp', 'grpc', 'psycopg', "
            "'anyio', 'ssl') if m in sys.modules and m != 'ssl']; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True)
    assert out.stdout.strip() == "[]"


# -- the reproductions: a call that committed, then failed -----------------------------------------
#: What a tool raises once the booking is committed (the first bullet of issue 25).
AFTER_COMMIT = [t for t in TABLE if t[2] is A] + [
    ("an unknown type", KeyError("seat_map"), A), ("RuntimeError", RuntimeError("boom"), A)]


@pytest.mark.parametrize(("label", "error", "kind"), AFTER_COMMIT,
                         ids=[t[0] for t in AFTER_COMMIT])
def test_a_booking_that_committed_then_failed_is_never_taken_as_not_happened(
        make_engine: Any, world: TravelWorld, label: str, error: BaseException,
        kind: ErrorKind) -> None:
    def book_flight(passenger: str, origin: str, dest: str) -> dict[str, Any]:
        """Books, then the answer is lost."""
        world.book_flight(passenger, origin, dest)
        raise error

    tools = [t for t in world.tools() if t.__name__ != "book_flight"]
    engine = make_engine(tools=[*tools, book_flight], plugins=[rac.mcp.MCPErrors()])
    with engine.run() as run, pytest.raises(rac.ToolCallFailed) as failed:
        run.call("book_flight", **FLIGHT)
    assert len(world.live("flight")) == 1  # booked once: never repeated blindly
    report = failed.value.report
    assert [(u.tool, u.happened) for u in report.in_doubt] == [("book_flight", "maybe")]
    assert not report.clean and run.status is rac.RunStatus.NEEDS_ATTENTION
    assert "world is back" not in str(failed.value)


def test_a_tool_that_writes_then_answers_an_error_may_have_happened(
        make_engine: Any, world: TravelWorld) -> None:
    """The second bullet of issue 25: a write, then ``{"error": ...}`` (or a permanent HTTP
    status) is no evidence of no effect."""
    def book_flight(passenger: str, origin: str, dest: str) -> dict[str, Any]:
        """Books, then reports an error about the confirmation e-mail."""
        world.book_flight(passenger, origin, dest)
        return {"error": "confirmation could not be sent", "status_code": 422}

    def book_hotel(guest: str, city: str, nights: int) -> dict[str, Any]:
        """Books, then the API answers 409."""
        world.book_hotel(guest, city, nights)
        raise _status(409)

    tools = [t for t in world.tools() if t.__name__ not in ("book_flight", "book_hotel")]
    engine = make_engine(tools=[*tools, book_flight, book_hotel],
                         alternatives={"book_flight": ["book_car"]})
    with engine.run() as run:
        with pytest.raises(rac.ToolCallFailed) as flight:
            run.call("book_flight", **FLIGHT)
        with pytest.raises(rac.ToolCallFailed) as hotel:
            run.call("book_hotel", guest="ann", city="Paris", nights=1)
    assert world.calls.get("book_car", 0) == 0  # no alternative: the first may be live
    for failed, tool in ((flight, "book_flight"), (hotel, "book_hotel")):
        assert tool in [u.tool for u in failed.value.report.in_doubt]
        assert "world is back" not in str(failed.value)
    assert len(world.live()) == 2 and run.status is rac.RunStatus.NEEDS_ATTENTION


# -- evidence by declaration -------------------------------------------------------------------------
@pytest.mark.parametrize("how", ["engine-wide", "per tool", "every tool (*)", "plugin"])
def test_a_declaration_says_an_error_comes_before_any_effect(
        make_engine: Any, world: TravelWorld, how: str) -> None:
    world.fail("book_car", "value", message="no cars in that city")  # a ValueError, nothing booked
    kw: dict[str, Any] = {"alternatives": {"book_car": ["rent_car"]}}
    if how == "engine-wide":
        kw["errors_before_effect"] = (ValueError,)
    elif how == "per tool":
        kw["errors_before_effect"] = {"book_car": (ValueError,)}
    elif how == "every tool (*)":
        kw["errors_before_effect"] = {"*": [ValueError]}
    else:
        class Validation:
            @rac.hookimpl
            def rac_classify_error(self, tool: str, error: BaseException
                                   ) -> rac.Classification | None:
                if isinstance(error, ValueError):
                    return rac.Classification("permanent", reason="validation: nothing done")
                return None
        kw["plugins"] = [Validation()]
    engine = make_engine(**kw)
    with engine.run() as run:
        run.call("book_flight", **FLIGHT)
        rental = run.call("book_car", driver="ann", city="Paris")  # the alternative ran
    assert rental["detail"] == "partner"
    (car,) = [r for r in run.records() if r.tool == "book_car"]
    assert car.status is rac.RecordStatus.FAILED and run.status is rac.RunStatus.COMPLETED


def test_without_a_declaration_the_same_error_is_in_doubt(make_engine: Any,
                                                          world: TravelWorld) -> None:
    world.fail("book_car", "value", message="no cars in that city")
    engine = make_engine(alternatives={"book_car": ["rent_car"]})
    with engine.run() as run, pytest.raises(rac.ToolCallFailed) as failed:
        run.call("book_car", driver="ann", city="Paris")
    assert world.calls.get("rent_car", 0) == 0
    assert [(u.tool, u.happened) for u in failed.value.report.in_doubt] == [("book_car", "maybe")]


def test_a_declared_type_never_hides_a_transient_verdict(make_engine: Any,
                                                         world: TravelWorld) -> None:
    world.fail("book_car", "refused", times=1)
    engine = make_engine(errors_before_effect=(OSError,))
    with engine.run() as run:
        run.call("book_car", driver="ann", city="Paris")  # refused, retried, booked
    assert world.calls["book_car"] == 2 and len(world.live("car")) == 1


def test_errors_before_effect_must_name_exception_classes() -> None:
    with pytest.raises(rac.ConfigurationError, match="not an exception class"):
        rac.RAC(store="memory://", errors_before_effect=("ValueError",))  # type: ignore[arg-type]
    with pytest.raises(rac.ConfigurationError, match=r"errors_before_effect\['book'\]"):
        rac.RAC(store="memory://", errors_before_effect={"book": [int]})  # type: ignore[list-item]
