"""The transport's kept-alive connections against raw local servers: when one is reused and
when it must not be (the downstream closed it, asked to close it, answered without a length,
answered a chunked body), and how many stay idle."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from firestore_outbox.publishers.base import Delivery, Outcome
from firestore_outbox.publishers.http.publisher import HttpPublisher, HttpTransport
from tests.support.wire_servers import Connection, RawServer, Request, answer, serve_forever

DELIVERY = Delivery("e-1", "OrderCreated", "/shop", "o-1", "2026-11-21T08:00:00Z", b"{}", 1)


def publisher(url: str, pool_size: int = 4) -> HttpPublisher:
    return HttpPublisher(url, connect_timeout=1.0, read_timeout=2.0, pool_size=pool_size)


def test_a_connection_the_downstream_closed_while_idle_is_not_reused() -> None:
    def answer_once(connection: Connection) -> None:
        if connection.request() is not None:
            connection.send(answer(200))  # then the script ends: the server closes it

    with RawServer(answer_once) as server:
        http = publisher(server.url)
        assert http.publish(DELIVERY).outcome is Outcome.DELIVERED
        assert server.wait_for_open_connections(0) == 0
        assert http.publish(DELIVERY).outcome is Outcome.DELIVERED
    assert server.accepted == 2


def test_connection_close_and_unframed_answers_end_their_connection() -> None:
    answers = [
        answer(200, headers=(("Connection", "close"),)),
        b"HTTP/1.0 200 OK\r\n\r\nno length: read to the end",
    ]

    def script(connection: Connection) -> None:
        if connection.request() is not None:
            connection.send(answers[min(server.accepted, 2) - 1])

    with RawServer(script) as server:
        http = publisher(server.url)
        results = [http.publish(DELIVERY) for _ in range(2)]
    assert [r.outcome for r in results] == [Outcome.DELIVERED] * 2
    assert server.accepted == 2


def test_a_chunked_answer_read_whole_keeps_its_connection() -> None:
    chunked = b"HTTP/1.1 503 Busy\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nbusy\r\n0\r\n\r\n"
    with RawServer(serve_forever(lambda c, _: c.send(chunked))) as server:
        http = publisher(server.url)
        results = [http.publish(DELIVERY) for _ in range(3)]
    assert [r.error for r in results] == ["HTTP 503: busy"] * 3
    assert server.accepted == 1


def test_at_most_maxsize_connections_stay_idle() -> None:
    arrived = threading.Barrier(6)

    def hold_until_six(connection: Connection, request: Request) -> None:
        arrived.wait(timeout=10)  # six requests in flight at once: six connections
        connection.send(answer(200))

    with RawServer(serve_forever(hold_until_six)) as server:
        transport = HttpTransport(connect_timeout=1.0, read_timeout=20.0, pool_size=2)

        def post(_: int) -> Outcome:
            headers = {"Content-Type": "application/json"}
            return transport.post(server.url, b"{}", headers).outcome

        with ThreadPoolExecutor(6) as threads:
            assert list(threads.map(post, range(6))) == [Outcome.DELIVERED] * 6
        assert server.wait_for_open_connections(2) == 2  # four closed on their way back
        transport.close()
        assert server.wait_for_open_connections(0) == 0
