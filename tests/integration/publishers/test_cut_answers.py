"""An answer cut short by the transport (the deadline passed, or no byte came for the read
timeout) leaves nothing behind on the handle that carried it: its connection is never reused,
so the rest of that answer, or the stalled server's reply to a new request on it, can never
become the answer of the next POST.

Written for the curl 18 flake (issue 43: deliveries to a receiver that answers empty bodies
failed with `end of response with 1000 bytes missing`, the answer of a test server that
promises 1,000 bytes and closes). The server here promises 1,000 bytes and sends none, and
reads on: a request reaching it on that connection again is counted, and answered `204` so
that a reuse would go unnoticed by the client. The next POST must come on a new connection.
"""

from __future__ import annotations

import threading
import time

import pytest

from firestore_outbox.publishers.base import Outcome
from firestore_outbox.publishers.http.transport import HttpTransport
from tests.support.wire_servers import Connection, RawServer


class PromisesAndStalls:
    """The first request of all is answered `202` with a 1,000-byte length and no body byte;
    every other request, `204`. Records how many requests each connection carried."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.per_connection: list[int] = []
        self.promised = False

    def __call__(self, connection: Connection) -> None:
        with self.lock:
            index = len(self.per_connection)
            self.per_connection.append(0)
        while connection.request() is not None:
            with self.lock:
                self.per_connection[index] += 1
                first, self.promised = not self.promised, True
            if first:
                connection.send(b"HTTP/1.1 202 Accepted\r\nContent-Length: 1000\r\n\r\n")
            else:
                connection.send(b"HTTP/1.1 204 No Content\r\n\r\n")


@pytest.mark.parametrize("cut_by", ["deadline", "read timeout"])
def test_a_connection_whose_answer_was_cut_short_is_never_reused(cut_by: str) -> None:
    server_script = PromisesAndStalls()
    by_deadline = cut_by == "deadline"
    transport = HttpTransport(connect_timeout=1.0, read_timeout=5.0 if by_deadline else 0.3)
    with RawServer(server_script) as server:
        try:
            deadline = time.monotonic() + 0.3 if by_deadline else None
            cut = transport.post(server.url, b"{}", {}, deadline=deadline)
            after = transport.post(server.url, b"{}", {})
        finally:
            transport.close()
    assert cut.outcome is Outcome.RETRY and (cut.error or "").startswith("timeout"), cut
    assert after.outcome is Outcome.DELIVERED, after
    assert server_script.per_connection == [1, 1]  # the second POST on a connection of its own
