"""A scripted server from a test that has ended answers nothing afterwards, at its own port
or at anyone else's: a later delivery is refused (the channel's fault, no attempt spent) or
answered by its own receiver, never by a server that is no longer anyone's.

`RawServer` used to close its listener while its accepting thread was blocked in `accept()`.
Linux keeps such a socket listening, so its port went on accepting connections, answered by
the ended test's script. Worse, when the blocked call is restarted by the kernel (the process
stopped and continued, or frozen and thawed), it is restarted by the descriptor's number,
which the next listener made has by then, a later test's receiver: the ended script takes
one of that receiver's connections. That is the curl 18 flake of a cost test on Python 3.10
(two deliveries to its own receiver answered `end of response with 1000 bytes missing`): the
two trickling nudge targets promise 1,000 bytes and, stopped, close. Each answer is a retry
that spends an event's attempt; an ended script answering `200` would have been a delivery
the receiver never saw. The conditions are forced: the accepting thread is seen blocked in
`accept()` by the kernel before the server stops; the restart is a signal handled with
SA_RESTART, sent to that thread.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from firestore_outbox.consumer.receiver import Receiver
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


def stopped_trickling_target() -> tuple[TricklingTarget, RawServer, int]:
    """A trickling nudge target's test, ended: a nudge cut short by its deadline, the target
    stopped while its accepting thread is seen blocked in `accept()` (the condition, forced).
    With the number its listener's descriptor had."""
    target = TricklingTarget()
    with RawServer(target) as server:
        nudge = HttpNudge(server.url, timeout=0.5)
        try:
            assert nudge.send(frozenset({1})) is False  # the trickle cut short
        finally:
            nudge.close()
            target.stop.set()
        number = server._listener.fileno()
        wait_in_accept(server.accepting)
    return target, server, number


def test_a_stopped_trickling_target_answers_no_later_delivery() -> None:
    """The answer of the curl 18 flake, exactly: a trickling nudge target (the one of
    `test_nudge_http_deadline`) is stopped by its test; a delivery to its port afterwards
    must find nothing there. With the listener left listening, the target's script took the
    delivery, promised 1,000 bytes and closed: `curl 18 PARTIAL_FILE: end of response with
    1000 bytes missing`, a retry that spent the event's attempt."""
    target, server, _ = stopped_trickling_target()
    late = HttpPublisher(server.url, connect_timeout=1.0, read_timeout=2.0)
    result = late.publish(delivery("e-late"))
    late.close()
    assert "bytes missing" not in (result.error or ""), result
    assert result.outcome is Outcome.CHANNEL, result  # refused: no attempt spent
    assert (result.error or "").startswith("ConnectionError: curl 7 COULDNT_CONNECT"), result
    assert len(target.arrived) == 1  # the nudge of its own test, nothing after


DELIVERIES = 10


@contextmanager
def restarting_calls() -> Iterator[None]:
    """SIGUSR1 handled with SA_RESTART: a blocking call it interrupts is restarted by the
    kernel with its arguments as they were, a file descriptor by its number (as after a
    process is stopped and continued, or frozen and thawed)."""
    before = signal.signal(signal.SIGUSR1, lambda *_: None)
    signal.siginterrupt(signal.SIGUSR1, False)
    try:
        yield
    finally:
        signal.signal(signal.SIGUSR1, before)


def restart_blocked_call(thread: threading.Thread) -> None:
    """Interrupt `thread`'s blocking call with SIGUSR1 (`restarting_calls`), and wait until the
    kernel has restarted it: the thread was woken (a context switch more) and is in
    `accept()` again."""
    task = Path(f"/proc/self/task/{thread.native_id}")

    def switches() -> int:
        status = (task / "status").read_text()
        return int(status.split("voluntary_ctxt_switches:")[1].split()[0])

    before = switches()
    signal.pthread_kill(thread.ident or 0, signal.SIGUSR1)
    give_up = time.monotonic() + 5
    while switches() == before or "accept" not in (task / "wchan").read_text():
        assert time.monotonic() < give_up, "the call was not restarted"
        time.sleep(0.01)


def receiver_on_descriptor(number: int) -> Receiver:
    """A receiver (not started) whose listener has file descriptor `number` (free): the
    kernel hands out the lowest free number, so every lower free one is taken for the while."""
    fillers: list[int] = []
    while (fd := os.open(os.devnull, os.O_RDONLY)) < number:
        fillers.append(fd)
    os.close(fd)
    receiver = Receiver()
    for fd in fillers:
        os.close(fd)
    assert receiver._server.fileno() == number, "the descriptor was taken meanwhile"
    return receiver


def test_a_stopped_trickling_targets_thread_takes_no_connection_of_a_later_receiver() -> None:
    """The curl 18 flake's path: deliveries to a later test's own receiver answered by an
    ended test's trickling target. Its accepting thread was left blocked in `accept()` on the
    closed listener; a stop and continue of the process (or a freeze) restarts that call by
    the descriptor's number, which the next listener made (the receiver's) has by then: the
    thread took the receiver's next connection and answered it `202` with 1,000 bytes
    promised, then closed. The restart is forced on that thread (a signal handled with
    SA_RESTART) and the receiver's listener is made on the freed number."""
    target, server, number = stopped_trickling_target()
    with restarting_calls(), receiver_on_descriptor(number) as receiver:
        if server.accepting.is_alive():  # still in accept(): restarted on the receiver's
            restart_blocked_call(server.accepting)
        results = []
        for n in range(DELIVERIES):  # each on a connection of its own
            http = HttpPublisher(receiver.url, connect_timeout=1.0, read_timeout=2.0)
            results.append(http.publish(delivery(f"e-{n}")))
            http.close()
    assert [r.error for r in results] == [None] * DELIVERIES, results  # all the receiver's
    assert [r.event_id for r in receiver.received] == [f"e-{n}" for n in range(DELIVERIES)]
    assert len(target.arrived) == 1  # the nudge of its own test, nothing after
