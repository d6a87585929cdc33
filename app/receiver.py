"""`Receiver`: a local HTTP downstream that records what the relay delivers.

The demo prints what it received; tests script its answers (status codes, `Retry-After`,
slowness) to drive the relay through every branch of the wire contract.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any


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
class Answer:
    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""


Responder = Callable[[Received], Answer]


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
    ) -> None:
        self.respond = respond or (lambda _: Answer())
        self._keep = keep
        self._host = host
        self._received: list[Received] = []
        self._changed = threading.Condition()
        self._server = _Server((host, port), _handler_for(self))
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

    def __enter__(self) -> Receiver:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def _record(self, request: Received) -> Answer:
        if self._keep:
            with self._changed:
                self._received.append(request)
                self._changed.notify_all()
        return self.respond(request)


class _Server(ThreadingHTTPServer):
    # The default backlog of 5 drops connections when a relay opens a pool of them at once.
    request_queue_size = 128


def _handler_for(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the relay's pooled session expects

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            headers = {name.lower(): value for name, value in self.headers.items()}
            peer = "{}:{}".format(*self.client_address[:2])
            answer = receiver._record(Received(self.path, headers, body, peer))
            self.send_response(answer.status)
            for name, value in answer.headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            self.wfile.write(answer.body)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the relay logs deliveries; request lines would only add noise

    return Handler
