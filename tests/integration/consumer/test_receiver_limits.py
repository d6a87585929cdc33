"""The receiver bounds what a client can make it read and how long it can hold a connection,
before any responder (or signature check) sees the request. Real sockets, no Firestore."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from contextlib import closing

import pytest

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.idempotency.limits import DEFAULT_MAX_BODY_BYTES

HEADERS = "POST /events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"


def connect(receiver: Receiver, timeout: float = 20.0) -> socket.socket:
    host, port = receiver.url.split("/")[2].split(":")
    return socket.create_connection((host, int(port)), timeout=timeout)


def read_answer(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes (or resets) the connection."""
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except ConnectionResetError:
        pass
    return data


@pytest.fixture
def quick() -> Iterator[Receiver]:
    with Receiver(read_timeout=1.0) as receiver:
        yield receiver


def test_a_declared_oversized_body_is_refused_413_without_reading_it(receiver: Receiver) -> None:
    with closing(connect(receiver)) as sock:
        sock.sendall(f"{HEADERS}Content-Length: 314572800\r\n\r\n".encode())  # 300 MB, unsent
        answer = read_answer(sock)  # on a receiver that waits for the body: a timeout here
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:100]
    assert b"Connection: close" in answer
    assert receiver.received == []


def test_a_chunked_body_over_the_cap_is_refused_413(receiver: Receiver) -> None:
    chunk = b"x" * 65536
    framed = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
    with closing(connect(receiver)) as sock:
        sock.sendall(f"{HEADERS}Transfer-Encoding: chunked\r\n\r\n".encode())
        sent = 0
        try:
            while sent <= DEFAULT_MAX_BODY_BYTES + len(chunk):
                sock.sendall(framed)
                sent += len(chunk)
        except OSError:
            pass  # the receiver stopped reading: what this test wants
        answer = read_answer(sock)
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:100]
    assert receiver.received == []


def test_a_chunked_body_within_the_cap_is_read_whole(receiver: Receiver) -> None:
    with closing(connect(receiver)) as sock:
        sock.sendall(
            f"{HEADERS}Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n".encode()
            + b'7\r\n{"a":1,\r\n6;ext=1\r\n"b":2}\r\n0\r\n\r\n'
        )
        answer = read_answer(sock)
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:100]
    [request] = receiver.received
    assert request.body == b'{"a":1,"b":2}'


@pytest.mark.parametrize(
    ("framing", "status"),
    [
        ("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", b"400"),
        ("Content-Length: -1\r\n", b"400"),
        ("Transfer-Encoding: gzip\r\n", b"501"),
    ],
    ids=["both", "negative", "unknown-coding"],
)
def test_ambiguous_framing_is_refused(receiver: Receiver, framing: str, status: bytes) -> None:
    with closing(connect(receiver)) as sock:
        sock.sendall(f"{HEADERS}{framing}\r\n".encode())
        answer = read_answer(sock)
    assert answer.startswith(b"HTTP/1.1 " + status), answer[:100]
    assert receiver.received == []


def test_an_idle_connection_is_dropped(quick: Receiver) -> None:
    with closing(connect(quick)) as sock:
        assert read_answer(sock) == b""  # closed by the receiver; else a client timeout


def test_a_trickling_client_is_dropped_though_every_byte_arrives_in_time(quick: Receiver) -> None:
    request = f"{HEADERS}Content-Length: 2\r\n\r\n{{}}".encode()
    with closing(connect(quick)) as sock:
        dropped = False
        for n in range(len(request)):  # one byte every 0.2 s: 20 s in all, against 1 s
            try:
                sock.sendall(request[n : n + 1])
            except OSError:
                dropped = True
                break
            time.sleep(0.2)
            sock.setblocking(False)
            try:
                dropped = sock.recv(1) == b""
            except BlockingIOError:
                pass
            except OSError:
                dropped = True
            finally:
                sock.setblocking(True)
            if dropped:
                break
    assert dropped
    assert quick.received == []


def test_a_keep_alive_connection_still_carries_several_requests(quick: Receiver) -> None:
    one = f"{HEADERS}Content-Length: 2\r\n\r\n{{}}".encode()
    with closing(connect(quick)) as sock:
        sock.sendall(one + one)
        time.sleep(0.1)
        sock.sendall(one)
        answer = read_answer(sock)  # then dropped once idle
    assert answer.count(b"HTTP/1.1 200 ") == 3
    assert len(quick.received) == 3
