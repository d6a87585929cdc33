"""`DirectPool`: kept-alive connections to one URL that no proxy stands in front of, driven
through http.client's own `request` and `getresponse`.

urllib3's `HTTPConnectionPool.urlopen` cost about as much CPU per POST as the rest of the
publish path together (its `Timeout` and `Retry` objects, proxy and TLS checks on every
request, a second response object and header dict around http.client's): measured by
`bench/publish_cpu.py`, 16 threads, 282 µs per request through it against 161 µs for the same
connections driven directly. The connections are still urllib3's
(`firestore_outbox.publishers.http.wire`): its TLS
verification, the name resolution and every socket operation bounded by the attempt deadline,
interim answers skipped. Failures are raised as the urllib3 exceptions its pool would have
raised, so `firestore_outbox.publishers.http.publisher` classifies both paths alike; a proxied URL
still goes through urllib3's `ProxyManager`.
"""

from __future__ import annotations

import http.client
import ssl
import threading
from collections import deque
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from urllib3.exceptions import (
    ConnectTimeoutError,
    HTTPError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
    SSLError,
)

from firestore_outbox.publishers.http.answers import Answer, read_plain_answer
from firestore_outbox.publishers.http.wire import POOL_CLASSES


class DirectPool:
    """Up to `maxsize` idle connections to `url`'s host, each POST on one of them (a new one
    when none is idle; one over `maxsize` is closed when handed back, as urllib3 does)."""

    def __init__(
        self, url: str, *, connect_timeout: float, read_timeout: float, maxsize: int, **tls: Any
    ) -> None:
        parts = urlsplit(url)
        self._target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        connection_class = POOL_CLASSES[parts.scheme].ConnectionCls
        extra = tls if parts.scheme == "https" else {}
        self._open: Callable[[], Any] = lambda: connection_class(
            parts.hostname or "", parts.port, timeout=connect_timeout, **extra
        )
        self._where = f"{parts.hostname}:{parts.port or ''}"
        self._read_timeout = read_timeout
        self._maxsize = maxsize
        self._idle: deque[Any] = deque()
        self._lock = threading.Lock()
        self.closed = False

    def post(self, body: bytes, headers: dict[str, str]) -> Answer:
        """POST `body` and read its answer within the cap; call inside `attempt_deadline`."""
        connection = self._take()
        try:
            if connection.sock is None:
                _connect(connection)
            try:
                connection.post(self._target, body, headers)
                connection.sock.settimeout(self._read_timeout)  # `_Response` bounds it further
                answer, reusable = read_plain_answer(connection.getresponse_plain())
            except TimeoutError as exc:
                raise ReadTimeoutError(
                    self._where,  # type: ignore[arg-type]  # only its text is shown
                    self._target,
                    f"Read timed out. (read timeout={self._read_timeout})",
                ) from exc
            except (http.client.HTTPException, OSError) as exc:
                raise ProtocolError("Connection aborted.", exc) from exc
        except BaseException:
            connection.close()
            raise
        if reusable:
            self._give_back(connection)
        else:
            connection.close()
        return answer

    def close(self) -> None:
        """Close the idle connections; those in use are closed when handed back."""
        with self._lock:
            self.closed = True
            idle, self._idle = list(self._idle), deque()
        for connection in idle:
            connection.close()

    def _take(self) -> Any:
        while True:
            try:
                connection = self._idle.pop()
            except IndexError:
                return self._open()
            if connection.is_connected:  # not closed by the downstream while it sat idle
                return connection
            connection.close()

    def _give_back(self, connection: Any) -> None:
        with self._lock:
            if not self.closed and len(self._idle) < self._maxsize:
                self._idle.append(connection)
                return
        connection.close()


def _connect(connection: Any) -> None:
    """Connect, failures named as urllib3's pool names them: nothing has been sent yet."""
    try:
        connection.connect()
    except HTTPError:
        raise  # name resolution, refused, connect timeout: already urllib3's
    except (ssl.SSLError, ssl.CertificateError) as exc:
        raise SSLError(exc) from exc
    except TimeoutError as exc:
        raise ConnectTimeoutError(connection, f"Connection timed out: {exc}") from exc
    except OSError as exc:
        raise NewConnectionError(connection, f"Failed to establish a connection: {exc}") from exc
