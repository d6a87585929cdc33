"""Misbehaving downstreams for the wire tests: a raw TCP server that runs a script per
connection, so a test can send what no well-behaved HTTP server would (interim answers,
trickled headers, endless or compressed bodies) and count what it sent and what is open.

A server stops for good when its `with` block is left: its port refuses connections and no
script of it answers anything after (`RawServer.__exit__`)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path


class Request:
    """One request read off a connection: its headers (lower-case names) and body."""

    def __init__(self, head: bytes, body: bytes) -> None:
        lines = head.decode("latin-1").split("\r\n")
        self.line = lines[0]
        self.headers = {
            name.strip().lower(): value.strip()
            for name, _, value in (line.partition(":") for line in lines[1:] if line)
        }
        self.body = body


def read_request(conn: socket.socket, buffer: bytearray) -> Request | None:
    """The next request on `conn` (None once the client has closed it)."""
    while b"\r\n\r\n" not in buffer:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        buffer += chunk
    head, _, rest = bytes(buffer).partition(b"\r\n\r\n")
    request = Request(head, b"")
    length = int(request.headers.get("content-length", "0"))
    while len(rest) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        rest += chunk
    request.body, remainder = rest[:length], rest[length:]
    buffer[:] = remainder
    return request


Script = Callable[["Connection"], None]


class Connection:
    """One accepted connection as a script sees it: read requests, send bytes (counted)."""

    def __init__(self, server: RawServer, conn: socket.socket) -> None:
        self.server, self.sock, self._buffer = server, conn, bytearray()

    def request(self) -> Request | None:
        return read_request(self.sock, self._buffer)

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)
        with self.server.lock:
            self.server.bytes_sent += len(data)


class RawServer:
    """A TCP server on 127.0.0.1 running `script(connection)` on a thread per connection.

    `accepted` counts connections, `open_connections` those the client has not closed yet
    (a watcher notices the client's FIN when the script is idle), `bytes_sent` what was sent.
    """

    def __init__(self, script: Script) -> None:
        self._script = script
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/events"
        self.lock = threading.Lock()
        self.accepted = 0
        self.bytes_sent = 0
        self._open: set[socket.socket] = set()
        self._stopped = False
        self.accepting = threading.Thread(target=self._accept, daemon=True)
        self.accepting.start()

    @property
    def open_connections(self) -> int:
        with self.lock:
            return len(self._open)

    def _accept(self) -> None:
        while not self._stopped:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            with self.lock:
                if self._stopped:  # accepted as it stopped: answered by no script
                    conn.close()
                    return
                self.accepted += 1
                self._open.add(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            self._script(Connection(self, conn))
        except OSError:
            pass  # the client gave up: what these tests provoke
        finally:
            with self.lock:
                self._open.discard(conn)
            conn.close()

    def wait_for_open_connections(self, count: int, within: float = 10.0) -> int:
        """Poll until `count` connections are open (bounded); returns the last count seen."""
        give_up = time.monotonic() + within
        while self.open_connections != count and time.monotonic() < give_up:
            time.sleep(0.05)
        return self.open_connections

    def __enter__(self) -> RawServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        """Stop accepting and end every open connection. Closing the listener alone left it
        listening: Linux keeps a socket alive while another thread is blocked in its
        `accept()`, so the port went on accepting connections, and this server's script
        answered them, after the test that started it had ended."""
        with self.lock:
            self._stopped = True
            still_open = list(self._open)
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # ends the blocked accept() (EINVAL)
        self.accepting.join(5)
        self._listener.close()
        for conn in still_open:  # its script sees the end and closes it (in its own thread)
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


def answer(status: int, body: bytes = b"", headers: tuple[tuple[str, str], ...] = ()) -> bytes:
    """A complete keep-alive HTTP/1.1 answer."""
    lines = [f"HTTP/1.1 {status} Status", f"Content-Length: {len(body)}"]
    lines += [f"{name}: {value}" for name, value in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def serve_forever(handle: Callable[[Connection, Request], None]) -> Script:
    """A keep-alive script: `handle` answers each request until the client closes."""

    def script(connection: Connection) -> None:
        while (request := connection.request()) is not None:
            handle(connection, request)

    return script


def trickle(connection: Connection, data: bytes, every: float, limit: float) -> None:
    """Send `data` one byte every `every` seconds, for at most `limit` seconds."""
    give_up = time.monotonic() + limit
    for byte in data:
        if time.monotonic() > give_up:
            return
        connection.send(bytes([byte]))
        time.sleep(every)


def wait_in_accept(thread: threading.Thread, within: float = 5.0) -> None:
    """Until the kernel says `thread` is blocked in `accept()` (its wait channel): how a test
    forces a server to stop while its accepting thread waits there."""
    wchan = Path(f"/proc/self/task/{thread.native_id}/wchan")
    give_up = time.monotonic() + within
    while "accept" not in wchan.read_text():
        assert time.monotonic() < give_up, f"not in accept(): {wchan.read_text()!r}"
        time.sleep(0.01)


TRICKLED_BYTES = 1000


class TricklingTarget:
    """A script that answers every request `202` with a body of `TRICKLED_BYTES` it trickles,
    a byte every `every` seconds; counts the requests that arrived. Once `stop` is set it
    sends no more body and closes: an answer that then reaches a client ends
    `end of response with 1000 bytes missing` (curl 18)."""

    def __init__(self, every: float = 0.2) -> None:
        self.every = every
        self.arrived: list[bytes] = []
        self.first = threading.Event()  # a request arrived
        self.second = threading.Event()  # a second request arrived
        self.stop = threading.Event()
        self.finished = threading.Event()  # a body was trickled to its end

    def __call__(self, connection: Connection) -> None:
        while (request := connection.request()) is not None:
            self.arrived.append(request.body)
            self.first.set()
            if len(self.arrived) >= 2:
                self.second.set()
            connection.send(b"HTTP/1.1 202 Accepted\r\nContent-Length: %d\r\n\r\n" % TRICKLED_BYTES)
            try:
                for _ in range(TRICKLED_BYTES):
                    if self.stop.wait(self.every):
                        return
                    connection.send(b"x")
            except OSError:
                return  # the client gave up and closed the connection
            self.finished.set()
