"""`AmqpPublisher` looks the broker's name up on the relay's own resolver pool: the address it
gets is used, a hanging lookup is the channel's fault by the connect timeout."""

from __future__ import annotations

import time

from pika.adapters.blocking_connection import BlockingChannel

from firestore_outbox.publishers.amqp.publisher import AmqpPublisher, AmqpTarget
from firestore_outbox.publishers.base import Outcome
from tests.integration.publishers.test_dns_deadline import SlowResolver
from tests.support.amqp_publishing import (  # noqa: F401  (fixtures)
    DELIVERY,
    amqp_channel,
    fake_names,
    publisher,
    queue_on,
    take,
)
from tests.support.rabbitmq import Broker


def test_the_broker_name_is_looked_up_on_the_relays_pool_and_the_address_used(
    rabbitmq: Broker, channel: BlockingChannel, unique: str, names: SlowResolver
) -> None:
    queue = queue_on(channel, unique, "k")
    names.names["broker.test"] = (0.0, "127.0.0.1")
    url = rabbitmq.url.replace("127.0.0.1", "broker.test")

    assert publisher(url, f"x-{unique}", "k").publish(DELIVERY).outcome is Outcome.DELIVERED

    assert names.asked == ["broker.test"]
    assert take(channel, queue)[0].message_id == "e-7"


def test_a_hanging_lookup_of_the_broker_name_is_the_channels_fault_by_the_deadline(
    names: SlowResolver,
) -> None:
    names.names["hangs.test"] = (0.0, None)
    target = AmqpTarget(url="amqp://guest:guest@hangs.test:5672/%2F")
    amqp = AmqpPublisher(target, connect_timeout=0.5, read_timeout=5)

    started = time.monotonic()
    result = amqp.publish(DELIVERY)
    waited = time.monotonic() - started

    assert result.outcome is Outcome.CHANNEL
    assert result.error is not None and "DNS: hangs.test" in result.error
    assert waited < 2.0  # the connect timeout, however long the resolver hangs
