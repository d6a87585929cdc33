"""A Kafka-protocol proxy in front of a real broker that answers `InitProducerId` itself with
an error: a broker that refuses the idempotent producer (as some ApsaraMQ for Kafka storage
types did), for the Kafka publisher's fallback test. Every other request and response passes
through unchanged, frame by frame.

    proxy = RefusingProxy(broker_port, error_code=31)  # CLUSTER_AUTHORIZATION_FAILED
    broker = KafkaBroker(..., advertised_port=proxy.port)  # clients come back through it
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading

from firestore_outbox.testing.emulator import free_port

INIT_PRODUCER_ID = 22
FLEXIBLE_FROM = 2  # InitProducerId v2 and later use tagged fields


class RefusingProxy:
    """Listens on `port` (127.0.0.1) and relays to `broker_port`; `refused` counts the
    `InitProducerId` requests it answered with `error_code`."""

    def __init__(self, broker_port: int, error_code: int) -> None:
        self.port = free_port()
        self.refused = 0
        self._broker_port = broker_port
        self._error_code = error_code
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self._sockets: list[socket.socket] = [self._listener]
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        for sock in self._sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            broker = socket.create_connection(("127.0.0.1", self._broker_port))
            self._sockets += [client, broker]
            lock = threading.Lock()  # one frame at a time towards the client
            threading.Thread(
                target=self._requests, args=(client, broker, lock), daemon=True
            ).start()
            threading.Thread(
                target=self._responses, args=(broker, client, lock), daemon=True
            ).start()

    def _requests(self, client: socket.socket, broker: socket.socket, lock: threading.Lock) -> None:
        while (frame := _frame(client)) is not None:
            api_key, version, correlation = struct.unpack(">hhi", frame[4:12])
            if api_key != INIT_PRODUCER_ID:
                broker.sendall(frame)
                continue
            self.refused += 1
            with lock:
                client.sendall(self._refusal(version, correlation))
        broker.close()

    def _responses(
        self, broker: socket.socket, client: socket.socket, lock: threading.Lock
    ) -> None:
        while (frame := _frame(broker)) is not None:
            with lock:
                client.sendall(frame)
        client.close()

    def _refusal(self, version: int, correlation: int) -> bytes:
        flexible = version >= FLEXIBLE_FROM
        tags = b"\x00" if flexible else b""
        # throttle_time_ms, error_code, producer_id, producer_epoch
        body = struct.pack(">ihqh", 0, self._error_code, -1, -1) + tags
        payload = struct.pack(">i", correlation) + tags + body
        return struct.pack(">i", len(payload)) + payload


def _frame(sock: socket.socket) -> bytes | None:
    """One length-prefixed Kafka frame, prefix included; None when the peer is gone."""
    head = _exactly(sock, 4)
    if head is None:
        return None
    body = _exactly(sock, struct.unpack(">i", head)[0])
    return None if body is None else head + body


def _exactly(sock: socket.socket, size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        try:
            chunk = sock.recv(left)
        except OSError:
            return None
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
