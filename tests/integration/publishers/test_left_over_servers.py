"""A scripted server from a test that has ended accepts nothing afterwards: a later test's
delivery to its port is refused (the channel's fault, no attempt spent) instead of reaching a
server that is no longer anyone's.

`RawServer` used to close its listener while its accepting thread was blocked in `accept()`,
and Linux keeps such a socket listening: the port went on accepting connections after the
test, and its script answered them. A scripted server that answers `202` dropped them
unanswered (`curl 52 GOT_NOTHING`); the trickling nudge target answered exactly the curl 18
flake of a cost test (`end of response with 1000 bytes missing`): it promises 1,000 bytes and,
stopped, closes. Both are a retry that spends an event's attempt on an answer that was never
its receiver's. The condition is forced: the accepting thread is seen blocked in `accept()` by
the kernel before the server stops.
"""

from __future__ import annotations

from firestore_outbox.nudge.targets import HttpNudge
from firestore_outbox.publishers.base import Delivery, Outcome
from firestore_outbox.publishers.http.publisher import HttpPublisher
from tests.support.wire_servers import (
    Connection,
    RawServer,
    TricklingTarget,
    answer,
    serve_forever,
    wait_in_accept,
)


def delivery(event_id: str) -> Delivery:
    return Delivery(event_id, "T", "/s", "o-1", "2026-11-21T08:00:00Z", b"{}", 1)


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


def test_a_stopped_trickling_target_answers_no_later_delivery() -> None:
    """The answer of the curl 18 flake, exactly: a trickling nudge target (the one of
    `test_nudge_http_deadline`) is stopped by its test; a delivery to its port afterwards
    must find nothing there. With the listener left listening, the target's script took the
    delivery, promised 1,000 bytes and closed: `curl 18 PARTIAL_FILE: end of response with
    1000 bytes missing`, a retry that spent the event's attempt."""
    target = TricklingTarget()
    with RawServer(target) as server:
        nudge = HttpNudge(server.url, timeout=0.5)
        try:
            assert nudge.send(frozenset({1})) is False  # its test: the trickle cut short
        finally:
            nudge.close()
            target.stop.set()
        wait_in_accept(server.accepting)  # the condition, forced

    late = HttpPublisher(server.url, connect_timeout=1.0, read_timeout=2.0)
    result = late.publish(delivery("e-late"))
    late.close()
    assert "bytes missing" not in (result.error or ""), result
    assert result.outcome is Outcome.CHANNEL, result  # refused: no attempt spent
    assert (result.error or "").startswith("ConnectionError: curl 7 COULDNT_CONNECT"), result
    assert len(target.arrived) == 1  # the nudge of its own test, nothing after
