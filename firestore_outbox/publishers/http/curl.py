"""One POST on a libcurl easy handle (pycurl), and the handles a transport reuses.

libcurl gives by its public options what this project once patched into urllib3 and
http.client: one total deadline over connecting, sending and reading (`TIMEOUT_MS`, however
the bytes trickle), interim 1xx answers skipped, no redirects followed (`FOLLOWLOCATION` is
off by default), keep-alive connections reused, TLS verified (against certifi's bundle, as
before), the head and a small body sent in one write, HTTP/2 where a TLS downstream offers it.
What libcurl does not do, this module does: the answer is read through callbacks that stop
the transfer at `MAX_ANSWER_BYTES` (libcurl then drops the connection), and the head of the
final answer is the one kept (each status line starts a new head: a 1xx's fields are
dropped with it).

An easy handle per POST in flight, taken from an idle stack and handed back (at most
`pool_size` stay idle, each with its kept-alive connection): measured against one multi
handle driving every transfer from one thread, and kept as the cheaper
(docs/performance.md, the publish path).
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque

import pycurl

from firestore_outbox.publishers.http.answers import (
    MAX_ANSWER_BYTES,
    DownstreamAnswer,
    Headers,
    answer_of,
)
from firestore_outbox.publishers.http.failures import OPERATION_TIMEDOUT
from firestore_outbox.publishers.http.routes import Route

# libcurl's own `Expect: 100-continue` (a wait for an interim answer before the body) and
# `Accept: */*` are not sent.
_DROPPED = ["Expect:", "Accept:"]


class CurlFailure(Exception):
    """No answer: libcurl's error `code` and `message`, and whether any request bytes left."""

    def __init__(self, code: int, message: str, *, sent: bool) -> None:
        super().__init__(f"curl {code}: {message}")
        self.code, self.message, self.sent = code, message, sent


class _Reader:
    """The answer as libcurl hands it over: its head's fields and up to one byte over the
    cap of its body; `stopped` once it stopped the transfer itself."""

    __slots__ = ("chunks", "lines", "size", "stopped", "switching")

    def __init__(self) -> None:
        self.lines, self.chunks, self.size = list[bytes](), list[bytes](), 0
        self.stopped = self.switching = False

    def head(self, line: bytes) -> int | None:
        if line[:5] == b"HTTP/":  # a status line: a new answer's head (the final one's last)
            self.lines = []
            self.switching = line.split(None, 2)[1:2] == [b"101"]
        elif line in (b"\r\n", b"\n") and self.switching:
            # A 101 we never asked for: libcurl would read what follows as its body, to the
            # end of the connection. It ends HTTP there: stop, and the connection goes.
            self.stopped = True
            return 0
        else:
            self.lines.append(line)
        return None

    def body(self, data: bytes) -> int | None:
        room = MAX_ANSWER_BYTES + 1 - self.size
        if len(data) < room:
            self.chunks.append(data)
            self.size += len(data)
            return None
        self.chunks.append(data[:room])  # enough to know it is over the cap
        self.size += room
        self.stopped = True
        return 0  # libcurl stops the transfer (CURLE_WRITE_ERROR) and drops the connection


