"""The receiving side's metrics after a known scenario, read with the SDK's in-memory metric
reader on the emulator: the inbox's heal actions (`inbox_heal_actions_total`) and how long the
front door's requests held their keys (`idempotency_processing_seconds`)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from google.cloud import firestore

from app.api import make_api
from firestore_outbox.consumer.inbox import Inbox, Verdict
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.idempotency.config import IdempotencyConfig
from tests.integration.observability.test_metrics import post
from tests.support.otel import metric_points, metric_reader

SOURCE = "//firestore.googleapis.com/projects/p/databases/(default)/documents/outbox"
LEASE = 0.5


def gained(name: str, before: dict[Any, Any]) -> dict[frozenset[tuple[str, Any]], Any]:
    """What metric `name` gained since `before` (cumulative points), by attributes."""
    return {
        key: value - before.get(key, 0)
        for key, value in metric_points(name).items()
        if value != before.get(key, 0)
    }


def died(inbox: Inbox, event_id: str, attempt: int = 1) -> None:
    """A consumer that leased `event_id` for `attempt` and died mid-effect: the record stays
    PROCESSING until its lease expires."""
    inbox.record(SOURCE, event_id).create(
        inbox._records.leased(SOURCE, event_id, attempt, new=True)
    )


def test_heal_actions_count_stuck_records_taken_over_or_parked_and_nothing_else(
    db: firestore.Client,
) -> None:
    metric_reader()
    before = metric_points("inbox.heal.actions")
    inbox = Inbox(db, "healer", lease_seconds=LEASE, max_attempts=2)
    died(inbox, "taken-over")
    died(inbox, "taken-over-in-a-transaction")
    died(inbox, "parked", attempt=2)  # its last allowed attempt died
    # Not stuck: a failure recorded as FAILED, then retried; a duplicate; a live lease.
    with pytest.raises(ValueError):
        inbox.process(SOURCE, "failed-once", _raise)
    inbox.process(SOURCE, "duplicate", lambda: "sent")
    time.sleep(LEASE + 0.2)  # every lease so far expires (on the emulator's clock)
    live = Inbox(db, "healer", lease_seconds=60)

    assert inbox.process(SOURCE, "taken-over", lambda: "sent").verdict is Verdict.APPLIED
    transactional = inbox.process_in_transaction(
        SOURCE, "taken-over-in-a-transaction", lambda transaction: "sent"
    )
    assert transactional.verdict is Verdict.APPLIED
    assert inbox.process(SOURCE, "parked", lambda: "sent").verdict is Verdict.PARKED
    assert inbox.process(SOURCE, "failed-once", lambda: "sent").verdict is Verdict.APPLIED
    assert inbox.process(SOURCE, "duplicate", lambda: "sent").verdict is Verdict.DUPLICATE
    died(live, "live-elsewhere")
    assert live.process(SOURCE, "live-elsewhere", lambda: "sent").verdict is Verdict.IN_PROGRESS

    group = ("messaging.consumer.group.name", "healer")
    assert gained("inbox.heal.actions", before) == {
        frozenset({group, ("action", "takeover")}): 2,
        frozenset({group, ("action", "park")}): 1,
    }


def test_the_batch_path_counts_a_stuck_record_it_takes_over(db: firestore.Client) -> None:
    metric_reader()
    before = metric_points("inbox.heal.actions")
    inbox = Inbox(db, "batch-healer", lease_seconds=LEASE)
    died(inbox, "taken-over-in-a-batch")
    inbox.process_in_batch(SOURCE, "fresh", lambda batch: "counted")  # nothing to heal
    time.sleep(LEASE + 0.2)  # the dead consumer's lease expires (on the emulator's clock)
    result = inbox.process_in_batch(SOURCE, "taken-over-in-a-batch", lambda batch: "counted")
    assert result.verdict is Verdict.APPLIED
    group = ("messaging.consumer.group.name", "batch-healer")
    assert gained("inbox.heal.actions", before) == {frozenset({group, ("action", "takeover")}): 1}


def _raise() -> None:
    raise ValueError("declined")


def test_processing_duration_counts_each_request_that_ran_under_its_key_by_its_fate(
    db: firestore.Client, settings: Settings
) -> None:
    metric_reader()
    before = metric_points("idempotency.processing.duration")
    api = make_api(db, settings, IdempotencyConfig())
    order = json.dumps({"customerId": "c-1", "items": [{"productId": "p", "quantity": 1}]})
    other = json.dumps({"customerId": "c-2", "items": [{"productId": "p", "quantity": 1}]})
    statuses = [
        post(api, "held-1", order),  # ran: its answer stored with the order
        post(api, "held-1", order),  # a replay: never held the key
        post(api, "held-1", other),  # a conflict: never held the key
        post(api, "held-2", json.dumps({"customerId": "c-3"})),  # ran: refused, key released
    ]
    assert statuses == ["201", "201", "422", "400"]
    assert gained("idempotency.processing.duration", before) == {
        frozenset({("outcome", "stored")}): 1,
        frozenset({("outcome", "released")}): 1,
    }
