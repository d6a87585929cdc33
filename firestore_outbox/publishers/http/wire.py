"""What the HTTP transport changes inside urllib3 and http.client, kept in this one module
(`tests/unit/publishers/test_wire_internals.py` pins the internals it relies on).

Interim answers: http.client skips `100 Continue` only. A `102 Processing` or `103 Early
Hints` was taken for the final answer, and the real one stayed in the keep-alive socket, to be
read as the answer to the next request on it: an event refused with 503 could be settled with
another event's 200. `_Response` skips every 1xx but `101` (which ends HTTP on the connection;
the transport retries and drops it).

Deadline: urllib3's read timeout bounds each `recv`, so a downstream trickling a byte at a time
holds an attempt as long as it likes. Inside `attempt_deadline(t)` every connect, send and read
on this thread gets at most the time left until `t` (`time.monotonic()`), and fails once none is
left, however the bytes trickle. The deadline lives in a thread-local because urllib3 calls
these hooks from deep inside one synchronous request, on the caller's thread.

Name resolution: urllib3's `create_connection` calls `socket.getaddrinfo`, which no timeout
bounds. `_DeadlineConnection._new_conn` connects through `firestore_outbox.publishers.http.dns`
instead: the name of whatever host urllib3 connects to (`_dns_host`: the downstream, or the proxy)
is looked up within the time left, then each address is tried with what remains. Errors are
urllib3's own.
"""

from __future__ import annotations

import contextlib
import http.client
import importlib.metadata
import io
import socket
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NameResolutionError, NewConnectionError
from urllib3.util.connection import _set_socket_options, allowed_gai_family

from firestore_outbox.publishers.http import dns

_MAX_LINE = 65536  # http.client's own limits for a header line and a header count
_MAX_HEADERS = 100
_URLLIB3_AGENT = f"python-urllib3/{importlib.metadata.version('urllib3')}"  # urllib3's default
_FRAMING = frozenset({"content-length", "transfer-encoding"})  # a caller's own framing wins
_attempt = threading.local()


class DeadlinePassed(TimeoutError):
    """The attempt's deadline passed while connecting, sending or reading."""


@contextlib.contextmanager
def attempt_deadline(deadline: float) -> Iterator[None]:
    """Bound every socket operation of this thread's requests by `deadline`."""
    _attempt.deadline = deadline
    try:
        yield
    finally:
        _attempt.deadline = None


def time_left() -> float | None:
    """Seconds until this thread's attempt deadline (None outside an attempt)."""
    deadline: float | None = getattr(_attempt, "deadline", None)
    if deadline is None:
        return None
    left = deadline - time.monotonic()
    if left <= 0:
        raise DeadlinePassed("the attempt's deadline passed")
    return left


def _bounded(timeout: float | None, left: float | None) -> float | None:
    if left is None:
        return timeout
    return left if timeout is None else min(timeout, left)


class _DeadlineReader(io.RawIOBase):
    """A socket's raw reader whose every `recv` waits at most until the attempt deadline."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__()
        self._sock = sock
        self._raw = sock.makefile("rb", buffering=0)
        self._timeout = sock.gettimeout()  # the read timeout urllib3 set for this answer

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        self._sock.settimeout(_bounded(self._timeout, time_left()))
        return self._raw.readinto(buffer)

    def close(self) -> None:
        self._raw.close()
        super().close()


class _DeadlineSocket:
    """What `HTTPResponse.__init__` asks of its socket (`makefile("rb")`), answered with a
    reader under the attempt deadline (so no plain reader is made only to be dropped)."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    def makefile(self, mode: str) -> io.BufferedReader:
        return io.BufferedReader(_DeadlineReader(self._sock))


class _Response(http.client.HTTPResponse):
    """An answer read under the attempt deadline, interim 1xx answers skipped."""

    def __init__(self, sock: socket.socket, *args: Any, **kwargs: Any) -> None:
        super().__init__(_DeadlineSocket(sock), *args, **kwargs)  # type: ignore[arg-type]

    def _read_status(self) -> tuple[str, int, str]:
        while True:
            version, status, reason = super()._read_status()  # type: ignore[misc]
            if not 100 <= status < 200 or status == 101:
                return version, status, reason
            _skip_headers(self.fp)


