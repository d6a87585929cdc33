"""Waitress's connection (`HTTPChannel`) with the order API's bounds on each request.

Waitress reads a whole request, body included, before the app sees it, so the bounds must be
the server's, not the middleware's:

- a `Content-Length` over the cap is refused 413 as soon as the headers are in (waitress's
  `max_request_body_size`, one byte past the cap), a chunked body as soon as it passes the cap;
  `_ErrorTask` makes that answer the front door's own problem document;
- a request that has not arrived whole within `read_timeout` of its first byte is shut down by
  the shared `Watchdog` (`firestore_outbox.idempotency.limits`, as in the receiver): waitress's
  `channel_timeout` counts from the last byte, so one byte a second would keep it for ever;
- a refused connection is closed gracefully: its write side first, then at most the cap's worth
  of the unread body is read and dropped (within `read_timeout`), because closing with unread
  bytes resets the connection and a client still sending may lose the answer.

Waitress has no public setting for any of the three (its public surface is `create_server`'s
keywords and the server's `run`/`close`), so this module is the one place the library reaches
into waitress's internals: the channel's `received`, `request`, `requests`, `readable`,
`writable`, `handle_read`, `handle_close`, `will_close` and `adj`, its `error_task_class`
(`ErrorTask`), a listening dispatcher's `channel_class`, and, to stop a server of one socket
or of several alike, its `task_dispatcher` and `wasyncore.close_all` (a server of one socket's
public `close()` leaves its connections and worker threads running). `PINNED` names them;
`tests/unit/idempotency/test_waitress_internals.py` checks they exist and
`tests/e2e/example/test_api_limits.py`
pins what they give.
"""

from __future__ import annotations

import socket
from typing import Any

from waitress import wasyncore
from waitress.channel import HTTPChannel
from waitress.server import BaseWSGIServer
from waitress.task import ErrorTask
from waitress.utilities import RequestEntityTooLarge

from firestore_outbox.idempotency.limits import Watchdog
from firestore_outbox.idempotency.wsgi import too_large

# (owner, internal name) pairs this module relies on:
# `tests/unit/idempotency/test_waitress_internals.py`.
PINNED: tuple[tuple[Any, str], ...] = (
    *((HTTPChannel, name) for name in ("received", "readable", "writable", "handle_read")),
    (HTTPChannel, "handle_close"),
    (HTTPChannel, "error_task_class"),
    (ErrorTask, "execute"),
    (RequestEntityTooLarge, "to_response"),
    (BaseWSGIServer, "channel_class"),
    (wasyncore, "close_all"),
)


class _ContentTooLarge(RequestEntityTooLarge):  # type: ignore[misc]
    def __init__(self, cap: int) -> None:
        super().__init__(f"body over {cap} bytes")
        self.cap = cap

    def to_response(self, ident: str | None = None) -> tuple[str, list[tuple[str, str]], bytes]:
        answer = too_large(self.cap)
        return answer.status_line, list(answer.headers), answer.body


class _ErrorTask(ErrorTask):  # type: ignore[misc]
    """Waitress's refusal of a request; its connection closes gracefully after the answer."""

    def execute(self) -> None:
        self.channel.refused = True
        if isinstance(self.request.error, RequestEntityTooLarge):
            # waitress refuses a length >= max_request_body_size: the cap is one less
            self.request.error = _ContentTooLarge(self.channel.adj.max_request_body_size - 1)
        super().execute()


def bounded_channel(watchdog: Watchdog, read_timeout: float) -> type[Any]:
    """A channel class whose requests must arrive whole within `read_timeout` seconds of their
    first byte, and whose refusals close gracefully (within as long)."""

    class BoundedChannel(HTTPChannel):  # type: ignore[misc]
        error_task_class = _ErrorTask
        refused = False  # set by _ErrorTask: close gracefully
        _timed: object = None  # the partial request whose deadline is armed
        _drain_left = -1  # bytes the graceful close may still drop; -1: not closing

        def received(self, data: bytes) -> bool:
            result: bool = super().received(data)
            partial = self.request  # None: whatever arrived is whole (or refused)
            if partial is None:
                if self._timed is not None:
                    watchdog.disarm(self.socket)  # the app's time is its own
                self._timed = None
            elif partial is not self._timed and not self.requests:
                # A request pipelined behind one being served is not read meanwhile: its
                # deadline starts with the next of its bytes read after that one's answer.
                watchdog.arm(self.socket, read_timeout)
                self._timed = partial
            return result

        def readable(self) -> bool:
            return self._drain_left >= 0 or bool(super().readable())

        def writable(self) -> bool:
            return self._drain_left < 0 and bool(super().writable())

        def handle_read(self) -> None:
            if self._drain_left < 0:
                super().handle_read()
                return
            data = self.recv(65536)  # on end of file or a reset it has called handle_close
            if data:
                self._drain_left -= len(data)
                if self._drain_left < 0:
                    self._close()

        def handle_close(self) -> None:
            # will_close: the answer is flushed (or the socket failed); else the client left
            if self.refused and self.will_close and self._drain_left < 0 and self.connected:
                try:
                    self.socket.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                else:
                    self._drain_left = self.adj.max_request_body_size
                    watchdog.arm(self.socket, read_timeout)
                    return
            self._close()

        def _close(self) -> None:
            watchdog.disarm(self.socket)
            super().handle_close()

    return BoundedChannel


def use_channel(sockets: dict[int, Any], channel: type[Any]) -> None:
    """Make every listening socket in waitress's socket map accept with `channel`."""
    for dispatcher in sockets.values():
        if isinstance(dispatcher, BaseWSGIServer):
            dispatcher.channel_class = channel  # no create_server keyword takes a channel


def stop(server: Any, sockets: dict[int, Any]) -> None:
    """Stop `server`'s worker threads and close every socket in its map, listening or not."""
    server.task_dispatcher.shutdown()  # a one-socket server's close() leaves them running
    wasyncore.close_all(sockets)
