"""The relay's metrics after a known scenario, read with the SDK's in-memory metric reader:
on the emulator, the real relay over HTTP to a local receiver scripted per customer."""

from __future__ import annotations

import io
import json
from collections import Counter
from typing import Any

from google.cloud import firestore

from app.api import make_api
from firestore_outbox.consumer.receiver import Received, Receiver, ReceiverAnswer
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.idempotency.config import IdempotencyConfig
from firestore_outbox.observability.metrics import BacklogGauges
from firestore_outbox.ops.status import backlog_reader
from tests.support.helpers import add_orders, make_relay, outbox, run_until
from tests.support.otel import metric_points, metric_reader

NAMES = (
    "outbox.deliveries",
    "messaging.client.operation.duration",
    "outbox.delivery.lag",
    "outbox.events.processed",
    "outbox.events.retried",
    "outbox.events.failed",
)


def snapshot() -> dict[str, dict[frozenset[tuple[str, Any]], Any]]:
    return {name: metric_points(name) for name in NAMES}


def delta(before: dict[str, Any], after: dict[str, Any], name: str) -> dict[Any, Any]:
    """What `name` gained between the snapshots, by attributes (cumulative points)."""
    return {
        key: value - before[name].get(key, 0)
        for key, value in after[name].items()
        if value != before[name].get(key, 0)
    }


def test_counts_durations_and_lag_after_two_delivered_one_retried_one_failed(
    db: firestore.Client, settings: Settings
) -> None:
    metric_reader()
    seen: Counter[str] = Counter()

    def respond(request: Received) -> ReceiverAnswer:
        customer = request.json()["customerId"]
        seen[customer] += 1
        if customer == "customer-2":
            return ReceiverAnswer(422)  # rejected: FAILED at once
        if customer == "customer-3" and seen[customer] == 1:
            return ReceiverAnswer(503)  # retried once, then delivered
        return ReceiverAnswer(200)

    add_orders(db, settings, 4)
    before = snapshot()
    with Receiver(respond) as receiver:
        relay = make_relay(db, settings, receiver.url)
        host = receiver.url.split("/")[2]
        run_until(
            relay,
            lambda: {e["status"] for e in outbox(db, settings).values()} <= {"PROCESSED", "FAILED"},
        )
    after = snapshot()

    labels = {("messaging.system", "http"), ("messaging.destination.name", host)}
    assert delta(before, after, "outbox.deliveries") == {
        frozenset({*labels, ("outcome", "delivered")}): 3,
        frozenset({*labels, ("outcome", "rejected")}): 1,
        frozenset({*labels, ("outcome", "retry")}): 1,
    }
    send = {*labels, ("messaging.operation.name", "send")}
    assert delta(before, after, "messaging.client.operation.duration") == {
        frozenset(send): 3,
        frozenset({*send, ("error.type", "HTTP 422")}): 1,
        frozenset({*send, ("error.type", "HTTP 503")}): 1,
    }
    assert delta(before, after, "outbox.delivery.lag") == {frozenset(labels): 3}
    assert delta(before, after, "outbox.events.processed") == {frozenset(): 3}
    assert delta(before, after, "outbox.events.retried") == {frozenset(): 1}
    assert delta(before, after, "outbox.events.failed") == {frozenset(): 1}


def test_backlog_gauges_show_events_by_status_and_the_oldest_due_events_age(
    db: firestore.Client, settings: Settings
) -> None:
    metric_reader()
    add_orders(db, settings, 2)
    read = backlog_reader(db, settings.outbox_collection, lock_timeout_seconds=300, partitions=16)
    gauges = BacklogGauges(read, max_age=0)

    backlog = metric_points("outbox.backlog")
    assert backlog[frozenset({("status", "PENDING")})] == 2
    assert backlog[frozenset({("status", "PROCESSED")})] == 0
    [age] = metric_points("outbox.oldest_due.age").values()
    assert 0 <= age < 60  # due since its commit, moments ago
    assert read()[1] is not None

    with Receiver() as receiver:
        make_relay(db, settings, receiver.url).run()
    backlog = metric_points("outbox.backlog")
    assert backlog[frozenset({("status", "PENDING")})] == 0
    assert backlog[frozenset({("status", "PROCESSED")})] == 2
    assert list(metric_points("outbox.oldest_due.age").values()) == [0.0]
    assert gauges.reading() == (
        {"PENDING": 0, "PROCESSING": 0, "PROCESSED": 2, "FAILED": 0},
        None,
    )


def test_the_front_doors_outcomes_are_counted_under_the_design_notes_names(
    db: firestore.Client, settings: Settings
) -> None:
    metric_reader()
    before = metric_points("idempotency.requests")
    api = make_api(db, settings, IdempotencyConfig())
    body = json.dumps({"customerId": "c-1", "items": [{"productId": "p", "quantity": 1}]})
    other = json.dumps({"customerId": "c-2", "items": [{"productId": "p", "quantity": 1}]})
    statuses = [post(api, "key-1", body), post(api, "key-1", body), post(api, "key-1", other)]
    assert statuses == ["201", "201", "422"]
    after = metric_points("idempotency.requests")
    gained = {dict(k)["outcome"]: v - before.get(k, 0) for k, v in after.items()}
    assert {k: v for k, v in gained.items() if v} == {"hit": 3, "replay": 1, "conflict": 1}


def post(api: Any, key: str, body: str) -> str:
    """POST /orders through the WSGI app in process; the status code."""
    environ = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/orders",
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)),
        "HTTP_IDEMPOTENCY_KEY": f'"{key}"',
        "wsgi.input": io.BytesIO(body.encode()),
    }
    statuses: list[str] = []
    b"".join(api(environ, lambda status, headers, *_: statuses.append(status)))
    return statuses[0][:3]
