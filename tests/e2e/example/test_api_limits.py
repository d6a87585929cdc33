"""`outbox api` bounds what a client can make it read and how long it can hold a connection.

The real process over real sockets. Firestore is never reached (an address nothing listens
on): a refusal, a dropped connection and `/healthz` need none.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from contextlib import closing

import pytest
import requests

from firestore_outbox.firestore.settings import Settings
from tests.support.api_servers import ApiProcess, api_server

CAP = 100_000
HEADERS = (
    b"POST /orders HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    b'Idempotency-Key: "limits"\r\n'
)
NOWHERE = Settings(project_id="demo-limits", emulator_host="127.0.0.1:9")


@pytest.fixture(scope="module")
def api() -> Iterator[ApiProcess]:
    with api_server(NOWHERE, IDEMPOTENCY_MAX_REQUEST_BYTES=str(CAP)) as server:
        yield server


@pytest.fixture(scope="module")
def quick() -> Iterator[ApiProcess]:
    """A server whose requests must arrive within 1 s; Firestore calls give up after 3 s."""
    with api_server(NOWHERE, args=["--read-timeout", "1"], FIRESTORE_TIMEOUT_SECONDS="3") as server:
        yield server


def connect(server: ApiProcess, timeout: float = 10.0) -> socket.socket:
    host, port = server.url.split("/")[2].split(":")
    return socket.create_connection((host, int(port)), timeout=timeout)


def read_to_end(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes; a reset (or a timeout) raises."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def test_a_declared_body_over_the_cap_is_refused_413_at_once_unread(api: ApiProcess) -> None:
    with closing(connect(api)) as sock:
        started = time.monotonic()
        sock.sendall(HEADERS + b"Content-Length: 100000000\r\n\r\n")  # 100 MB, never sent
        answer = read_to_end(sock)  # before: waitress waited for the body, a timeout here
        took = time.monotonic() - started
    head, body = answer.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 413 "), answer[:200]
    assert b"\r\nConnection: close" in head
    assert b"\r\nContent-Type: application/problem+json" in head
    assert json.loads(body) == {
        "type": "/problems/content-too-large",
        "title": "Content too large",
        "status": 413,
        "detail": f"the request body is larger than {CAP} bytes",
    }
    assert took < 2.0


def test_a_chunked_body_is_refused_once_past_the_cap(api: ApiProcess) -> None:
    chunk = b" " * 16384
    framed = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
    with closing(connect(api)) as sock:
        sock.sendall(HEADERS + b"Transfer-Encoding: chunked\r\n\r\n")
        sock.sendall(framed * (3 * CAP // len(chunk)))  # never the last chunk
        answer = read_to_end(sock)  # before: waitress waited for the rest, up to 1 GiB
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]
    assert b"/problems/content-too-large" in answer


def test_a_refusal_closes_gracefully_so_a_client_still_sending_reads_it(api: ApiProcess) -> None:
    with closing(connect(api)) as sock:
        # Body bytes the server never reads: closing on them outright would reset the
        # connection, and a reset may destroy the answer before the client reads it.
        sock.sendall(HEADERS + b"Content-Length: 100000000\r\n\r\n" + b" " * 65536)
        time.sleep(0.5)  # the answer is sent and the connection closed meanwhile
        answer = read_to_end(sock)  # a reset raises here
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]


def test_an_ordinary_client_sending_a_large_body_gets_the_413(api: ApiProcess) -> None:
    answer = requests.post(
        f"{api.url}/orders",
        data=b" " * (50 * CAP),
        headers={"Content-Type": "application/json", "Idempotency-Key": '"big"'},
        timeout=30,
    )
    assert answer.status_code == 413
    assert answer.json()["type"] == "/problems/content-too-large"


def test_a_trickling_client_is_dropped_though_every_byte_arrives_in_time(
    quick: ApiProcess,
) -> None:
    request = HEADERS + b"Content-Length: 2\r\n\r\n{}"
    with closing(connect(quick)) as sock:
        started = time.monotonic()
        for n in range(len(request)):  # one byte every 0.2 s: 25 s in all, against 1 s
            try:
                sock.sendall(request[n : n + 1])
                time.sleep(0.2)
                sock.setblocking(False)
                if sock.recv(1) == b"":
                    break
            except BlockingIOError:
                pass
            except OSError:
                break
            finally:
                sock.setblocking(True)
        took = time.monotonic() - started
    assert took < 3.0, f"still open after {took:.1f} s"


def test_an_idle_connection_is_closed(quick: ApiProcess) -> None:
    with closing(connect(quick)) as sock:
        started = time.monotonic()
        assert read_to_end(sock) == b""  # before: 120 s of waitress's channel_timeout
        took = time.monotonic() - started
    assert 0.9 < took < 3.5


def test_the_deadline_bounds_the_read_not_the_app(quick: ApiProcess) -> None:
    with requests.Session() as session:
        started = time.monotonic()
        slow = session.get(f"{quick.url}/orders/o-1", timeout=30)  # Firestore unreachable
        took = time.monotonic() - started
        assert slow.status_code == 503 and took > 1.5
        assert session.get(f"{quick.url}/healthz", timeout=30).status_code == 200


def test_healthz_answers_while_many_clients_stall(api: ApiProcess) -> None:
    stalled = [connect(api) for _ in range(150)]  # waitress held 100 by default
    try:
        for sock in stalled:
            sock.sendall(HEADERS + b"Content-Length: 10\r\n\r\n")
        time.sleep(0.3)
        started = time.monotonic()
        health = requests.get(f"{api.url}/healthz", timeout=5)
        assert health.status_code == 200
        assert time.monotonic() - started < 1.0
    finally:
        for sock in stalled:
            sock.close()
