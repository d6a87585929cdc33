"""The benchmark's delaying TCP proxy: bytes intact and late, and Firestore working through it."""

from __future__ import annotations

import os
import socket
import socketserver
import threading
import time
from collections.abc import Iterator

import pytest
from google.cloud.firestore import FieldFilter

from bench.latency_proxy import DelayProxy
from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.settings import Settings
from tests.conftest import PROJECT

DELAY = 0.05  # each way


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(65536):
            self.request.sendall(data)


@pytest.fixture
def echo() -> Iterator[tuple[str, int]]:
    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo) as server:
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        yield server.server_address
        server.shutdown()


def _round_trip(address: tuple[str, int], payload: bytes) -> tuple[bytes, float]:
    with socket.create_connection(address, timeout=10) as conn:
        started = time.perf_counter()
        conn.sendall(payload)
        conn.shutdown(socket.SHUT_WR)  # the end of stream must travel through too
        received = bytearray()
        while chunk := conn.recv(65536):
            received += chunk
        return bytes(received), time.perf_counter() - started


def test_bytes_come_back_intact_and_a_round_trip_later(echo: tuple[str, int]) -> None:
    payload = os.urandom(3 * 1024 * 1024)  # many chunks, so order matters
    with DelayProxy(*echo, DELAY) as proxy:
        received, seconds = _round_trip(proxy.address, payload)
    assert received == payload
    # Out and back: at least the delay each way (a lower bound the sleeps guarantee).
    assert seconds >= 2 * DELAY


def test_connections_are_delayed_independently(echo: tuple[str, int]) -> None:
    with DelayProxy(*echo, DELAY) as proxy:
        results: list[bytes] = []
        threads = [
            threading.Thread(
                target=lambda n=n: results.append(_round_trip(proxy.address, b"%d" % n)[0])
            )
            for n in range(8)
        ]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - started
    assert sorted(results) == [b"%d" % n for n in range(8)]
    assert elapsed >= 2 * DELAY


def test_a_negative_delay_is_refused() -> None:
    with pytest.raises(ValueError, match="delay"):
        DelayProxy("127.0.0.1", 1, -0.01)


@pytest.mark.emulator
def test_the_firestore_client_works_through_it(emulator_host: str, settings: Settings) -> None:
    host, _, port = emulator_host.rpartition(":")
    with DelayProxy(host, int(port), DELAY) as proxy:
        slow = get_db_client(Settings(project_id=PROJECT, emulator_host=proxy.host_port))
        ref = slow.collection("through-proxy").document("d1")
        ref.set({"n": 1})  # a unary Commit over HTTP/2
        started = time.perf_counter()
        snapshot = ref.get()  # a server-streaming BatchGetDocuments
        seconds = time.perf_counter() - started
        found = [
            d.id
            for d in slow.collection("through-proxy")
            .where(filter=FieldFilter("n", "==", 1))
            .stream()
        ]
        slow.close()
    assert snapshot.to_dict() == {"n": 1}
    assert found == ["d1"]
    assert seconds >= 2 * DELAY
    # And the write really reached the emulator: read it back without the proxy.
    direct = get_db_client(settings).collection("through-proxy").document("d1").get()
    assert direct.to_dict() == {"n": 1}
