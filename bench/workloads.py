"""The benchmark's backlog: due PENDING events shaped as `OutboxRepository.add` writes them."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from google.cloud.firestore import SERVER_TIMESTAMP
from google.cloud.firestore_v1.bulk_batch import BulkWriteBatch

if TYPE_CHECKING:
    from google.cloud.firestore import Client

SEED_BATCH = 500  # the most writes one BatchWrite takes


def pending_event(event_id: str, order_id: str, payload: dict[str, Any]) -> dict[str, Any]:
    """An `OrderCreated` outbox document as `OutboxRepository.add` writes it, due at once."""
    return {
        "eventId": event_id,
        "eventType": "OrderCreated",
        "aggregateType": "order",
        "aggregateId": order_id,
        "payload": payload,
        "status": "PENDING",
        "attempts": 0,
        "createdAt": SERVER_TIMESTAMP,
        "updatedAt": SERVER_TIMESTAMP,
        "nextAttemptAt": SERVER_TIMESTAMP,
        "processingInstanceId": None,
        "processedAt": None,
        "lastError": None,
    }


def seed(db: Client, collection: str, count: int) -> None:
    """`count` due PENDING events shaped as `OutboxRepository.add` writes them."""
    outbox = db.collection(collection)
    for start in range(0, count, SEED_BATCH):
        batch = BulkWriteBatch(db)
        for n in range(start, min(count, start + SEED_BATCH)):
            event_id = str(uuid.uuid4())
            order_id = f"order-{n}"
            payload = {
                "orderId": order_id,
                "customerId": f"customer-{n}",
                "items": [{"productId": "sku-1", "quantity": 1 + n % 5}],
            }
            batch.create(outbox.document(event_id), pending_event(event_id, order_id, payload))
        batch.commit()
