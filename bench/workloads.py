"""The benchmark's backlog: due PENDING events written by the app's own `uow.outbox.add`
(`project`), or with only the contract's fields, as another producer writes them
(`contract`: no `partition`, `sequence` or `nextAttemptAt`, which the relay heals).

    python bench/workloads.py EMULATOR_HOST PROJECT COUNT [project|contract]

The harness runs this with the `PYTHONPATH` of the variant it measures next, so that each
relay drains events shaped as its own code writes them (a relay that heals older documents
would otherwise pay for healing in the benchmark).
"""

from __future__ import annotations

import sys
import uuid
from typing import Any

import tree
from google.cloud import firestore

SEED_BATCH = 500  # events per unit of work: the most writes one batch takes


def seed(settings: Any, count: int, shape: str = "project") -> None:
    """`count` due `OrderCreated` events, each of an aggregate of its own, written by the
    tree's own unit of work (`settings` is that tree's `Settings`), or with only the
    contract's fields (`shape="contract"`)."""
    ours = tree.load()
    db = ours.get_db_client(settings)
    if shape == "contract":
        seed_contract_shape(db, settings.outbox_collection, count)
        db.close()
        return
    FirestoreUnitOfWork = ours.FirestoreUnitOfWork
    for start in range(0, count, SEED_BATCH):
        with FirestoreUnitOfWork(db, settings) as uow:
            for n in range(start, min(count, start + SEED_BATCH)):
                order_id = f"order-{n}"
                payload = {
                    "orderId": order_id,
                    "customerId": f"customer-{n}",
                    "items": [{"productId": "sku-1", "quantity": 1 + n % 5}],
                }
                uow.outbox.add(
                    {
                        "eventType": "OrderCreated",
                        "aggregateType": "order",
                        "aggregateId": order_id,
                        "payload": payload,
                    }
                )
    db.close()


def contract_event(event_id: str, order_id: str, payload: dict[str, Any]) -> dict[str, Any]:
    """An `OrderCreated` outbox document with the contract's creation fields only, due at
    once (no partition, sequence or nextAttemptAt: what another producer writes)."""
    return {
        "eventId": event_id,
        "eventType": "OrderCreated",
        "aggregateType": "order",
        "aggregateId": order_id,
        "payload": payload,
        "status": "PENDING",
        "attempts": 0,
        "createdAt": firestore.SERVER_TIMESTAMP,
        "updatedAt": firestore.SERVER_TIMESTAMP,
    }


def seed_contract_shape(db: Any, collection: str, count: int) -> None:
    """The same events with the contract's fields only (docs: the outbox document), in
    batches of `SEED_BATCH`, each batch one commit time as a unit of work's would be."""
    outbox = db.collection(collection)
    for start in range(0, count, SEED_BATCH):
        batch = db.batch()
        for n in range(start, min(count, start + SEED_BATCH)):
            event_id, order_id = str(uuid.uuid4()), f"order-{n}"
            payload = {
                "orderId": order_id,
                "customerId": f"customer-{n}",
                "items": [{"productId": "sku-1", "quantity": 1 + n % 5}],
            }
            batch.create(outbox.document(event_id), contract_event(event_id, order_id, payload))
        batch.commit()


def main() -> None:
    host, project, count = sys.argv[1:4]
    shape = sys.argv[4] if len(sys.argv) > 4 else "project"
    seed(tree.load().Settings(project_id=project, emulator_host=host), int(count), shape)


if __name__ == "__main__":
    main()
