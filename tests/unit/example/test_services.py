from __future__ import annotations

import uuid

import pytest

from app.services import create_new_order
from app.uow import FirestoreUnitOfWork
from firestore_outbox.errors import IdempotencyConflict
from firestore_outbox.example import InvalidOrder
from firestore_outbox.firestore.settings import Settings
from tests.unit.fakes import FakeDb

ITEMS = [{"productId": "p1", "quantity": 2}]
SETTINGS = Settings(orders_collection="shop_orders", outbox_collection="shop_outbox")


def new_uow(db: FakeDb) -> FirestoreUnitOfWork:
    return FirestoreUnitOfWork(db, SETTINGS)


def test_order_and_event_documents_have_the_contract_shape() -> None:
    db = FakeDb()
    with new_uow(db) as uow:
        order_id = create_new_order("c1", ITEMS, uow)
    orders, events = db.documents("shop_orders"), db.documents("shop_outbox")
    assert list(orders) == [order_id]
    order = orders[order_id]
    assert (order["customerId"], order["items"], order["status"]) == ("c1", ITEMS, "CREATED")
    assert "createdAt" in order and order["idempotencyKey"] is None
    [(event_id, event)] = events.items()
    assert uuid.UUID(event_id) and event["eventId"] == event_id
    assert {k: event[k] for k in ("eventType", "aggregateType", "aggregateId")} == {
        "eventType": "OrderCreated",
        "aggregateType": "order",
        "aggregateId": order_id,
    }
    assert event["payload"] == {"orderId": order_id, "customerId": "c1", "items": ITEMS}
    assert (event["status"], event["attempts"]) == ("PENDING", 0)
    lifecycle = {"createdAt", "updatedAt", "nextAttemptAt", "processingInstanceId", "processedAt"}
    assert lifecycle | {"lastError"} <= event.keys()


def test_invalid_input_queues_nothing_even_if_the_caller_swallows_the_error() -> None:
    db = FakeDb()
    with new_uow(db) as uow:
        with pytest.raises(InvalidOrder):
            create_new_order("c1", [{"productId": "p1", "quantity": 0}], uow)
        assert uow.pending_writes == 0
    assert db.documents("shop_orders") == {} and db.commit_calls == 0


def test_an_event_that_fails_to_queue_takes_its_order_with_it() -> None:
    db = FakeDb()
    uow = FirestoreUnitOfWork(db, SETTINGS, max_writes=1)
    with pytest.raises(ValueError, match="at most 1 writes"):
        create_new_order("c1", ITEMS, uow)
    assert uow.pending_writes == 0


def test_first_call_with_a_key_costs_one_commit_and_no_read() -> None:
    db = FakeDb()
    with new_uow(db) as uow:
        create_new_order("c1", ITEMS, uow, idempotency_key="k1")
    assert (db.commit_calls, db.get_all_calls) == (1, 0)
    with new_uow(db) as retry:
        create_new_order("c1", ITEMS, retry, idempotency_key="k1")
    assert (db.commit_calls, db.get_all_calls) == (2, 1)  # a replay reads its order back once


def test_same_key_same_arguments_replays_and_other_arguments_conflict() -> None:
    db = FakeDb()
    with new_uow(db) as uow:
        first = create_new_order("c1", ITEMS, uow, idempotency_key="k1")
    with new_uow(db) as retry:
        again = create_new_order("c1", ITEMS, retry, idempotency_key="k1")
    assert again == first and retry.replayed
    with pytest.raises(IdempotencyConflict), new_uow(db) as other:
        create_new_order("c1", [{"productId": "p1", "quantity": 3}], other, idempotency_key="k1")
    assert len(db.documents("shop_orders")) == 1
    assert len(db.documents("shop_outbox")) == 1
