"""`AmqpPublisher` against a real RabbitMQ node (Debian's rabbitmq-server, `tests/rabbitmq.py`)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pika
import pytest
from pika.adapters.blocking_connection import BlockingChannel
from standardwebhooks.webhooks import Webhook

from app.relay.amqp import AmqpPublisher, AmqpTarget
from app.relay.publishers import Delivery, Outcome
from app.signing import Signer
from tests.integration.test_dns_deadline import SlowResolver
from tests.rabbitmq import Broker, rabbitmq_node  # noqa: F401  (the `rabbitmq` fixture)

SECRET = "whsec_" + "c2VjcmV0LXNlY3JldC1zZWNyZXQ="
DELIVERY = Delivery("e-7", "OrderCreated", "/shop", "o-7", "2026-11-21T08:00:00Z", b'{"n":1}', 1)


def event(n: int, event_type: str = "OrderCreated") -> Delivery:
    return Delivery(f"e-{n}", event_type, "/shop", f"o-{n}", "2026-11-21T08:00:00Z", b"{}", 1)


@pytest.fixture
def channel(rabbitmq: Broker) -> Iterator[BlockingChannel]:
    """A plain pika channel of the test's own, to declare, bind and consume."""
    connection = pika.BlockingConnection(rabbitmq.parameters())
    try:
        yield connection.channel()
    finally:
        connection.close()


@pytest.fixture
def names(monkeypatch: pytest.MonkeyPatch) -> Iterator[SlowResolver]:
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
    target = AmqpTarget(url=url, exchange=exchange, routing_key=routing_key)
    return AmqpPublisher(target, connect_timeout=2, read_timeout=3, **options)


def take(channel: BlockingChannel, queue: str) -> tuple[pika.BasicProperties, bytes]:
    method, properties, body = channel.basic_get(queue, auto_ack=True)
    assert method is not None, f"no message in {queue}"
    return properties, body


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


def test_a_missing_exchange_is_the_channels_fault(rabbitmq: Broker, unique: str) -> None:
    result = publisher(rabbitmq.url, f"nowhere-{unique}", "k").publish(DELIVERY)

    assert result.outcome is Outcome.CHANNEL
    assert result.error is not None and "NOT_FOUND" in result.error


def test_a_refused_login_is_the_channels_fault_and_never_shows_the_password(
    rabbitmq: Broker,
) -> None:
    url = rabbitmq.url.replace("guest:guest", "guest:wr0ng-pa55word")

    result = publisher(url, "", "k").publish(DELIVERY)

    assert result.outcome is Outcome.CHANNEL
    assert result.error is not None and "wr0ng-pa55word" not in result.error


def test_no_broker_is_the_channels_fault() -> None:
    from app.emulator import free_port

    url = f"amqp://guest:guest@127.0.0.1:{free_port()}/%2F"
    result = publisher(url, "", "k").publish(DELIVERY)

    assert result.outcome is Outcome.CHANNEL
    assert result.error is not None and result.error.startswith("ConnectionError: AMQP")


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


def test_concurrent_publishes_share_a_bounded_pool_of_connections(
    rabbitmq: Broker, channel: BlockingChannel, unique: str
) -> None:
    queue = queue_on(channel, unique, "k")
    amqp = publisher(rabbitmq.url, f"x-{unique}", "k", pool_size=4)

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(amqp.publish, [event(n) for n in range(200)]))

    assert {r.outcome for r in results} == {Outcome.DELIVERED}
    assert channel.queue_declare(queue, passive=True).method.message_count == 200
    assert len(amqp._idle) <= 4  # one link per thread at most
    amqp.close()


def test_pooled_connections_the_broker_closed_are_replaced_without_failing_an_event(
    rabbitmq: Broker, unique: str
) -> None:
    with pika.BlockingConnection(rabbitmq.parameters()) as connection:
        queue = queue_on(connection.channel(), unique, "k")
    amqp = publisher(rabbitmq.url, f"x-{unique}", "k")
    assert amqp.publish(event(1)).outcome is Outcome.DELIVERED
    [first] = amqp._idle
    rabbitmq.ctl("close_all_connections", "closed by the test")
    time.sleep(0.5)  # the broker's Connection.Close waits in the idle link's socket

    assert amqp.publish(event(2)).outcome is Outcome.DELIVERED

    [second] = amqp._idle
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

    assert amqp._idle == []
    assert amqp.publish(event(2)).outcome is Outcome.DELIVERED  # still usable: a new link
    assert amqp._idle == []  # given back after close: closed, not pooled


def test_a_server_that_never_speaks_amqp_is_the_channels_fault_by_the_connect_timeout() -> None:
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # connections complete in the backlog; nobody ever answers
    url = f"amqp://guest:guest@127.0.0.1:{silent.getsockname()[1]}/%2F"
    amqp = AmqpPublisher(AmqpTarget(url=url), connect_timeout=0.5, read_timeout=5)
    try:
        started = time.monotonic()
        result = amqp.publish(DELIVERY)
        waited = time.monotonic() - started
    finally:
        silent.close()

    assert result.outcome is Outcome.CHANNEL
    assert result.error is not None and "no AMQP connection by the deadline" in result.error
    assert waited < 2.0  # the connect timeout, not the 5.5 s attempt bound


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
