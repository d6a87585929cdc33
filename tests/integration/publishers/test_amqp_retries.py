"""`AmqpPublisher` on a real RabbitMQ node: a nacked or unconfirmed message is a retry, by the
delivery's deadline."""

from __future__ import annotations

import time

from pika.adapters.blocking_connection import BlockingChannel

from firestore_outbox.publishers.base import Delivery, Outcome
from tests.support.amqp_publishing import (
    amqp_channel,  # noqa: F401  (the `channel` fixture)
    event,
    publisher,
    queue_on,
)
from tests.support.rabbitmq import Broker


def test_a_nack_is_retried(rabbitmq: Broker, channel: BlockingChannel, unique: str) -> None:
    # A full queue that refuses more (`reject-publish`) makes the broker nack the message.
    queue_on(channel, unique, "k", **{"x-max-length": 1, "x-overflow": "reject-publish"})
    amqp = publisher(rabbitmq.url, f"x-{unique}", "k")

    assert amqp.publish(event(1)).outcome is Outcome.DELIVERED
    result = amqp.publish(event(2))

    assert result.outcome is Outcome.RETRY
    assert result.error == "AMQP: the broker nacked the message"


def test_no_confirm_by_the_deadline_is_a_retry_within_the_deadline(
    rabbitmq: Broker, channel: BlockingChannel, unique: str
) -> None:
    queue_on(channel, unique, "k")
    amqp = publisher(rabbitmq.url, f"x-{unique}", "k")
    assert amqp.publish(event(0)).outcome is Outcome.DELIVERED  # a pooled, open link
    # A disk alarm blocks every publishing connection: the message is never confirmed.
    rabbitmq.ctl("set_disk_free_limit", "1000000GB")
    try:
        started = time.monotonic()
        late = Delivery(**{**event(1).__dict__, "deadline": started + 1.0})
        result = amqp.publish(late)
        waited = time.monotonic() - started
    finally:
        rabbitmq.ctl("set_disk_free_limit", "1MB")

    assert result.outcome is Outcome.RETRY
    assert result.error is not None and result.error.startswith("timeout: AMQP")
    assert waited < 3.0  # the delivery's deadline, not the publisher's 5 s bound
    assert amqp.publish(event(2)).outcome is Outcome.DELIVERED  # a new link after the alarm
