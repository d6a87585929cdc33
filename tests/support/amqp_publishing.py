"""What the `AmqpPublisher` tests share: deliveries, a pika channel of the test's own, a
resolver that answers chosen names, and queues bound to an exchange of the test's own.

    from tests.support.amqp_publishing import amqp_channel, fake_names  # noqa: F401  (fixtures)
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pika
import pytest
from pika.adapters.blocking_connection import BlockingChannel

from firestore_outbox.publishers.amqp.publisher import AmqpPublisher, AmqpTarget
from firestore_outbox.publishers.base import Delivery
from tests.integration.publishers.test_dns_deadline import SlowResolver
from tests.support.rabbitmq import Broker

DELIVERY = Delivery("e-7", "OrderCreated", "/shop", "o-7", "2026-11-21T08:00:00Z", b'{"n":1}', 1)


def event(n: int, event_type: str = "OrderCreated") -> Delivery:
    """Delivery `e-{n}` of order `o-{n}`, with an empty payload."""
    return Delivery(f"e-{n}", event_type, "/shop", f"o-{n}", "2026-11-21T08:00:00Z", b"{}", 1)


@pytest.fixture(name="channel")
def amqp_channel(rabbitmq: Broker) -> Iterator[BlockingChannel]:
    """A plain pika channel of the test's own, to declare, bind and consume."""
    connection = pika.BlockingConnection(rabbitmq.parameters())
    try:
        yield connection.channel()
    finally:
        connection.close()


@pytest.fixture(name="names")
def fake_names(monkeypatch: pytest.MonkeyPatch) -> Iterator[SlowResolver]:
    """`socket.getaddrinfo` answering the names a test gives it (`tests/integration/
    test_dns_deadline.py`), every other name as the real resolver does."""
    fake = SlowResolver(socket.getaddrinfo)
    monkeypatch.setattr(socket, "getaddrinfo", fake)
    yield fake
    fake.release()


def queue_on(channel: BlockingChannel, unique: str, *keys: str, **arguments: object) -> str:
    """A durable queue bound to a direct exchange `x-<unique>` by each routing key."""
    exchange, queue = f"x-{unique}", f"q-{unique}"
    channel.exchange_declare(exchange, "direct", durable=True)
    channel.queue_declare(queue, durable=True, arguments=arguments or None)
    for key in keys:
        channel.queue_bind(queue, exchange, key)
    return queue


def publisher(
    url: str, exchange: str, routing_key: str | None = None, **options: Any
) -> AmqpPublisher:
    """A publisher to `exchange` on `url` with short timeouts (2 s connect, 3 s read)."""
    target = AmqpTarget(url=url, exchange=exchange, routing_key=routing_key)
    return AmqpPublisher(target, connect_timeout=2, read_timeout=3, **options)


def take(channel: BlockingChannel, queue: str) -> tuple[pika.BasicProperties, bytes]:
    """The next message in `queue` (acknowledged); fails the test when there is none."""
    method, properties, body = channel.basic_get(queue, auto_ack=True)
    assert method is not None, f"no message in {queue}"
    return properties, body
