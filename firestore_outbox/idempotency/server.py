"""Serve the order API under waitress, a production WSGI server (`outbox api`).

Waitress reads each request whole before the app sees it; the bounds on that read are set
here and in `firestore_outbox.idempotency.channel`: a body over the front door's cap
(`IDEMPOTENCY_MAX_REQUEST_BYTES`)
is refused 413 unread, a request must arrive whole within `read_timeout` seconds of its first
byte and an idle connection is closed after as long, and `connection_limit` connections are
held at once (waitress stops accepting beyond it, so stalled clients must not reach it first).
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING, Any

from firestore_outbox.errors import ConfigError
from firestore_outbox.idempotency.config import DEFAULT_MAX_REQUEST_BYTES
from firestore_outbox.idempotency.limits import DEFAULT_READ_TIMEOUT_SECONDS, Watchdog

if TYPE_CHECKING:
    from collections.abc import Callable

logger = logging.getLogger(__name__)

DEFAULT_CONNECTION_LIMIT = 500
_SPARE_FILES = 64  # besides connections: Firestore's channels, logs, the listening socket


class ApiServer:
    """A bound waitress server and the watchdog that bounds its connections' time."""

    def __init__(self, server: Any, sockets: dict[int, Any], watchdog: Watchdog) -> None:
        self._server = server
        self._sockets = sockets
        self._watchdog = watchdog

    @property
    def addresses(self) -> list[tuple[str, int]]:
        """The `(host, port)` of every socket it listens on: one per address the host name
        resolves to (`localhost` is often 127.0.0.1 and ::1; with port 0 each its own)."""
        return [
            (str(d.effective_host), int(d.effective_port))
            for d in self._sockets.values()
            if getattr(d, "accepting", False)
        ]

    @property
    def effective_port(self) -> int:
        """The port of the first address it listens on."""
        return self.addresses[0][1]

    def urls(self) -> list[str]:
        """`http://HOST:PORT` for each address (an IPv6 host in brackets)."""
        return [f"http://{f'[{h}]' if ':' in h else h}:{p}" for h, p in self.addresses]

    def run(self) -> None:
        """Serve until Ctrl-C (or `close()` from another thread)."""
        self._server.run()

    def close(self) -> None:
        from firestore_outbox.idempotency.channel import stop

        stop(self._server, self._sockets)
        self._watchdog.stop()


def create_server(
    app: Callable[..., Any],
    host: str,
    port: int,
    threads: int,
    *,
    max_body_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
    read_timeout: float = DEFAULT_READ_TIMEOUT_SECONDS,
    connection_limit: int | None = None,
    command: str = "api",
) -> ApiServer:
    """A bound waitress server (port 0 picks a free one: see `.effective_port`).

    `connection_limit` None: `DEFAULT_CONNECTION_LIMIT`, or fewer if the hard limit on open
    files cannot hold that many (with a warning); a limit asked for that it cannot hold is
    a `ConfigError`. `command`: the `outbox` command serving, named when waitress is missing
    (its extra has the same name)."""
    try:
        from waitress import create_server as waitress_server

        from firestore_outbox.idempotency.channel import bounded_channel, use_channel
    except ImportError:
        raise ConfigError(
            f"outbox {command} needs the waitress package: "
            f"pip install 'firestore-outbox[{command}]'"
        ) from None
    connection_limit = _allow_open_files(connection_limit)
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
            channel_timeout=math.ceil(read_timeout),  # idle: no byte for this long
            cleanup_interval=1,  # how often idle connections are looked for
            connection_limit=connection_limit,
            asyncore_use_poll=True,  # select() cannot watch descriptors past 1023
        )
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    except ValueError:  # waitress's word for a host that resolves to no address
        raise ConfigError(f"cannot listen on {host}:{port}: no address by that name") from None
    watchdog = Watchdog()
    use_channel(sockets, bounded_channel(watchdog, read_timeout))
    return ApiServer(server, sockets, watchdog)


def _allow_open_files(asked: int | None) -> int:
    """The connection limit to serve with: the soft limit on open files is raised to hold it
    and `_SPARE_FILES` more, as far as the hard limit allows.

    At the limit waitress's accept() fails on every turn of its loop: a busy loop, not a refusal.
    """
    limit = DEFAULT_CONNECTION_LIMIT if asked is None else asked
    try:
        import resource
    except ImportError:  # not a Unix: nothing to raise
        return limit
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = limit + _SPARE_FILES
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return limit
    if hard != resource.RLIM_INFINITY and hard < needed:
        fits = hard - _SPARE_FILES
        if asked is not None or fits < 1:
            raise ConfigError(
                f"--connection-limit {limit} needs {needed} open files; "
                f"the hard limit (ulimit -Hn) is {hard}"
            )
        logger.warning(
            "serving at most %d connections at once, not %d: the hard limit on open files "
            "(ulimit -Hn) is %d",
            fits,
            limit,
            hard,
        )
        limit, needed = fits, hard
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
    return limit
