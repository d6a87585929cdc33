"""A scripted server from a test that has ended accepts nothing afterwards: a later test's
delivery to its port is refused (the channel's fault, no attempt spent) instead of reaching a
server that is no longer anyone's.

`RawServer` used to close its listener while its accepting thread was blocked in `accept()`,
and Linux keeps such a socket listening: the port went on accepting connections after the
test, and dropped them unanswered (`curl 52 GOT_NOTHING: Empty reply from server`, a retry
that spends an attempt). Found while chasing the curl 18 flake of a cost test (two deliveries
failed with `end of response with 1000 bytes missing`); that flake's own path to a delivery is
not reproduced here. The condition is forced: the accepting thread is seen blocked in
`accept()` by the kernel before the server stops.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from firestore_outbox.publishers.base import Delivery, Outcome
from firestore_outbox.publishers.http.publisher import HttpPublisher
from tests.support.wire_servers import Connection, RawServer, answer, serve_forever


def delivery(event_id: str) -> Delivery:
    return Delivery(event_id, "T", "/s", "o-1", "2026-11-21T08:00:00Z", b"{}", 1)


def wait_in_accept(thread: threading.Thread, within: float = 5.0) -> None:
    """Until the kernel says `thread` is blocked in `accept()` (its wait channel)."""
    wchan = Path(f"/proc/self/task/{thread.native_id}/wchan")
    give_up = time.monotonic() + within
    while "accept" not in wchan.read_text():
        assert time.monotonic() < give_up, f"not in accept(): {wchan.read_text()!r}"
        time.sleep(0.01)


def test_a_stopped_scripted_server_accepts_no_later_delivery() -> None:
    def script(connection: Connection, _: object) -> None:
        connection.send(answer(202))

    with RawServer(serve_forever(script)) as server:
        http = HttpPublisher(server.url, connect_timeout=1.0, read_timeout=2.0)
        assert http.publish(delivery("e-1")).outcome is Outcome.DELIVERED
        http.close()
        wait_in_accept(server.accepting)  # the condition, forced
    assert not server.accepting.is_alive()
    assert server.wait_for_open_connections(0) == 0  # every connection ended with it

    late = HttpPublisher(server.url, connect_timeout=1.0, read_timeout=2.0)
    result = late.publish(delivery("e-2"))
    late.close()
    assert result.outcome is Outcome.CHANNEL, result  # refused: nothing listens there now
    assert (result.error or "").startswith("ConnectionError: curl 7 COULDNT_CONNECT"), result
    assert server.accepted == 1
