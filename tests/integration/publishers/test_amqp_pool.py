"""`AmqpPublisher`'s pool of connections on a real RabbitMQ node: bounded under concurrency,
broker-closed links replaced, nothing left open after `close()`."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pika
from pika.adapters.blocking_connection import BlockingChannel

from firestore_outbox.publishers.amqp import pool as amqp_module
from firestore_outbox.publishers.base import Outcome
from tests.support.amqp_publishing import (
    amqp_channel,  # noqa: F401  (the `channel` fixture)
    event,
    publisher,
    queue_on,
)
from tests.support.rabbitmq import Broker


def test_concurrent_publishes_share_a_bounded_pool_of_connections(
    rabbitmq: Broker, channel: BlockingChannel, unique: str
) -> None:
    queue = queue_on(channel, unique, "k")
    amqp = publisher(rabbitmq.url, f"x-{unique}", "k", pool_size=4)

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(amqp.publish, [event(n) for n in range(200)]))

    assert {r.outcome for r in results} == {Outcome.DELIVERED}
    assert channel.queue_declare(queue, passive=True).method.message_count == 200
    assert len(amqp._pool.idle) <= 4  # one link per thread at most
    amqp.close()


def test_more_threads_than_the_pool_wait_for_a_connection_and_all_deliver(
    rabbitmq: Broker, channel: BlockingChannel, unique: str
) -> None:
    # pool_size bounds the connections open, not the thread count: 8 threads share 2.
    queue = queue_on(channel, unique, "k")
    amqp = publisher(rabbitmq.url, f"x-{unique}", "k", pool_size=2)
    opened: list[object] = []
    link_class = amqp_module.Link

    def counted(*args: object) -> object:
        link = link_class(*args)
        opened.append(link)
        return link

    amqp_module.Link = counted  # type: ignore[assignment,misc]
    try:
        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(amqp.publish, [event(n) for n in range(80)]))
    finally:
        amqp_module.Link = link_class  # type: ignore[misc]
    assert {r.outcome for r in results} == {Outcome.DELIVERED}
    assert channel.queue_declare(queue, passive=True).method.message_count == 80
    assert len(opened) <= 2
    amqp.close()


def test_pooled_connections_the_broker_closed_are_replaced_without_failing_an_event(
    rabbitmq: Broker, unique: str
) -> None:
    with pika.BlockingConnection(rabbitmq.parameters()) as connection:
        queue = queue_on(connection.channel(), unique, "k")
    amqp = publisher(rabbitmq.url, f"x-{unique}", "k")
    assert amqp.publish(event(1)).outcome is Outcome.DELIVERED
    [first] = amqp._pool.idle
    rabbitmq.ctl("close_all_connections", "closed by the test")
    time.sleep(0.5)  # the broker's Connection.Close waits in the idle link's socket

    assert amqp.publish(event(2)).outcome is Outcome.DELIVERED

    [second] = amqp._pool.idle
    assert second is not first
    with pika.BlockingConnection(rabbitmq.parameters()) as connection:
        count = connection.channel().queue_declare(queue, passive=True).method.message_count
    assert count == 2


def test_after_close_no_connection_stays_open(rabbitmq: Broker, unique: str) -> None:
    amqp = publisher(rabbitmq.url, "", f"q-{unique}")
    with pika.BlockingConnection(rabbitmq.parameters()) as connection:
        connection.channel().queue_declare(f"q-{unique}")
    assert amqp.publish(event(1)).outcome is Outcome.DELIVERED

    amqp.close()

    assert amqp._pool.idle == []
    assert amqp.publish(event(2)).outcome is Outcome.DELIVERED  # still usable: a new link
    assert amqp._pool.idle == []  # given back after close: closed, not pooled
