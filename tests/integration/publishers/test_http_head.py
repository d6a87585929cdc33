"""What a delivery's request carries, against a real local downstream: every byte and header
arrives, on one kept-alive connection, with no `Expect: 100-continue` wait for a body of
kilobytes (libcurl's own default) and no header the caller did not give but the framing."""

from __future__ import annotations

import pytest

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.publishers.base import Delivery, Outcome
from firestore_outbox.publishers.http.publisher import HttpPublisher, HttpTransport

BODY = b'{"orderId": "o-1", "items": [' + b'{"productId": "p", "quantity": 1},' * 200 + b"{}]}"
DELIVERY = Delivery("e-1", "OrderCreated", "/shop", "o-1", "2026-11-21T08:00:00Z", BODY, 1)


def test_a_delivery_arrives_whole_on_one_kept_alive_connection(receiver: Receiver) -> None:
    publisher = HttpPublisher(receiver.url, connect_timeout=1.0, read_timeout=2.0)
    results = [publisher.publish(DELIVERY) for _ in range(3)]  # a new connection, then reused
    assert {r.outcome for r in results} == {Outcome.DELIVERED}
    received = receiver.received
    assert [r.body for r in received] == [BODY] * 3
    assert len(BODY) > 4096 and "expect" not in received[0].headers
    assert received[0].headers["content-length"] == str(len(BODY))
    assert received[0].headers["ce-id"] == "e-1"
    assert len({r.peer for r in received}) == 1


@pytest.mark.parametrize(
    "headers",
    [
        {"Content-Type": "application/json", "ce-id": "e-1"},
        {"User-Agent": "ours/1", "host": "downstream.test", "Accept-Encoding": "gzip"},
    ],
)
def test_the_head_holds_the_callers_headers_and_the_framing_only(
    receiver: Receiver, headers: dict[str, str]
) -> None:
    transport = HttpTransport(connect_timeout=1.0, read_timeout=2.0)
    assert transport.post(receiver.url, BODY, headers).outcome is Outcome.DELIVERED
    [request] = receiver.received
    expected = {name.lower(): value for name, value in headers.items()}
    expected.setdefault("host", receiver.url.split("/")[2])
    expected["content-length"] = str(len(BODY))
    assert request.headers == expected


def test_a_callers_own_framing_is_sent_as_it_says(receiver: Receiver) -> None:
    transport = HttpTransport(connect_timeout=1.0, read_timeout=2.0)
    headers = {"Content-Type": "application/json", "Transfer-Encoding": "chunked"}
    result = transport.post(receiver.url, BODY, headers)
    assert result.outcome is Outcome.DELIVERED
    [request] = receiver.received
    assert request.body == BODY and request.headers["transfer-encoding"] == "chunked"


def test_a_header_holding_a_line_break_is_refused_and_nothing_sent(receiver: Receiver) -> None:
    transport = HttpTransport(connect_timeout=1.0, read_timeout=2.0)
    result = transport.post(receiver.url, BODY, {"ce-id": "e-1\r\nX-Injected: 1"})
    assert result.outcome is Outcome.REJECTED and "CR, LF or NUL" in (result.error or "")
    assert receiver.received == []


def test_after_close_the_transport_opens_its_pool_again(receiver: Receiver) -> None:
    publisher = HttpPublisher(receiver.url, connect_timeout=1.0, read_timeout=2.0)
    assert publisher.publish(DELIVERY).outcome is Outcome.DELIVERED
    publisher.close()
    assert publisher.publish(DELIVERY).outcome is Outcome.DELIVERED
    assert len({r.peer for r in receiver.received}) == 2  # a new connection, not a closed one
