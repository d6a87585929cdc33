"""Serve the order API under waitress, a production WSGI server (`outbox api`).

Waitress reads each request whole before the app sees it, so a body over the front door's cap
(`IDEMPOTENCY_MAX_REQUEST_BYTES`) is refused here and in `app.api.channel`, 413 unread.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from app.errors import ConfigError
from app.idempotency.config import DEFAULT_MAX_REQUEST_BYTES
from app.request_limits import DEFAULT_READ_TIMEOUT_SECONDS, Watchdog

if TYPE_CHECKING:
    from collections.abc import Callable

logger = logging.getLogger(__name__)


class ApiServer:
    """A bound waitress server and the watchdog that bounds its connections' time."""

    def __init__(self, server: Any, sockets: dict[int, Any], watchdog: Watchdog) -> None:
        self._server = server
        self._sockets = sockets
        self._watchdog = watchdog

    @property
    def effective_port(self) -> int:
        return int(self._server.effective_port)

    def run(self) -> None:
        """Serve until Ctrl-C (or `close()` from another thread)."""
        self._server.run()

    def close(self) -> None:
        from waitress import wasyncore

        self._server.task_dispatcher.shutdown()
        wasyncore.close_all(self._sockets)
        self._watchdog.stop()


def create_server(
    app: Callable[..., Any],
    host: str,
    port: int,
    threads: int,
    *,
    max_body_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
) -> ApiServer:
    """A bound waitress server (port 0 picks a free one: see `.effective_port`)."""
    try:
        from waitress import create_server as waitress_server
        from waitress.server import BaseWSGIServer

        from app.api.channel import bounded_channel
    except ImportError:
        raise ConfigError(
            "outbox api needs the waitress package: pip install 'firestore-outbox[api]'"
        ) from None
    sockets: dict[int, Any] = {}
    try:
        server = waitress_server(
            app,
            map=sockets,
            host=host,
            port=port,
            threads=threads,
            ident="firestore-outbox",
            max_request_body_size=max_body_bytes + 1,  # waitress refuses a length >= this
        )
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    watchdog = Watchdog()
    channel = bounded_channel(watchdog, DEFAULT_READ_TIMEOUT_SECONDS)
    for dispatcher in sockets.values():
        if isinstance(dispatcher, BaseWSGIServer):
            dispatcher.channel_class = channel
    return ApiServer(server, sockets, watchdog)
