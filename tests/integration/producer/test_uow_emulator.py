"""The unit of work against the real Firestore emulator."""

from __future__ import annotations

import datetime as dt

import pytest
from google.cloud import firestore

from app.services import create_new_order
from app.uow import FirestoreUnitOfWork
from firestore_outbox.errors import BatchTooLarge, DocumentAlreadyExists, DocumentTooLarge
from firestore_outbox.firestore.settings import Settings

ITEMS = [{"productId": "p1", "quantity": 1}]


def count(db: firestore.Client, collection: str) -> int:
    return len(db.collection(collection).get())


def test_batch_that_fails_to_commit_leaves_neither_document(
    db: firestore.Client, settings: Settings
) -> None:
    taken = db.collection("orders").document("taken")
    taken.set({"customerId": "earlier"})
    uow = FirestoreUnitOfWork(db, settings)
    event_id = uow.outbox.add(
        {
            "eventType": "OrderCreated",
            "aggregateType": "order",
            "aggregateId": "taken",
            "payload": {},
        },
    )
    uow.add_create(taken, {"customerId": "later"})
    with pytest.raises(DocumentAlreadyExists):
        uow.commit()
    assert not db.collection("outbox").document(event_id).get().exists
    assert taken.get().to_dict() == {"customerId": "earlier"}


def test_exception_inside_the_block_writes_nothing(
    db: firestore.Client, settings: Settings
) -> None:
    with pytest.raises(RuntimeError), FirestoreUnitOfWork(db, settings) as uow:
        create_new_order("c1", ITEMS, uow)
        raise RuntimeError("payment declined")
    assert count(db, "orders") == 0
    assert count(db, "outbox") == 0


def test_order_and_event_share_the_commit_time(db: firestore.Client, settings: Settings) -> None:
    before = dt.datetime.now(dt.timezone.utc)
    with FirestoreUnitOfWork(db, settings) as uow:
        order_id = create_new_order("c1", ITEMS, uow)
    order = db.collection("orders").document(order_id).get().to_dict()
    [event] = [e.to_dict() for e in db.collection("outbox").get()]
    assert order["createdAt"] == event["createdAt"] == event["updatedAt"] == event["nextAttemptAt"]
    assert abs(order["createdAt"] - before) < dt.timedelta(seconds=30)


def fill(db: firestore.Client, uow: FirestoreUnitOfWork, megabytes: int) -> None:
    for n in range(megabytes):
        uow.add_set(db.collection("blobs").document(str(n)), {"s": "x" * 1_000_000})


def test_oversized_batch_is_refused_before_firestore_sees_it(
    db: firestore.Client, settings: Settings
) -> None:
    # The emulator refuses requests over 4 MiB (production: 10 MiB); 5 MB must not be sent.
    with (
        pytest.raises(BatchTooLarge, match="bytes; the limit is 4194304"),
        FirestoreUnitOfWork(db, settings) as uow,
    ):
        fill(db, uow, 5)
    assert count(db, "blobs") == 0


def test_batch_just_under_the_limit_is_accepted_by_firestore(
    db: firestore.Client, settings: Settings
) -> None:
    with FirestoreUnitOfWork(db, settings) as uow:
        fill(db, uow, 4)
    assert count(db, "blobs") == 4


def test_document_over_the_limit_is_refused_and_nothing_is_written(
    db: firestore.Client, settings: Settings
) -> None:
    with pytest.raises(DocumentTooLarge), FirestoreUnitOfWork(db, settings) as uow:
        uow.add_create(db.collection("blobs").document("small"), {"s": "ok"})
        uow.add_create(db.collection("blobs").document("big"), {"s": "x" * 1_048_576})
    assert count(db, "blobs") == 0
