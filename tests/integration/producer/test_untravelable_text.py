"""Text that Firestore or the wire cannot carry is refused at `add` with `InvalidInput`, and
nothing is written; any valid Unicode id still travels."""

from __future__ import annotations

from typing import Any

import pytest
from google.cloud import firestore

from app.services import create_new_order
from app.uow import FirestoreUnitOfWork
from firestore_outbox.errors import InvalidInput
from firestore_outbox.firestore.settings import Settings

SURROGATE = "order-\udc80"  # a lone surrogate: not encodable as UTF-8
CONTROL = "order-\n1"  # a control character: see README, "What ids may hold"
EVENT = {
    "eventType": "OrderCreated",
    "aggregateType": "order",
    "aggregateId": "order-1",
    "payload": {"note": "ok"},
}
ITEMS = [{"productId": "p1", "quantity": 1}]


def written(db: firestore.Client) -> int:
    return sum(len(db.collection(name).get()) for name in ("orders", "outbox"))


@pytest.mark.parametrize("bad", [SURROGATE, CONTROL, "order-\x7f", "order-\x85"])
@pytest.mark.parametrize("field", ["eventId", "eventType", "aggregateType", "aggregateId"])
def test_an_id_or_type_that_cannot_travel_is_refused(
    db: firestore.Client, settings: Settings, field: str, bad: str
) -> None:
    with pytest.raises(InvalidInput, match=field), FirestoreUnitOfWork(db, settings) as uow:
        uow.outbox.add({**EVENT, field: bad})
    assert written(db) == 0


@pytest.mark.parametrize(
    "payload",
    [{"note": SURROGATE}, {SURROGATE: 1}, {"lines": ["ok", {"deep": "\ud800"}]}],
)
def test_a_payload_string_with_a_lone_surrogate_is_refused(
    db: firestore.Client, settings: Settings, payload: dict[str, Any]
) -> None:
    with pytest.raises(InvalidInput, match="payload"), FirestoreUnitOfWork(db, settings) as uow:
        uow.outbox.add({**EVENT, "payload": payload})
    assert written(db) == 0


@pytest.mark.parametrize(
    ("customer", "items", "key", "named"),
    [
        (SURROGATE, ITEMS, None, "customer_id"),
        (CONTROL, ITEMS, None, "customer_id"),
        ("c1", [{"productId": SURROGATE, "quantity": 1}], None, "productId"),
        ("c1", [{"productId": "p\t1", "quantity": 1}], None, "productId"),
        ("c1", [{"productId": "p1", "quantity": 1, "note": SURROGATE}], None, "note"),
        ("c1", ITEMS, SURROGATE, "idempotency_key"),
    ],
)
def test_create_new_order_refuses_text_that_cannot_travel(
    db: firestore.Client,
    settings: Settings,
    customer: str,
    items: list[dict[str, Any]],
    key: str | None,
    named: str,
) -> None:
    with pytest.raises(InvalidInput, match=named), FirestoreUnitOfWork(db, settings) as uow:
        create_new_order(customer, items, uow, idempotency_key=key)
    assert written(db) == 0


def test_a_surrogate_in_any_created_document_is_invalid_input(
    db: firestore.Client, settings: Settings
) -> None:
    with pytest.raises(InvalidInput), FirestoreUnitOfWork(db, settings) as uow:
        uow.add_create(db.collection("notes").document("n-1"), {"text": SURROGATE})
    assert len(db.collection("notes").get()) == 0


def test_ids_beyond_latin_1_and_payload_control_characters_are_written(
    db: firestore.Client, settings: Settings
) -> None:
    event = {
        "eventId": "заказ-\U0001f4e6-1",
        "eventType": "注文作成",
        "aggregateType": "order",
        "aggregateId": "ordre-é",
        "payload": {"note": "two\nlines\ttabbed"},
    }
    with FirestoreUnitOfWork(db, settings) as uow:
        event_id = uow.outbox.add(event)
    stored = db.collection("outbox").document(event_id).get().to_dict() or {}
    assert stored["eventType"] == "注文作成" and stored["payload"] == event["payload"]
