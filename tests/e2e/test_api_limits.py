"""`outbox api` bounds what a client can make it read.

The real process over real sockets. Firestore is never reached (an address nothing listens
on): a refusal needs none.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from contextlib import closing

import pytest
import requests

from app.config import Settings
from tests.api_servers import ApiProcess, api_server

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
