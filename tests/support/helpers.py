"""Helpers shared by the relay tests: fast settings, orders to deliver, outbox snapshots."""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from google.cloud import firestore

from app.services import create_new_order
from app.uow import FirestoreUnitOfWork
from firestore_outbox.consumer.receiver import Received, Receiver, ReceiverAnswer
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.partitions import DEFAULT_PARTITIONS, partition_of
from firestore_outbox.publishers.base import Delivery, PublishResult
from firestore_outbox.publishers.http.settings import HttpSettings
from firestore_outbox.relay import Relay, RelayConfig

# Short timeouts and backoff so retries and lease expiry happen within a test.
FAST = RelayConfig(
    publisher=HttpSettings(url="http://127.0.0.1:9/unused"),
    max_attempts=3,
    lock_timeout_seconds=3.0,
    backoff_base_seconds=0.05,
    backoff_max_seconds=0.2,
    batch_size=50,
    concurrency=8,
    time_budget_seconds=30.0,
    http_timeout_seconds=0.5,
    firestore_timeout_seconds=5.0,
)


# The settings a test may change by one keyword, by the component that holds them.
_COMPONENTS: dict[str, dict[str, str]] = {
    "partitions": {
        "leases": "leases",
        "partitions": "count",
        "ordering": "ordering",
        "failed_head": "failed_head",
        "partition_collection": "collection",
        "partitions_per_claim": "per_claim",
    },
    "fan_out": {"fan_out_max": "max", "fan_out_events": "events"},
    "ramp": {"ramp": "enabled", "ramp_rate": "rate", "ramp_step_seconds": "step_seconds"},
}


def configured(config: RelayConfig, **overrides: Any) -> RelayConfig:
    """`config` with `overrides`: the relay's own fields by name, a component's by the name of
    its variable (`partitions=4` is `RELAY_PARTITIONS`, `leases="event"` is `RELAY_LEASES`,
    `ramp_rate=40` is `RELAY_RAMP_RATE`), so a test says what it changes in one keyword."""
    for attribute, names in _COMPONENTS.items():
        changes = {names[key]: overrides.pop(key) for key in list(overrides) if key in names}
        if changes:
            component = dataclasses.replace(getattr(config, attribute), **changes)
            config = dataclasses.replace(config, **{attribute: component})
    return dataclasses.replace(config, **overrides)


def fast_config(url: str, **overrides: Any) -> RelayConfig:
    return configured(FAST, publisher=HttpSettings(url=url), **overrides)


def make_relay(db: firestore.Client, settings: Settings, url: str, **overrides: Any) -> Relay:
    return Relay(db, settings, fast_config(url, **overrides))


def add_orders(db: firestore.Client, settings: Settings, count: int) -> list[str]:
    """Create `count` orders through the app layer; return their event ids."""
    for n in range(count):
        with FirestoreUnitOfWork(db, settings) as uow:
            create_new_order(f"customer-{n}", [{"productId": "sku-1", "quantity": n + 1}], uow)
    return sorted(outbox(db, settings))