def _skip_headers(fp: io.BufferedIOBase) -> None:
    for _ in range(_MAX_HEADERS + 1):
        line = fp.readline(_MAX_LINE + 1)
        if len(line) > _MAX_LINE:
            raise http.client.LineTooLong("interim header line")
        if line in (b"\r\n", b"\n", b""):
            return
    raise http.client.HTTPException(f"an interim answer with over {_MAX_HEADERS} headers")


class _DeadlineConnection(HTTPConnection):
    response_class = _Response
    _body_after_head: bytes | None = None

    def connect(self) -> None:
        self.timeout = _bounded(self.timeout, time_left())
        super().connect()

    def _new_conn(self) -> socket.socket:
        if time_left() is None:
            return super()._new_conn()
        try:
            sock = dns.connect(
                (self._dns_host, self.port),
                allowed_gai_family(),
                time_left,
                self.timeout,
                self.source_address,
                lambda sock: _set_socket_options(sock, self.socket_options),
            )
        except socket.gaierror as exc:
            raise NameResolutionError(self.host, self, exc) from exc
        except TimeoutError as exc:
            raise ConnectTimeoutError(
                self, f"Connection to {self.host} timed out. (connect timeout={self.timeout})"
            ) from exc
        except OSError as exc:
            raise NewConnectionError(self, f"Failed to establish a new connection: {exc}") from exc
        sys.audit("http.client.connect", self, self.host, self.port)
        return sock

    def request(  # type: ignore[override]
        self,
        method: str,
        url: str,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
        **options: Any,
    ) -> None:
        # urllib3 and http.client send the head, then the body: two segments, two wake-ups
        # of the downstream, two passes through the kernel's loopback or network stack, each
        # charged to the sender's CPU. A body of bytes goes out in the head's send instead.
        if (
            isinstance(body, bytes)
            and headers is not None
            and not options.get("chunked")
            and not _FRAMING.intersection(name.lower() for name in headers)
        ):
            self._body_after_head = body
            headers = {**headers, "Content-Length": str(len(body))}
            body = None
        try:
            super().request(method, url, body, headers, **options)
        finally:
            self._body_after_head = None

    def post(self, target: str, body: bytes, headers: Mapping[str, str]) -> None:
        """POST through http.client's own calls (`firestore_outbox.publishers.http.connections`),
        the same head
        urllib3 sends (urllib3's `User-Agent` where `headers` name none), the body in the
        head's send unless `headers` frame it themselves. http.client's `putheader` checks
        each name and value as urllib3's does, without urllib3's per-header scan for its
        `SKIP_HEADER` marker: 33 against 86 µs for the relay's 13 headers."""
        if self.sock is not None:
            self.sock.settimeout(self.timeout)  # as urllib3 does: sending waits as connecting
        names = {name.lower() for name in headers}
        if names & _FRAMING:
            self.request("POST", target, body, headers)  # urllib3 frames it as they say
            return
        client = http.client.HTTPConnection
        client.putrequest(
            self,
            "POST",
            target,
            skip_host="host" in names,
            skip_accept_encoding="accept-encoding" in names,
        )
        client.putheader(self, "Content-Length", str(len(body)))
        if "user-agent" not in names:
            client.putheader(self, "User-Agent", _URLLIB3_AGENT)
        for name, value in headers.items():
            client.putheader(self, name, value)
        self._body_after_head = body
        try:
            self.endheaders()
        finally:
            self._body_after_head = None

    def getresponse_plain(self) -> http.client.HTTPResponse:
        """The answer as http.client reads it (a `_Response`), without urllib3's wrapper."""
        return http.client.HTTPConnection.getresponse(self)

    def send(self, data: Any) -> None:
        if self.sock is not None:
            self.sock.settimeout(_bounded(self.sock.gettimeout(), time_left()))
        if self._body_after_head is not None:  # this is the head: the body rides with it
            data, self._body_after_head = data + self._body_after_head, None
        super().send(data)


class _DeadlineTlsConnection(_DeadlineConnection, HTTPSConnection):
    pass


class _Pool(HTTPConnectionPool):
    ConnectionCls = _DeadlineConnection


class _TlsPool(HTTPSConnectionPool):
    ConnectionCls = _DeadlineTlsConnection


# For `PoolManager.pool_classes_by_scheme`.
POOL_CLASSES: dict[str, type[HTTPConnectionPool]] = {"http": _Pool, "https": _TlsPool}
