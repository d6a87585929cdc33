"""The relay on the Firestore emulator publishing to a real Kafka-protocol broker (Tansu): a
consumer group reads every event with every header, the signature verifies as over HTTP, the
id parses back through the CloudEvents SDK's Kafka binding, and each aggregate's events
arrive in commit order across retries."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import Any

import pytest
from cloudevents.core.bindings.kafka import KafkaMessage, from_binary_event
from google.cloud import firestore
from standardwebhooks import Webhook

from firestore_outbox.consumer import Inbox, verify_kafka_message
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.publishers.kafka.settings import KafkaSettings
from firestore_outbox.relay import Relay
from firestore_outbox.relay.config import RelayConfig
from firestore_outbox.relay.events import encode_json
from tests.support.helpers import FAST, add_orders, configured, outbox, run_until
from tests.support.kafka import KafkaBroker, headers_of
from tests.support.ordering import add_sequences

pytestmark = pytest.mark.emulator

SECRET = "a-kafka-signing-secret-of-ours"
CE_HEADERS = {"ce_id", "ce_type", "ce_source", "ce_subject", "ce_time", "ce_specversion"}


def kafka_config(broker: KafkaBroker, topic: str, **changes: Any) -> RelayConfig:
    publisher = KafkaSettings(bootstrap_servers=broker.bootstrap, topic=topic)
    # Not a test of timeouts: the producer's first connection takes about half a second.
    timings = {"http_timeout_seconds": 5.0, "lock_timeout_seconds": 30.0}
    return configured(FAST, publisher=publisher, **{**timings, **changes})


def test_a_consumer_group_reads_every_event_with_every_header(
    kafka: KafkaBroker, db: firestore.Client, settings: Settings, unique: str
) -> None:
    topic = f"orders-{unique}"
    event_ids = add_orders(db, settings, 12)
    documents = outbox(db, settings)

    with Relay(db, settings, kafka_config(kafka, topic, signing_secrets=(SECRET,))) as relay:
        summary = relay.run()

    assert summary["processed"] == 12, summary
    messages = kafka.consume(topic, 12)
    assert sorted(headers_of(m)["ce_id"] for m in messages) == event_ids
    for message in messages:
        headers = headers_of(message)
        document = documents[headers["ce_id"]]
        assert CE_HEADERS | {"content-type", "webhook-id"} <= headers.keys()
        assert message.key() == document["aggregateId"].encode()
        assert headers["ce_subject"] == document["aggregateId"]
        assert headers["ce_type"] == document["eventType"]
        assert headers["content-type"] == "application/json"
        assert message.value() == encode_json(document["payload"])
        # The receiver's own check, and the independent Standard Webhooks library's.
        event = verify_kafka_message(message.headers(), message.value(), [SECRET])
        assert event.attributes["id"] == headers["ce_id"]
        assert Webhook(SECRET.encode()).verify(message.value(), headers) == document["payload"]
        # The CloudEvents SDK's Kafka binding reads the same event back.
        parsed = from_binary_event(
            KafkaMessage(dict(message.headers()), message.key(), message.value())
        )
        assert parsed.get_id() == headers["ce_id"]
        assert parsed.get_subject() == document["aggregateId"]
    assert {d["status"] for d in outbox(db, settings).values()} == {"PROCESSED"}


def test_a_consumer_applies_each_event_once_through_the_inbox(
    kafka: KafkaBroker, db: firestore.Client, settings: Settings, unique: str
) -> None:
    """The consumer of docs/publishers/kafka.md: verify, then apply through the inbox."""
    topic = f"billing-{unique}"
    event_ids = add_orders(db, settings, 5)
    with Relay(db, settings, kafka_config(kafka, topic, signing_secrets=(SECRET,))) as relay:
        assert relay.run()["processed"] == 5
    inbox = Inbox(db, f"billing-{unique}")
    applied: Counter[str] = Counter()

    for _ in range(2):  # a new group reads it all again, as after a crash before a commit
        for message in kafka.consume(topic, 5):
            event = verify_kafka_message(message.headers() or [], message.value(), [SECRET])
            source, event_id = event.attributes["source"], event.attributes["id"]
            inbox.process(source, event_id, lambda event_id=event_id: applied.update([event_id]))

    assert applied == Counter(dict.fromkeys(event_ids, 1))


def test_each_aggregate_arrives_in_commit_order_across_retries(
    kafka: KafkaBroker, db: firestore.Client, settings: Settings, unique: str
) -> None:
    """Each aggregate's first events are delivered; then, with the broker frozen, its next
    ones are committed and tried (no answer: retried later); after the thaw nothing of an
    aggregate overtakes an earlier event of it. The freeze comes between two relay runs, so
    the retries are forced, not hoped for."""
    topic = f"steps-{unique}"
    counts: dict[str, int] = {}
    config = kafka_config(
        kafka, topic, http_timeout_seconds=1.0, batch_size=10, concurrency=4, max_attempts=20
    )
    relay = Relay(db, settings, config)

    def statuses() -> list[dict[str, Any]]:
        return list(outbox(db, settings).values())

    def all_processed() -> bool:
        return all(d["status"] == "PROCESSED" for d in statuses())

    add_sequences(db, settings, counts, aggregates=20, batches=1, per_batch=2)
    run_until(relay, all_processed, timeout=60)
    kafka.freeze()  # the next publishes get no answer: each is retried later
    try:
        add_sequences(db, settings, counts, aggregates=20, batches=1, per_batch=2)
        relay.run()
        retried = [
            d for d in statuses() if d.get("attempts", 0) >= 1 and d["status"] != "PROCESSED"
        ]
        assert retried, "no attempt failed while the broker was frozen"
    finally:
        kafka.thaw()
    run_until(relay, all_processed, timeout=90)
    relay.close()
    total = sum(counts.values())

    messages = kafka.consume(topic, total)
    arrived: dict[str, list[int]] = defaultdict(list)
    for message in messages:
        step = json.loads(message.value())
        arrived[step["aggregate"]].append(step["seq"])
    assert len(arrived) == 20
    for aggregate, seqs in arrived.items():
        # Duplicates of a retried event are allowed; nothing may overtake an earlier event.
        first_seen = list(dict.fromkeys(seqs))
        assert first_seen == list(range(counts[aggregate])), (aggregate, seqs)
        assert seqs == sorted(seqs), (aggregate, seqs)
