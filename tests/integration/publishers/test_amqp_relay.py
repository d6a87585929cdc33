"""The relay on the Firestore emulator publishing to a real RabbitMQ node: every event reaches a
consumer with its id, and a broker restart in the middle of a drain loses nothing."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pika
import pytest
from google.cloud import firestore

from firestore_outbox.firestore.settings import Settings
from firestore_outbox.publishers.amqp.settings import AmqpSettings
from firestore_outbox.relay import Relay
from firestore_outbox.relay.config import RelayConfig
from firestore_outbox.relay.events import encode_json
from function_compute.relay_handler import handler
from tests.support.helpers import (
    FAST,
    add_orders,
    as_function_environment,
    configured,
    outbox,
    run_until,
)
from tests.support.rabbitmq import Broker

pytestmark = pytest.mark.emulator


def amqp_config(broker: Broker, exchange: str, **changes: Any) -> RelayConfig:
    publisher = AmqpSettings(url=broker.url, exchange=exchange, routing_key="orders")
    return configured(FAST, publisher=publisher, **changes)


def declare(broker: Broker, unique: str) -> tuple[str, str]:
    """A durable direct exchange and a durable queue bound to it by `orders`."""
    exchange, queue = f"x-{unique}", f"q-{unique}"
    with pika.BlockingConnection(broker.parameters()) as connection:
        channel = connection.channel()
        channel.exchange_declare(exchange, "direct", durable=True)
        channel.queue_declare(queue, durable=True)
        channel.queue_bind(queue, exchange, "orders")
    return exchange, queue


def consume_all(broker: Broker, queue: str) -> list[tuple[str, str, bytes]]:
    """Every message in `queue` as (message id, cloudEvents_id header, body), acknowledged."""
    seen = []
    with pika.BlockingConnection(broker.parameters()) as connection:
        channel = connection.channel()
        for method, properties, body in channel.consume(queue, inactivity_timeout=1.0):
            if method is None:
                break
            seen.append((properties.message_id, properties.headers["cloudEvents_id"], body))
            channel.basic_ack(method.delivery_tag)
        channel.cancel()
    return seen


def queued(broker: Broker, queue: str) -> int:
    with pika.BlockingConnection(broker.parameters()) as connection:
        return int(connection.channel().queue_declare(queue, passive=True).method.message_count)


def add_events(db: firestore.Client, settings: Settings, count: int) -> list[str]:
    """`count` due outbox events written in one batch (as another producer might)."""
    batch = db.batch()
    ids = [f"ev-{n:04d}" for n in range(count)]
    for event_id in ids:
        batch.set(
            db.collection(settings.outbox_collection).document(event_id),
            {
                "eventId": event_id,
                "eventType": "OrderCreated",
                "aggregateType": "order",
                "aggregateId": f"o-{event_id}",
                "payload": {"orderId": f"o-{event_id}"},
                "status": "PENDING",
                "attempts": 0,
                "createdAt": firestore.SERVER_TIMESTAMP,
                "updatedAt": firestore.SERVER_TIMESTAMP,
                "nextAttemptAt": firestore.SERVER_TIMESTAMP,
            },
        )
    batch.commit()
    return ids


def test_a_consumer_sees_every_event_once_with_its_id(
    rabbitmq: Broker, db: firestore.Client, settings: Settings, unique: str
) -> None:
    exchange, queue = declare(rabbitmq, unique)
    event_ids = add_orders(db, settings, 12)
    documents = outbox(db, settings)

    summary = Relay(db, settings, amqp_config(rabbitmq, exchange)).run()

    assert summary["processed"] == 12, summary
    seen = consume_all(rabbitmq, queue)
    assert sorted(message_id for message_id, _, _ in seen) == event_ids
    for message_id, header_id, body in seen:
        assert header_id == message_id
        assert body == encode_json(documents[message_id]["payload"])
    assert {d["status"] for d in outbox(db, settings).values()} == {"PROCESSED"}


def test_a_broker_restart_in_the_middle_of_a_drain_loses_nothing(
    rabbitmq: Broker, db: firestore.Client, settings: Settings, unique: str
) -> None:
    exchange, queue = declare(rabbitmq, unique)
    event_ids = add_events(db, settings, 400)
    config = amqp_config(rabbitmq, exchange, batch_size=20, concurrency=2)
    relay = Relay(db, settings, config)
    summaries: list[dict[str, Any]] = []
    run = threading.Thread(target=lambda: summaries.append(relay.run()))

    run.start()
    while queued(rabbitmq, queue) < 40:  # a tenth published, confirmed and persisted
        assert run.is_alive(), f"drained before the broker stopped: {summaries}"
        time.sleep(0.01)
    rabbitmq.stop()
    run.join(30)
    assert not run.is_alive()
    [first] = summaries
    assert first["stoppedBy"] == "channel", first
    assert first["processed"] < 400
    rabbitmq.start()

    run_until(
        relay,
        lambda: all(d["status"] == "PROCESSED" for d in outbox(db, settings).values()),
        timeout=60,
    )

    seen = consume_all(rabbitmq, queue)
    assert {message_id for message_id, _, _ in seen} == set(event_ids)  # duplicates allowed


def test_the_function_compute_handler_publishes_to_amqp_from_its_environment(
    rabbitmq: Broker,
    db: firestore.Client,
    settings: Settings,
    unique: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    exchange, queue = declare(rabbitmq, unique)
    event_ids = add_orders(db, settings, 3)
    url = rabbitmq.url.replace("guest:guest", "guest:wr0ng-pa55word")
    as_function_environment(
        monkeypatch,
        settings,
        tmp_path,
        RELAY_PUBLISHER="amqp",
        RELAY_AMQP_URL=url,
        RELAY_AMQP_EXCHANGE=exchange,
        RELAY_AMQP_ROUTING_KEY="orders",
        # Not a test of timeouts: a new broker connection on a loaded machine took more than
        # FAST's 0.5 s (CI: the second run's three attempts timed out, none delivered).
        RELAY_HTTP_TIMEOUT_SECONDS="5",
        RELAY_LOCK_TIMEOUT_SECONDS="30",
    )
    context = SimpleNamespace(request_id="req-amqp", function=SimpleNamespace(timeout=60))

    refused = handler(b"", context)  # a wrong password: the channel, nothing spent
    monkeypatch.setenv("RELAY_AMQP_URL", rabbitmq.url)
    summary = handler(b"", context)

    assert refused["stoppedBy"] == "channel" and refused["processed"] == 0, refused
    assert summary["processed"] == 3, summary
    assert sorted(message_id for message_id, _, _ in consume_all(rabbitmq, queue)) == event_ids
    assert "wr0ng-pa55word" not in caplog.text
    assert all(
        "wr0ng-pa55word" not in str(d.get("lastError")) for d in outbox(db, settings).values()
    )