def lease_taken_back_while_delivering(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> str:
    """One new order's event, whose lease another relay ("relay-b") takes over while the
    downstream answers its delivery 200: the relay's settle must then find its lease gone."""
    [event_id] = add_orders(db, settings, 1)
    ref = db.collection(settings.outbox_collection).document(event_id)

    def taken_back_meanwhile(_: Received) -> ReceiverAnswer:
        ref.update({"processingInstanceId": "relay-b", "updatedAt": firestore.SERVER_TIMESTAMP})
        return ReceiverAnswer(200)

    receiver.respond = taken_back_meanwhile
    return event_id


def outbox(db: firestore.Client, settings: Settings) -> dict[str, dict[str, Any]]:
    return {doc.id: doc.to_dict() for doc in db.collection(settings.outbox_collection).get()}


def assert_each_processed_once(
    db: firestore.Client, settings: Settings, receiver: Receiver, *events: str
) -> None:
    """Every event in the outbox is one of `events`, each `PROCESSED`, each received once."""
    assert {k: v["status"] for k, v in outbox(db, settings).items()} == dict.fromkeys(
        events, "PROCESSED"
    )
    assert Counter(r.event_id for r in receiver.received) == dict.fromkeys(events, 1)


def add_raw_event(
    db: firestore.Client, settings: Settings, event_id: str, **fields: Any
) -> dict[str, Any]:
    """Write an outbox document by hand (as a foreign producer might), due now."""
    document = {
        "eventId": event_id,
        "eventType": "OrderCreated",
        "aggregateType": "order",
        "aggregateId": f"order-{event_id}",
        "payload": {"orderId": f"order-{event_id}"},
        "status": "PENDING",
        "attempts": 0,
        "createdAt": firestore.SERVER_TIMESTAMP,
        "updatedAt": firestore.SERVER_TIMESTAMP,
        "nextAttemptAt": firestore.SERVER_TIMESTAMP,
        "processingInstanceId": None,
        "processedAt": None,
        "lastError": None,
        **fields,
    }
    db.collection(settings.outbox_collection).document(event_id).set(document)
    return document


def add_own_event(
    db: firestore.Client, settings: Settings, event_id: str, **fields: Any
) -> dict[str, Any]:
    """`add_raw_event` with the partition and sequence the project's own producer writes
    (`RELAY_PARTITIONS` 16): an event the operations commands' partition-led queries see."""
    aggregate = str(fields.get("aggregateId", f"order-{event_id}"))
    own = {"partition": partition_of(aggregate, DEFAULT_PARTITIONS), "sequence": 0}
    return add_raw_event(db, settings, event_id, **{**own, **fields})


def run_until(
    relay: Relay, done: Callable[[], bool], timeout: float = 15.0
) -> list[dict[str, Any]]:
    """Run the relay again and again (as successive timer ticks) until `done()`."""
    summaries = []
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"not done after {timeout}s: {summaries[-3:]}"
        summaries.append(relay.run())
        time.sleep(0.05)
    return summaries


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def relay_environment(settings: Settings, url: str, **relay_variables: str) -> dict[str, str]:
    """The variables a deployed relay function would see, with FAST's timings."""
    return {
        "FIRESTORE_EMULATOR_HOST": str(settings.emulator_host),
        "FIRESTORE_PROJECT_ID": str(settings.project_id),
        "DOWNSTREAM_SERVICE_URL": url,
        "RELAY_MAX_ATTEMPTS": str(FAST.max_attempts),
        "RELAY_LOCK_TIMEOUT_SECONDS": str(FAST.lock_timeout_seconds),
        "RELAY_BACKOFF_BASE_SECONDS": str(FAST.backoff_base_seconds),
        "RELAY_BACKOFF_MAX_SECONDS": str(FAST.backoff_max_seconds),
        "RELAY_HTTP_TIMEOUT_SECONDS": str(FAST.http_timeout_seconds),
        "RELAY_FIRESTORE_TIMEOUT_SECONDS": str(FAST.firestore_timeout_seconds),
        **relay_variables,
    }


NOW = dt.datetime(2026, 11, 21, 8, 0, tzinfo=dt.timezone.utc)


def document(**changes: object) -> dict[str, object]:
    """A well-formed outbox document as the relay reads it back."""
    return {
        "eventId": "e-1",
        "eventType": "OrderCreated",
        "aggregateType": "order",
        "aggregateId": "o-1",
        "createdAt": NOW,
        "attempts": 2,
        "payload": {"orderId": "o-1"},
        **changes,
    }


def publish_together(
    publish: Callable[[Delivery], PublishResult], deliveries: list[Delivery]
) -> dict[str, PublishResult]:
    """Publish every delivery from a thread of its own, all released at once (as the relay's
    pool does), so a batching publisher can coalesce them; each event id's result."""
    start = threading.Barrier(len(deliveries))

    def one(delivery: Delivery) -> PublishResult:
        start.wait()
        return publish(delivery)

    with ThreadPoolExecutor(len(deliveries)) as pool:
        results = list(pool.map(one, deliveries))
    return {d.event_id: r for d, r in zip(deliveries, results, strict=True)}


def as_function_environment(
    monkeypatch: pytest.MonkeyPatch, settings: Settings, directory: Path, **relay_variables: str
) -> None:
    """Only the variables a deployed relay function would see (`relay_environment`, with
    `relay_variables`), in `directory` as the working directory (no `.env` file there)."""
    for name in list(os.environ):
        if name.startswith(("FIRESTORE_", "RELAY_", "DOWNSTREAM_", "OUTBOX_", "ALIBABA_")):
            monkeypatch.delenv(name)
    monkeypatch.chdir(directory)
    unused = "http://127.0.0.1:9/unused"
    for name, value in relay_environment(settings, unused, **relay_variables).items():
        monkeypatch.setenv(name, value)
