"""`AmqpPublisher` against a real RabbitMQ node (Debian's rabbitmq-server,
`tests/support/rabbitmq.py`):
what one event's message carries, where it is routed, and what is rejected as unroutable."""

from __future__ import annotations

from pika.adapters.blocking_connection import BlockingChannel
from standardwebhooks.webhooks import Webhook

from firestore_outbox.publishers.base import Outcome
from firestore_outbox.signing import Signer
from tests.support.amqp_publishing import (
    DELIVERY,
    amqp_channel,  # noqa: F401  (the `channel` fixture)
    event,
    publisher,
    queue_on,
    take,
)
from tests.support.rabbitmq import Broker

SECRET = "whsec_" + "c2VjcmV0LXNlY3JldC1zZWNyZXQ="


def test_an_event_is_one_persistent_confirmed_message_with_its_id_and_attributes(
    rabbitmq: Broker, channel: BlockingChannel, unique: str
) -> None:
    queue = queue_on(channel, unique, "orders")
    amqp = publisher(rabbitmq.url, f"x-{unique}", "orders")

    assert amqp.publish(DELIVERY).outcome is Outcome.DELIVERED

    properties, body = take(channel, queue)
    assert body == b'{"n":1}'
    assert properties.delivery_mode == 2  # persistent
    assert properties.message_id == "e-7"
    assert properties.type == "OrderCreated"
    assert properties.content_type == "application/json"
    assert properties.timestamp == 1795248000  # 2026-11-21T08:00:00Z
    assert properties.headers == {
        "cloudEvents_specversion": "1.0",
        "cloudEvents_id": "e-7",
        "cloudEvents_type": "OrderCreated",
        "cloudEvents_source": "/shop",
        "cloudEvents_subject": "o-7",
        "cloudEvents_time": "2026-11-21T08:00:00Z",
    }
    amqp.close()


def test_without_a_routing_key_each_event_is_routed_by_its_type(
    rabbitmq: Broker, channel: BlockingChannel, unique: str
) -> None:
    queue = queue_on(channel, unique, "OrderCreated", "OrderShipped")
    amqp = publisher(rabbitmq.url, f"x-{unique}")

    assert amqp.publish(event(1, "OrderCreated")).outcome is Outcome.DELIVERED
    assert amqp.publish(event(2, "OrderShipped")).outcome is Outcome.DELIVERED

    assert [take(channel, queue)[0].type for _ in range(2)] == ["OrderCreated", "OrderShipped"]


def test_an_unroutable_event_is_rejected_naming_where_it_could_not_go(
    rabbitmq: Broker, channel: BlockingChannel, unique: str
) -> None:
    queue = queue_on(channel, unique, "OrderCreated")
    amqp = publisher(rabbitmq.url, f"x-{unique}")

    result = amqp.publish(event(1, "OrderCancelled"))

    assert result.outcome is Outcome.REJECTED
    assert result.error is not None
    assert "unroutable" in result.error and "'OrderCancelled'" in result.error
    assert "NO_ROUTE" in result.error
    assert channel.basic_get(queue)[0] is None
    # The link stays usable: the next event goes through.
    assert amqp.publish(event(2)).outcome is Outcome.DELIVERED


def test_a_signed_event_verifies_with_the_standard_webhooks_library(
    rabbitmq: Broker, channel: BlockingChannel, unique: str
) -> None:
    queue = queue_on(channel, unique, "k")
    amqp = publisher(rabbitmq.url, f"x-{unique}", "k", signer=Signer([SECRET]))

    assert amqp.publish(DELIVERY).outcome is Outcome.DELIVERED

    properties, body = take(channel, queue)
    headers = {k: v for k, v in properties.headers.items() if k.startswith("webhook-")}
    assert set(headers) == {"webhook-id", "webhook-timestamp", "webhook-signature"}
    Webhook(SECRET).verify(body, headers)  # raises when the signature does not match
