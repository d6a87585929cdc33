"""The relay on the real emulator, delivering to a real local HTTP server: every committed event
once, with its CloudEvent headers and its payload's Firestore values encoded; the summary."""

from __future__ import annotations

import base64
import datetime as dt
import json

from google.cloud import firestore

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.relay.events import rfc3339
from tests.support.helpers import add_orders, add_raw_event, make_relay, outbox, utcnow


def test_every_committed_event_is_delivered_once_and_processed(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    event_ids = add_orders(db, settings, 120)
    summary = make_relay(db, settings, receiver.url, batch_size=50).run(instance_id="run-1")

    assert summary["status"] == "ok" and summary["stoppedBy"] == "drained"
    assert (summary["processed"], summary["failed"], summary["leased"]) == (120, 0, 120)
    received = {r.event_id: r for r in receiver.received}
    assert sorted(received) == event_ids and len(receiver.received) == 120
    for event_id, event in outbox(db, settings).items():
        assert (event["status"], event["attempts"]) == ("PROCESSED", 1)
        assert event["processingInstanceId"] == "run-1" and event["processedAt"] is not None
        request = received[event_id]
        assert request.json() == event["payload"]
        assert request.headers["content-type"] == "application/json"
        assert request.headers["ce-specversion"] == "1.0"
        assert request.headers["ce-type"] == "OrderCreated"
        assert request.headers["ce-subject"] == event["aggregateId"]
        assert request.headers["ce-time"] == rfc3339(event["createdAt"])
        assert request.headers["idempotency-key"] == event_id
        assert request.headers["ce-source"].endswith("/documents/outbox")


def test_timestamps_bytes_geopoints_and_references_in_a_payload_are_encoded(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    moment = dt.datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=dt.timezone.utc)
    payload = {
        "at": moment,
        "blob": b"\x00\xff",
        "where": firestore.GeoPoint(52.5, 13.4),
        "customer": db.collection("customers").document("c1"),
        "nested": [{"at": moment}],
    }
    add_raw_event(db, settings, "rich", payload=payload)

    assert make_relay(db, settings, receiver.url).run()["processed"] == 1
    assert receiver.received[0].json() == {
        "at": "2026-01-02T03:04:05.678000Z",
        "blob": base64.b64encode(b"\x00\xff").decode(),
        "where": {"latitude": 52.5, "longitude": 13.4},
        "customer": "customers/c1",
        "nested": [{"at": "2026-01-02T03:04:05.678000Z"}],
    }


def test_a_summary_reports_lag_and_counts(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    add_raw_event(db, settings, "late", nextAttemptAt=utcnow() - dt.timedelta(seconds=30))
    summary = make_relay(db, settings, receiver.url).run()
    assert summary["lagMs"] >= 30_000
    assert json.loads(json.dumps(summary.to_json())) == summary  # loggable as one JSON line
