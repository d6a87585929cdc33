"""`Receiver`: a local HTTP downstream that records what the relay delivers.

The demo prints what it received; tests script its answers (status codes, `Retry-After`,
slowness) to drive the relay through every branch of the wire contract; `outbox receiver`
serves the reference consumer with it. Each request is bounded before any responder sees it
(`firestore_outbox.idempotency.limits`): a body over `max_body_bytes` is answered 413 unread, and a
request (or an idle keep-alive connection) that has not arrived whole within `read_timeout` seconds
is dropped.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from firestore_outbox.errors import OutboxError
from firestore_outbox.idempotency.limits import (
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_READ_TIMEOUT_SECONDS,
    RequestRefused,
    Watchdog,
    read_body,
)


class ListenError(OutboxError):
    """The receiver could not open its port."""


@dataclass(frozen=True)
class Received:
    """One request as the downstream saw it; header names are lower case."""

    path: str
    headers: dict[str, str]
    body: bytes
    peer: str = ""  # the client's host:port; one per connection

    @property
    def event_id(self) -> str | None:
        return self.headers.get("ce-id")

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True)
class ReceiverAnswer:
    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""


Responder = Callable[[Received], ReceiverAnswer]


class Receiver:
    """An HTTP server on `port` (default: a free one), in a background thread, until `stop()`.

    `respond` decides each answer (default: 200). Every request is recorded before it is
    answered, so `received` includes deliveries whose answer never reached the relay; a
    long-running service passes `keep=False` and `received` stays empty.
    """

    def __init__(
        self,
        respond: Responder | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        keep: bool = True,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        read_timeout: float = DEFAULT_READ_TIMEOUT_SECONDS,
    ) -> None:
        self.respond = respond or (lambda _: ReceiverAnswer())
        self._keep = keep
        self._host = host
        self._received: list[Received] = []
        self._changed = threading.Condition()
        self.max_body_bytes = max_body_bytes
        self.read_timeout = read_timeout
        self.watchdog = Watchdog()
        try:
            self._server = _Server((host, port), _handler_for(self))
        except OSError as exc:  # a port taken, a host not of this machine
            raise ListenError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self._host}:{self._server.server_port}/events"

    @property
    def received(self) -> list[Received]:
        with self._changed:
            return list(self._received)

    def wait_for(self, count: int, timeout: float = 10.0) -> list[Received]:
        """Wait until at least `count` requests arrived; return them all (maybe fewer)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while len(self._received) < count and time.monotonic() < deadline:
                self._changed.wait(deadline - time.monotonic())
            return list(self._received)

    def start(self) -> Receiver:
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="receiver", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._server.server_close()
        self.watchdog.stop()

    def __enter__(self) -> Receiver:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def _record(self, request: Received) -> ReceiverAnswer:
        if self._keep:
            with self._changed:
                self._received.append(request)
                self._changed.notify_all()
        return self.respond(request)


class _Server(ThreadingHTTPServer):
    # The default backlog of 5 drops connections when a relay opens a pool of them at once.
    request_queue_size = 128

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client gone (or dropped by the watchdog) mid-answer is not worth a traceback.
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


def _handler_for(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the relay's pooled session expects

        timeout = receiver.read_timeout  # each read and write; the watchdog bounds the whole

        def handle_one_request(self) -> None:
            # Armed while waiting for the request too: an idle connection is dropped as well.
            receiver.watchdog.arm(self.connection, receiver.read_timeout)
            try:
                super().handle_one_request()
            finally:
                receiver.watchdog.disarm(self.connection)

        def do_POST(self) -> None:
            try:
                body = read_body(
                    self.rfile,
                    self.headers.get("Content-Length"),
                    self.headers.get("Transfer-Encoding"),
                    receiver.max_body_bytes,
                )
            except RequestRefused as refused:
                self._refuse(refused)
                return
            receiver.watchdog.disarm(self.connection)  # the responder's time is its own
            headers: dict[str, str] = {}
            for name, value in self.headers.items():  # repeated fields joined, as RFC 9110 says
                key = name.lower()
                headers[key] = f"{headers[key]}, {value}" if key in headers else value
            peer = "{}:{}".format(*self.client_address[:2])
            self._send(receiver._record(Received(self.path, headers, body, peer)))

        def _send(self, answer: ReceiverAnswer) -> None:
            self.send_response(answer.status)
            for name, value in answer.headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            self.wfile.write(answer.body)

        def _refuse(self, refused: RequestRefused) -> None:
            error = json.dumps({"status": "rejected", "error": str(refused)}).encode()
            self.close_connection = True  # the rest of the body is never read
            self._send(ReceiverAnswer(refused.status, (("Connection", "close"),), error))
            self.wfile.flush()
            # Closing with unread bytes would reset the connection and could destroy the
            # answer before the client reads it: stop sending, then drain a bounded amount.
            try:
                self.connection.shutdown(socket.SHUT_WR)
                left = receiver.max_body_bytes
                while left > 0 and (chunk := self.rfile.read1(65536)):
                    left -= len(chunk)
            except OSError:
                pass

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the relay logs deliveries; request lines would only add noise

    return Handler
