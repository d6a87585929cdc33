"""What the benchmark runs besides our relay: the backlog, the reference loop, the floor."""

from __future__ import annotations

import datetime
import uuid
from typing import TYPE_CHECKING, Any

import requests
from google.cloud.firestore import SERVER_TIMESTAMP, FieldFilter
from google.cloud.firestore_v1.bulk_batch import BulkWriteBatch

from app.relay.config import RelayConfig
from app.relay.leases import Change, LeaseStore
from app.relay.publishers import PublishResult
from app.relay.transitions import plan_lease, settlement

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


def reference_invocation(db: Client, collection: str, url: str) -> dict[str, Any]:
    """One timer invocation of the reference design's relay (004, `relay_handler.handler`),
    step for step: query 20 PENDING events, then for each one an update to PROCESSING, a
    POST (a fresh `requests.post`, so a new connection each time), an update to PROCESSED.

    Two changes let it run here at all: the lock bound is `now` instead of `now - 5 min`
    (with 5 minutes a fresh event is not due for 5 minutes), and it posts the payload instead
    of the whole document (whose timestamps `json=` cannot encode).
    """
    now = datetime.datetime.now(datetime.timezone.utc)
    query = (
        db.collection(collection)
        .where(filter=FieldFilter("status", "==", "PENDING"))
        .where(filter=FieldFilter("updatedAt", "<", now))
        .limit(20)
    )
    events = list(query.stream())
    if not events:
        return {"status": "No new events"}
    processed = failed = 0
    instance = uuid.uuid4().hex
    for snapshot in events:
        ref, data = snapshot.reference, snapshot.to_dict() or {}
        try:
            ref.update({"status": "PROCESSING", "updatedAt": now, "processingInstanceId": instance})
            try:
                response = requests.post(url, json=data.get("payload"), timeout=10)
                response.raise_for_status()
                success = True
            except requests.RequestException:
                success = False
            if success:
                ref.update({"status": "PROCESSED", "processedAt": now})
                processed += 1
            else:
                attempts = data.get("attempts", 0) + 1
                ref.update(
                    {"status": "FAILED" if attempts >= 5 else "PENDING", "attempts": attempts}
                )
                failed += 1
        except Exception:
            ref.update({"status": "PENDING"})
            failed += 1
    return {"status": "Completed", "processed": processed, "failed": failed}


def run_reference(db: Client, collection: str, url: str) -> int:
    """Invoke the reference relay again and again until it finds nothing; events processed."""
    processed = 0
    while True:
        result = reference_invocation(db, collection, url)
        if result["status"] != "Completed":
            return processed
        processed += result["processed"]


def run_floor(db: Client, collection: str, config: RelayConfig) -> int:
    """The Firestore work our relay cannot avoid, with a publisher that costs nothing: per
    batch one query for due events, one BatchWrite of leases, one BatchWrite of settles,
    with the relay's own preconditions and fields. Events settled."""
    store = LeaseStore(db, collection, timeout=config.firestore_timeout_seconds)
    settled = 0
    instance = uuid.uuid4().hex
    while True:
        now = datetime.datetime.now(datetime.timezone.utc)
        snapshots = store.pending(now, config.batch_size)
        if not snapshots:
            return settled
        plans = [
            plan_lease(s.id, s.to_dict() or {}, instance=instance, max_attempts=5)
            for s in snapshots
        ]
        leases = store.write_if_unchanged(
            [
                Change(s.reference, s.update_time, plan.fields)
                for s, plan in zip(snapshots, plans, strict=True)
            ]
        )
        delivered = PublishResult.delivered()
        changes = []
        for snapshot, plan, update_time in zip(snapshots, plans, leases, strict=True):
            if update_time is not None and plan.event is not None:
                _, fields = settlement(plan.event.attempts + 1, delivered, config, now=now)
                changes.append(Change(snapshot.reference, update_time, fields))
        settled += sum(t is not None for t in store.write_if_unchanged(changes))