class Handle:
    """An easy handle driven through a multi handle of its own (so that this module, not
    libcurl, decides how long to wait for the answer's next bytes), the URL and addresses last
    set on it, and its answer reader."""

    def __init__(self, *, connect_timeout: float, read_timeout: float, ca_file: str) -> None:
        self.curl = curl = pycurl.Curl()
        self._multi = pycurl.CurlMulti()
        self._connect_ms = max(1, int(connect_timeout * 1000))
        self._read_timeout = read_timeout
        self._url = ""
        self._pinned: set[str] = set()
        self._reader = _Reader()
        curl.setopt(pycurl.NOSIGNAL, 1)  # no SIGALRM: the resolver is ours, threads are many
        curl.setopt(pycurl.PROTOCOLS, pycurl.PROTO_HTTP | pycurl.PROTO_HTTPS)
        curl.setopt(pycurl.CAINFO, ca_file)
        curl.setopt(pycurl.USERAGENT, "")  # pycurl's own names its and libcurl's versions
        curl.setopt(pycurl.HEADERFUNCTION, lambda line: self._reader.head(line))
        curl.setopt(pycurl.WRITEFUNCTION, lambda data: self._reader.body(data))

    def post(
        self, url: str, route: Route, pin: str | None, body: bytes, headers: list[str], left: float
    ) -> DownstreamAnswer:
        """POST within `left` seconds, each wait for the answer's bytes at most the read
        timeout; the answer, or `CurlFailure`."""
        curl = self.curl
        if url != self._url:
            curl.setopt(pycurl.URL, url)
            curl.setopt(pycurl.PROXY, route.proxy)  # "": none, whatever the environment says
            self._url = url
        if pin is not None and pin not in self._pinned:
            curl.setopt(pycurl.RESOLVE, [f"-{route.name}", pin])
            self._pinned = {p for p in self._pinned if not p.startswith(f"{route.name}:")}
            self._pinned.add(pin)
        timeout_ms = math.ceil(left * 1000) + 1  # a timeout is then past the deadline
        curl.setopt(pycurl.TIMEOUT_MS, timeout_ms)
        curl.setopt(pycurl.CONNECTTIMEOUT_MS, min(self._connect_ms, timeout_ms))
        curl.setopt(pycurl.HTTPHEADER, headers + _DROPPED)
        curl.setopt(pycurl.POSTFIELDS, body)
        reader = self._reader = _Reader()
        self._multi.add_handle(curl)
        try:
            failed = self._run(time.monotonic())
        finally:
            self._multi.remove_handle(curl)  # mid-transfer: libcurl drops its connection
        if failed is not None and not reader.stopped:  # not our reader's own stop
            code, message = failed
            raise CurlFailure(code, message, sent=curl.getinfo(pycurl.REQUEST_SIZE) > 0)
        whole = reader.size <= MAX_ANSWER_BYTES
        status = curl.getinfo(pycurl.RESPONSE_CODE)
        return answer_of(status, Headers(reader.lines), b"".join(reader.chunks), whole)

    def _run(self, started: float) -> tuple[int, str] | None:
        """Drive the transfer to its end; libcurl's error, if it ended in one. Once connected
        (libcurl's pretransfer time), no byte for `read_timeout` (its socket not once ready)
        ends it as libcurl's own timeouts would; libcurl's timeouts bound the rest."""
        multi = self._multi
        last = started  # when the socket was last ready
        while True:
            code, running = multi.perform()
            while code == pycurl.E_CALL_MULTI_PERFORM:
                code, running = multi.perform()
            if not running:
                failed = multi.info_read()[2]
                return (int(failed[0][1]), str(failed[0][2])) if failed else None
            wait = 1.0  # connecting: libcurl's connect timeout bounds it
            connected = self.curl.getinfo(pycurl.PRETRANSFER_TIME)
            if connected > 0:
                idle = time.monotonic() - max(started + connected, last)
                if idle >= self._read_timeout:
                    return OPERATION_TIMEDOUT, f"no byte of the answer for {idle:.2f} s"
                wait = self._read_timeout - idle
            due = multi.timeout()  # ms until libcurl must be called again (-1: no timer)
            if multi.select(wait if due < 0 else min(wait, due / 1000)) > 0:
                last = time.monotonic()

    def close(self) -> None:
        self._multi.close()
        self.curl.close()


class Handles:
    """Idle easy handles, the last handed back the first taken (its connection the warmest);
    one more is made when none is idle, and one over `pool_size` closed when handed back."""

    def __init__(self, pool_size: int, **options: object) -> None:
        self._idle: deque[tuple[int, Handle]] = deque()
        self._pool_size = pool_size
        self._options = options
        self._generation = 0  # `close()` makes every handle out before it stale
        self._lock = threading.Lock()

    def take(self) -> tuple[int, Handle]:
        # Under the lock: `close()` lists the idle handles and then empties the stack, and a
        # handle popped between the two was handed out while `close()` went on to close it.
        with self._lock:
            try:
                return self._idle.pop()
            except IndexError:
                generation = self._generation
        return generation, Handle(**self._options)  # type: ignore[arg-type]

    def give_back(self, taken: tuple[int, Handle]) -> None:
        with self._lock:
            if taken[0] == self._generation and len(self._idle) < self._pool_size:
                self._idle.append(taken)
                return
        taken[1].close()

    def close(self) -> None:
        """Close the idle handles and their connections; those out are closed when back."""
        with self._lock:
            self._generation += 1
            idle, self._idle = list(self._idle), deque()
        for _, handle in idle:
            handle.close()
