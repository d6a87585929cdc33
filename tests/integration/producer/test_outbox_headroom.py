"""The largest outbox event `add` accepts still has room for every field the relay writes."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from google.cloud import firestore

from app.uow import FirestoreUnitOfWork
from firestore_outbox.errors import DocumentTooLarge
from firestore_outbox.firestore.settings import Settings

EVENT_ID = "big-event"


def queue(db: firestore.Client, settings: Settings, blob_chars: int) -> FirestoreUnitOfWork:
    uow = FirestoreUnitOfWork(db, settings)
    uow.outbox.add(
        {
            "eventId": EVENT_ID,
            "eventType": "OrderCreated",
            "aggregateType": "order",
            "aggregateId": "order-1",
            "payload": {"blob": "x" * blob_chars},
        },
    )
    return uow


def largest_accepted(db: firestore.Client, settings: Settings) -> int:
    low, high = 0, 1_048_576  # accepted, refused
    while high - low > 1:
        middle = (low + high) // 2
        try:
            queue(db, settings, middle)
            low = middle
        except DocumentTooLarge:
            high = middle
    return low


def test_the_largest_event_accepted_can_be_leased_retried_and_settled(
    db: firestore.Client, settings: Settings
) -> None:
    blob = largest_accepted(db, settings)
    queue(db, settings, blob).commit()
    ref = db.collection("outbox").document(EVENT_ID)
    later = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=30)
    widest = "\U0001f4a5"  # four bytes of UTF-8 per character: the widest text can be
    lease: dict[str, Any] = {
        "status": "PROCESSING",
        "attempts": 1,
        "updatedAt": firestore.SERVER_TIMESTAMP,
        "leasedAt": firestore.SERVER_TIMESTAMP,
        "processingInstanceId": widest * 128,
    }
    retry: dict[str, Any] = {
        "status": "PENDING",
        "lastError": widest * 500,
        "nextAttemptAt": later,
        "updatedAt": firestore.SERVER_TIMESTAMP,
        # Fields a later relay may add: its partition and the creation trace context.
        "partition": 63,
        "traceparent": "00-" + "a" * 32 + "-" + "b" * 16 + "-01",
        "tracestate": "vendor=" + "c" * 505,
    }
    settle: dict[str, Any] = {
        "status": "PROCESSED",
        "processedAt": firestore.SERVER_TIMESTAMP,
        "expireAt": later,
        "updatedAt": firestore.SERVER_TIMESTAMP,
    }

    for fields in (lease, retry, lease, settle):
        ref.update(fields)

    stored = ref.get().to_dict() or {}
    assert stored["status"] == "PROCESSED" and stored["lastError"] == widest * 500
    assert len(stored["payload"]["blob"]) == blob

    with (
        pytest.raises(DocumentTooLarge, match="headroom"),
        FirestoreUnitOfWork(db, settings) as uow,
    ):
        uow.outbox.add(
            {
                "eventId": "big-evenx",  # a name as long: only the payload grows
                "eventType": "OrderCreated",
                "aggregateType": "order",
                "aggregateId": "order-1",
                "payload": {"blob": "x" * (blob + 1)},
            },
        )
    assert [doc.id for doc in db.collection("outbox").get()] == [EVENT_ID]
