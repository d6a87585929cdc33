"""Publishing any event on a unit of work: `uow.outbox.add(event)`, real emulator and a real
local downstream."""

from __future__ import annotations

import warnings

import pytest
from google.cloud import firestore

from app.repository import OutboxRepository
from app.services import create_new_order
from app.uow import FirestoreUnitOfWork
from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.errors import InvalidInput
from firestore_outbox.firestore.settings import Settings
from tests.support.helpers import make_relay, outbox

SHIPPED = {
    "eventType": "OrderShipped",
    "aggregateType": "order",
    "aggregateId": "order-7",
    "payload": {"orderId": "order-7", "carrier": "sf-express"},
}


def test_any_event_queued_with_uow_outbox_add_commits_with_the_business_write_and_is_delivered(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    shipment = db.collection("shipments").document("order-7")
    with FirestoreUnitOfWork(db, settings) as uow:
        uow.add_set(shipment, {"carrier": "sf-express"})
        event_id = uow.outbox.add(SHIPPED)

    assert shipment.get().to_dict() == {"carrier": "sf-express"}
    summary = make_relay(db, settings, receiver.url).run()
    assert summary["processed"] == 1, summary
    [delivery] = receiver.received
    assert (delivery.event_id, delivery.headers["ce-type"]) == (event_id, "OrderShipped")
    assert delivery.json() == SHIPPED["payload"]


def test_the_old_call_passing_the_unit_of_work_again_still_works_and_is_deprecated(
    db: firestore.Client, settings: Settings
) -> None:
    with FirestoreUnitOfWork(db, settings) as uow:
        with pytest.deprecated_call(match=r"uow\.outbox\.add\(event\)"):
            event_id = uow.outbox.add(SHIPPED, uow)
        order_id = create_new_order("c-1", [{"productId": "p", "quantity": 1}], uow)
    events = outbox(db, settings)
    assert event_id in events and len(events) == 2
    assert db.collection(settings.orders_collection).document(order_id).get().exists


def test_a_unit_of_work_that_is_not_the_repositorys_own_is_refused_and_nothing_is_written(
    db: firestore.Client, settings: Settings
) -> None:
    with FirestoreUnitOfWork(db, settings) as first, FirestoreUnitOfWork(db, settings) as other:
        with pytest.raises(InvalidInput, match="another unit of work"):
            first.outbox.add(SHIPPED, other)
        assert (first.pending_writes, other.pending_writes) == (0, 0)
    assert outbox(db, settings) == {}


def test_a_repository_of_its_own_needs_the_unit_of_work_it_queues_on(
    db: firestore.Client, settings: Settings
) -> None:
    repository = OutboxRepository(db, settings.outbox_collection)
    with pytest.raises(TypeError, match="not bound to a unit of work"):
        repository.add(SHIPPED)
    with FirestoreUnitOfWork(db, settings) as uow, warnings.catch_warnings():
        warnings.simplefilter("error")  # the contract's call: no deprecation
        event_id = repository.add(SHIPPED, uow)
    assert list(outbox(db, settings)) == [event_id]
