"""`find_anomalies`: what should never be there, found by reading both collections.

- a `PROCESSING` event past its lease: its relay died and no relay has run since;
- an order with no outbox event: written outside `create_new_order`, or its event deleted;
- an order event whose order does not exist: the order was deleted, or the event forged;
- a `PENDING` event without a timestamp `nextAttemptAt` (another producer's): invisible to
  the due query until a relay run finds and leases it (`firestore_outbox.relay.unscheduled`).

Orders and events are checked within a window (`since`), so the cost stays bounded. Keep the
window shorter than the retention: a purged event would otherwise look missing.
"""

from __future__ import annotations

import datetime
import itertools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from google.cloud.firestore import FieldFilter

from firestore_outbox.fields import (
    AGGREGATE_ID,
    AGGREGATE_TYPE,
    ATTEMPTS,
    CREATED_AT,
    NEXT_ATTEMPT_AT,
    PARTITION,
    PROCESSING_INSTANCE_ID,
    UPDATED_AT,
    EventStatus,
)
from firestore_outbox.firestore.limits import check_document_id
from firestore_outbox.ops.scan import PAGE_SIZE, chunks, pages
from firestore_outbox.relay.partitioned.scan import needs_partition
from firestore_outbox.relay.store import LeaseStore
from firestore_outbox.relay.unscheduled import find_unscheduled

if TYPE_CHECKING:
    from google.cloud.firestore import Client

# The aggregate type of the documents in `orders`: the reference application's orders.
DEFAULT_AGGREGATE_TYPE = "order"
# Firestore allows at most 30 values in one `in` filter.
_IN_LIMIT = 30
# How many PENDING documents reconcile reads at most to name unscheduled events.
_UNSCHEDULED_SCAN_LIMIT = 10_000


@dataclass
class Anomalies:
    """Each list holds at most `limit` ids; the counts are complete."""

    stuck_events: list[dict[str, Any]] = field(default_factory=list)
    orders_without_event: list[str] = field(default_factory=list)
    events_without_order: list[dict[str, str]] = field(default_factory=list)
    unscheduled_events: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(
            ("stuck", "ordersWithoutEvent", "eventsWithoutOrder", "unscheduled"), 0
        )
    )

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def find_anomalies(
    db: Client,
    *,
    orders: str,
    outbox: str,
    now: datetime.datetime,
    since: datetime.datetime,
    lock_timeout_seconds: float,
    limit: int = 100,
    timeout: float = 30.0,
    aggregate_type: str = DEFAULT_AGGREGATE_TYPE,
    partitions: int,
) -> Anomalies:
    """What should never be there; the outbox's queries that range over a timestamp run per
    chunk of partitions (the relay's `RELAY_PARTITIONS`), the partition first."""
    found = Anomalies()
    expired_before = now - datetime.timedelta(seconds=lock_timeout_seconds)
    store = LeaseStore(db, outbox, timeout=timeout)
    every = chunks(partitions)
    stuck = [
        store.due_query(EventStatus.PROCESSING, UPDATED_AT, expired_before, PAGE_SIZE, partitions=c)
        for c in every
    ]
    for page in (page for query in stuck for page in pages(query)):
        for snapshot in page:
            found.counts["stuck"] += 1
            if len(found.stuck_events) < limit:
                data = snapshot.to_dict() or {}
                found.stuck_events.append(
                    {
                        "eventId": snapshot.id,
                        "processingInstanceId": data.get(PROCESSING_INSTANCE_ID),
                        "updatedAt": data.get(UPDATED_AT),
                        "attempts": data.get(ATTEMPTS),
                    }
                )
    unscheduled = find_unscheduled(
        store, scan_limit=_UNSCHEDULED_SCAN_LIMIT, partitions=sum(map(len, every))
    )
    found.counts["unscheduled"] = unscheduled.count
    found.unscheduled_events = [
        {"eventId": s.id, "nextAttemptAt": s.get(NEXT_ATTEMPT_AT), "createdAt": s.get(CREATED_AT)}
        for s in unscheduled.found[:limit]
    ]
    recent_orders = (
        db.collection(orders)
        .where(filter=FieldFilter("createdAt", ">=", since))
        .order_by("createdAt")
    )
    for page in pages(recent_orders.select(["createdAt"]), 300):
        ids = [snapshot.id for snapshot in page]
        for missing in _ids_without_event(db, outbox, ids, aggregate_type):
            found.counts["ordersWithoutEvent"] += 1
            if len(found.orders_without_event) < limit:
                found.orders_without_event.append(missing)
    recent_events = [
        db.collection(outbox)
        .where(filter=FieldFilter(PARTITION, "in", chunk))
        .where(filter=FieldFilter(AGGREGATE_TYPE, "==", aggregate_type))
        .where(filter=FieldFilter(CREATED_AT, ">=", since))
        .order_by(CREATED_AT)
        .select([AGGREGATE_ID, CREATED_AT])
        for chunk in every
    ]
    # Events without a partition (another producer's, not yet healed) are not in those
    # queries: the ones the unscheduled scan found are looked at as they are.
    unpartitioned = [
        s
        for s in unscheduled.found
        if needs_partition(s.to_dict() or {}, sum(map(len, every)))
        and s.get(AGGREGATE_TYPE) == aggregate_type
        and isinstance(s.get(CREATED_AT), datetime.datetime)
        and s.get(CREATED_AT) >= since
    ]
    listed = (page for query in recent_events for page in pages(query, 300))
    for page in itertools.chain(listed, [unpartitioned] if unpartitioned else []):
        claimed = {snapshot.id: str(snapshot.get(AGGREGATE_ID)) for snapshot in page}
        # An aggregateId that cannot be a document id names no order at all.
        refs = [
            db.collection(orders).document(order_id)
            for order_id in set(claimed.values())
            if not check_document_id(order_id)
        ]
        existing = {s.id for s in db.get_all(refs) if s.exists}
        for event_id, order_id in claimed.items():
            if order_id not in existing:
                found.counts["eventsWithoutOrder"] += 1
                if len(found.events_without_order) < limit:
                    found.events_without_order.append({"eventId": event_id, "orderId": order_id})
    return found


def _ids_without_event(
    db: Client, outbox: str, order_ids: list[str], aggregate_type: str
) -> list[str]:
    with_event: set[str] = set()
    for start in range(0, len(order_ids), _IN_LIMIT):
        chunk = order_ids[start : start + _IN_LIMIT]
        query = db.collection(outbox).where(filter=FieldFilter(AGGREGATE_ID, "in", chunk))
        for snapshot in query.select([AGGREGATE_ID, AGGREGATE_TYPE]).get():
            if snapshot.get(AGGREGATE_TYPE) == aggregate_type:
                with_event.add(snapshot.get(AGGREGATE_ID))
    return [order_id for order_id in order_ids if order_id not in with_event]
