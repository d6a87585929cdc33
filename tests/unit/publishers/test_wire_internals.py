"""Pins the urllib3 and http.client internals `firestore_outbox.publishers.http.wire` relies on,
over a socket pair
(no server): an upgrade of either library that moves them fails here, not in production."""

from __future__ import annotations

import http.client
import inspect
import socket
import threading
import time

import pytest
import urllib3
from urllib3.connection import HTTPConnection
from urllib3.connectionpool import HTTPConnectionPool
from urllib3.exceptions import NameResolutionError
from urllib3.util import connection as urllib3_connection

from firestore_outbox.publishers.http import dns
from firestore_outbox.publishers.http.wire import (
    POOL_CLASSES,
    DeadlinePassed,
    _Response,
    attempt_deadline,
    time_left,
)


def answer_to(data: bytes) -> _Response:
    ours, theirs = socket.socketpair()
    theirs.sendall(data)
    theirs.close()
    response = _Response(ours, method="POST")
    response.begin()
    return response


def test_interim_answers_are_skipped_up_to_the_final_one() -> None:
    response = answer_to(
        b"HTTP/1.1 102 Processing\r\n\r\n"
        b"HTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n\r\n"
        b"HTTP/1.1 100 Continue\r\n\r\n"
        b"HTTP/1.1 503 Busy\r\nContent-Length: 4\r\n\r\nbusy"
    )
    assert (response.status, response.read()) == (503, b"busy")


def test_switching_protocols_is_returned_as_it_is() -> None:
    assert answer_to(b"HTTP/1.1 101 Switching Protocols\r\n\r\n").status == 101


def test_reads_after_the_deadline_fail() -> None:
    ours, theirs = socket.socketpair()
    theirs.sendall(b"HTTP/1.1 200 OK\r\n")  # and nothing more
    with attempt_deadline(time.monotonic() + 0.2):
        response = _Response(ours, method="POST")
        with pytest.raises(TimeoutError):
            response.begin()
        with pytest.raises(DeadlinePassed):
            time_left()
    assert time_left() is None  # outside an attempt nothing is bounded
    theirs.close()


def test_the_hooks_urllib3_and_http_client_offer_are_still_there() -> None:
    assert callable(http.client.HTTPResponse._read_status)  # type: ignore[attr-defined]
    assert http.client.HTTPConnection.response_class is http.client.HTTPResponse
    assert urllib3.PoolManager().pool_classes_by_scheme["http"] is HTTPConnectionPool
    for pool in POOL_CLASSES.values():
        assert "response_class" in vars(pool.ConnectionCls.__mro__[0]) or issubclass(
            pool.ConnectionCls.response_class, _Response
        )


def test_the_connection_internals_name_resolution_replaces_are_still_there() -> None:
    assert "_new_conn" in vars(HTTPConnection)  # what `_DeadlineConnection` overrides
    assert "_dns_host" in inspect.getsource(HTTPConnection._new_conn)
    assert "getaddrinfo" in inspect.getsource(urllib3_connection.create_connection)
    assert callable(urllib3_connection._set_socket_options)
    assert callable(urllib3_connection.allowed_gai_family)
    assert list(inspect.signature(NameResolutionError).parameters) == ["host", "conn", "reason"]


def test_hanging_lookups_hold_at_most_one_thread_per_name_and_never_more_than_the_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A fake of the resolver only: every lookup hangs until released.
    released = threading.Event()
    calls: list[str] = []

    def hanging(host: str, *_: object) -> list[object]:
        calls.append(host)
        released.wait(5)
        raise socket.gaierror(socket.EAI_AGAIN, "released")

    monkeypatch.setattr(socket, "getaddrinfo", hanging)
    names = [f"n{n % (dns.WORKERS + 2)}.test" for n in range(24)]
    started = time.monotonic()
    try:
        for name in names:
            with pytest.raises(dns.ResolutionTimeout, match="deadline"):
                dns.resolve(name, 80, socket.AF_INET, 0.01)
        took = time.monotonic() - started
        assert len(calls) == dns.WORKERS  # the rest share a lookup or wait in the queue
        workers = [t for t in threading.enumerate() if t.name.startswith("outbox-dns")]
        assert len(workers) <= dns.WORKERS
        assert took < 24 * 0.01 + 1.0
    finally:
        released.set()
