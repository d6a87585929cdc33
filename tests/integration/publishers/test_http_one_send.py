"""A delivery's head and body leave in one send (`firestore_outbox.publishers.http.wire`): counted
by the
`http.client.send` audit event, which http.client raises for every send, against a real local
downstream, which must still receive every byte and header as before."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import urllib3

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.publishers.base import Delivery, Outcome
from firestore_outbox.publishers.http.publisher import HttpPublisher, HttpTransport

BODY = b'{"orderId": "o-1", "items": [' + b'{"productId": "p", "quantity": 1},' * 200 + b"{}]}"
DELIVERY = Delivery("e-1", "OrderCreated", "/shop", "o-1", "2026-11-21T08:00:00Z", BODY, 1)

_counting = threading.local()


def _count_sends(event: str, args: tuple[Any, ...]) -> None:
    sends = getattr(_counting, "sends", None)
    if event == "http.client.send" and sends is not None:
        sends.append(bytes(args[1]))


sys.addaudithook(_count_sends)  # audit hooks cannot be removed: it counts only when asked


@pytest.fixture
def sends() -> Iterator[list[bytes]]:
    """What this thread's HTTP connections send, one entry per send."""
    _counting.sends = []
    try:
        yield _counting.sends
    finally:
        _counting.sends = None


def test_a_delivery_leaves_in_one_send_and_arrives_whole(
    receiver: Receiver, sends: list[bytes]
) -> None:
    publisher = HttpPublisher(receiver.url, connect_timeout=1.0, read_timeout=2.0)
    results = [publisher.publish(DELIVERY) for _ in range(3)]  # a new connection, then reused
    assert {r.outcome for r in results} == {Outcome.DELIVERED}
    assert len(sends) == 3
    assert all(send.startswith(b"POST /events HTTP/1.1\r\n") for send in sends)
    assert all(send.endswith(b"\r\n\r\n" + BODY) for send in sends)
    received = receiver.received
    assert [r.body for r in received] == [BODY] * 3
    assert received[0].headers["content-length"] == str(len(BODY))
    assert received[0].headers["ce-id"] == "e-1"
    assert len({r.peer for r in received}) == 1


def test_a_callers_own_framing_is_sent_as_it_says(receiver: Receiver, sends: list[bytes]) -> None:
    transport = HttpTransport(connect_timeout=1.0, read_timeout=2.0)
    headers = {"Content-Type": "application/json", "Transfer-Encoding": "chunked"}
    result = transport.post(receiver.url, BODY, headers)
    assert result.outcome is Outcome.DELIVERED
    assert receiver.received[0].body == BODY
    assert len(sends) > 1  # head, chunk, last chunk: the caller chose chunked framing


def test_after_close_the_transport_opens_its_pool_again(receiver: Receiver) -> None:
    publisher = HttpPublisher(receiver.url, connect_timeout=1.0, read_timeout=2.0)
    assert publisher.publish(DELIVERY).outcome is Outcome.DELIVERED
    publisher.close()
    assert publisher.publish(DELIVERY).outcome is Outcome.DELIVERED
    assert len({r.peer for r in receiver.received}) == 2  # a new connection, not a closed one


@pytest.mark.parametrize(
    "headers",
    [
        {"Content-Type": "application/json", "ce-id": "e-1"},  # urllib3's User-Agent added
        {"User-Agent": "ours/1", "host": "downstream.test", "Accept-Encoding": "gzip"},
    ],
)
def test_the_direct_path_sends_byte_for_byte_the_head_urllib3_sends(
    receiver: Receiver, sends: list[bytes], headers: dict[str, str]
) -> None:
    transport = HttpTransport(connect_timeout=1.0, read_timeout=2.0)
    assert transport.post(receiver.url, BODY, headers).outcome is Outcome.DELIVERED
    with urllib3.connection_from_url(receiver.url) as pool:
        assert pool.urlopen("POST", "/events", body=BODY, headers=headers).status == 200
    ours, urllib3s = sends[0], b"".join(sends[1:])  # urllib3: the head, then the body
    assert ours == urllib3s
