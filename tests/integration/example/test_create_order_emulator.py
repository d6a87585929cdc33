"""`create_new_order` against the real Firestore emulator."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from google.cloud import firestore

from app.repository import OrderRepository
from app.services import create_new_order
from app.uow import FirestoreUnitOfWork
from firestore_outbox.errors import IdempotencyConflict
from firestore_outbox.example import InvalidOrder
from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.settings import Settings

ITEMS = [{"productId": "p1", "quantity": 2}, {"productId": "p2", "quantity": 1}]


def documents(db: firestore.Client, collection: str) -> dict[str, dict[str, Any]]:
    return {doc.id: doc.to_dict() for doc in db.collection(collection).get()}


def create(
    db: firestore.Client, settings: Settings, *args: Any, **kwargs: Any
) -> tuple[str, FirestoreUnitOfWork]:
    with FirestoreUnitOfWork(db, settings) as uow:
        order_id = create_new_order(*args, uow, **kwargs)
    return order_id, uow


def test_order_and_its_event_are_written_together(db: firestore.Client, settings: Settings) -> None:
    order_id, _ = create(db, settings, "c1", ITEMS)
    order = OrderRepository(db, settings.orders_collection).get(order_id)
    assert order is not None
    assert order["items"] == ITEMS and order["status"] == "CREATED"
    assert OrderRepository(db, settings.orders_collection).get("no-such-order") is None
    events = documents(db, "outbox")
    [event] = events.values()
    assert event["aggregateId"] == order_id and event["status"] == "PENDING"
    assert event["payload"]["items"] == ITEMS


def test_same_key_same_arguments_returns_first_id_and_writes_nothing(
    db: firestore.Client, settings: Settings, unique: str
) -> None:
    first, first_uow = create(db, settings, "c1", ITEMS, idempotency_key=unique)
    ref = db.collection("orders").document(first)
    written_at = ref.get().update_time
    again, retry = create(db, settings, "c1", [dict(i) for i in ITEMS], idempotency_key=unique)
    assert again == first
    assert retry.replayed and not first_uow.replayed
    assert ref.get().update_time == written_at
    assert len(documents(db, "orders")) == 1
    assert len(documents(db, "outbox")) == 1


def test_same_key_other_arguments_is_a_conflict_and_writes_nothing(
    db: firestore.Client, settings: Settings, unique: str
) -> None:
    first, _ = create(db, settings, "c1", ITEMS, idempotency_key=unique)
    with pytest.raises(IdempotencyConflict, match="different arguments"):
        create(db, settings, "c2", ITEMS, idempotency_key=unique)
    assert documents(db, "orders")[first]["customerId"] == "c1"
    assert len(documents(db, "outbox")) == 1


def test_different_keys_make_different_orders(
    db: firestore.Client, settings: Settings, unique: str
) -> None:
    a, _ = create(db, settings, "c1", ITEMS, idempotency_key=f"{unique}-a")
    b, _ = create(db, settings, "c1", ITEMS, idempotency_key=f"{unique}-b")
    assert a != b
    assert len(documents(db, "outbox")) == 2


@pytest.mark.parametrize(
    ("customer_id", "items"),
    [
        ("", ITEMS),
        ("c1", []),
        ("c1", [{"productId": "p1", "quantity": 0}]),
        ("c1", [*ITEMS, {"productId": "p3", "quantity": "many"}]),
        ("c1", [{"productId": "p1", "quantity": 1, "note": float("nan")}]),
    ],
)
def test_invalid_input_writes_nothing(
    db: firestore.Client, settings: Settings, customer_id: Any, items: Any
) -> None:
    with FirestoreUnitOfWork(db, settings) as uow, pytest.raises(InvalidOrder):
        create_new_order(customer_id, items, uow, idempotency_key="k")
    assert documents(db, "orders") == {}
    assert documents(db, "outbox") == {}


def test_concurrent_calls_with_one_key_produce_exactly_one_order(
    settings: Settings, unique: str
) -> None:
    callers = 8
    barrier = threading.Barrier(callers)

    def call(_: int) -> tuple[str, bool]:
        db = get_db_client(settings)  # one client per caller, like separate app instances
        uow = FirestoreUnitOfWork(db, settings)
        order_id = create_new_order("c1", ITEMS, uow, idempotency_key=unique)
        barrier.wait()
        uow.commit()
        return order_id, uow.replayed

    with ThreadPoolExecutor(callers) as pool:
        results = list(pool.map(call, range(callers)))
    db = get_db_client(settings)
    assert len({order_id for order_id, _ in results}) == 1
    assert sorted(replayed for _, replayed in results) == [False] + [True] * (callers - 1)
    assert len(documents(db, "orders")) == 1
    assert len(documents(db, "outbox")) == 1
