"""`find_anomalies`: what should never be there, found by reading both collections.

- a `PROCESSING` event past its lease: its relay died and no relay has run since;
- an aggregate's document with no outbox event: written outside its service function (for
  orders, `create_new_order`), or its event deleted;
- an aggregate's event whose document does not exist: deleted, or the event forged;
- a `PENDING` event without a timestamp `nextAttemptAt` (another producer's): invisible to
  the due query until a relay run finds and leases it (`firestore_outbox.relay.read.unscheduled`).

The aggregates checked are the ones named (`aggregates`: aggregate type -> collection; by
default the reference application's `order` in `orders`); their documents need a timestamp
`createdAt`. Documents and events are checked within a window (`since`), so the cost stays
bounded. Keep the window shorter than the retention: a purged event would otherwise look missing.
"""

from __future__ import annotations

import datetime
import itertools
from collections.abc import Mapping
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
from firestore_outbox.relay.healing import needs_partition
from firestore_outbox.relay.read.unscheduled import find_unscheduled
from firestore_outbox.relay.store import LeaseStore

if TYPE_CHECKING:
    from google.cloud.firestore import Client

# The aggregate type of the documents in `orders`: the reference application's orders.
DEFAULT_AGGREGATE_TYPE = "order"
# Firestore allows at most 30 values in one `in` filter.
_IN_LIMIT = 30
# How many PENDING documents reconcile reads at most to name unscheduled events.
_UNSCHEDULED_SCAN_LIMIT = 10_000


@dataclass
class AggregateAnomalies:
    """One aggregate's findings: its documents with no event, its events with no document
    (`{"eventId", "aggregateId"}`); each list holds at most `limit`, the counts are complete."""

    collection: str
    without_event: list[str] = field(default_factory=list)
    events_without_document: list[dict[str, str]] = field(default_factory=list)
    counts: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(("withoutEvent", "eventsWithoutDocument"), 0)
    )


@dataclass
class Anomalies:
    """Each list holds at most `limit` ids; the counts are complete. `orders_without_event`
    and `events_without_order` (and their counts) sum over every aggregate checked, as before
    there was more than the orders; `aggregates` holds each one's own."""

    stuck_events: list[dict[str, Any]] = field(default_factory=list)
    orders_without_event: list[str] = field(default_factory=list)
    events_without_order: list[dict[str, str]] = field(default_factory=list)
    unscheduled_events: list[dict[str, Any]] = field(default_factory=list)
    aggregates: dict[str, AggregateAnomalies] = field(default_factory=dict)
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
    orders: str | None = None,
    outbox: str,
    now: datetime.datetime,
    since: datetime.datetime,
    lock_timeout_seconds: float,
    limit: int = 100,
    timeout: float = 30.0,
    aggregate_type: str = DEFAULT_AGGREGATE_TYPE,
    partitions: int,
    aggregates: Mapping[str, str] | None = None,
) -> Anomalies:
    """What should never be there; the outbox's queries that range over a timestamp run per
    chunk of partitions (the relay's `RELAY_PARTITIONS`), the partition first. The aggregates
    checked are `aggregates` (type -> collection), or `aggregate_type` in `orders`."""
    if aggregates is None:
        if orders is None:
            raise TypeError("find_anomalies needs the aggregates to check (or orders)")
        aggregates = {aggregate_type: orders}
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
    for kind, collection in aggregates.items():
        mine = AggregateAnomalies(collection)
        found.aggregates[kind] = mine
        _check_aggregate(db, outbox, kind, mine, since, every, unscheduled.found, limit)
        for name, total in (
            ("ordersWithoutEvent", mine.counts["withoutEvent"]),
            ("eventsWithoutOrder", mine.counts["eventsWithoutDocument"]),
        ):
            found.counts[name] += total
        found.orders_without_event += mine.without_event
        found.events_without_order += [
            {"eventId": e["eventId"], "orderId": e["aggregateId"]}
            for e in mine.events_without_document
        ]
    del found.orders_without_event[limit:], found.events_without_order[limit:]
    return found


def _check_aggregate(
    db: Client,
    outbox: str,
    aggregate_type: str,
    mine: AggregateAnomalies,
    since: datetime.datetime,
    every: list[list[int]],
    unscheduled: list[Any],
    limit: int,
) -> None:
    """The aggregate's documents with no event and its events with no document."""
    recent = (
        db.collection(mine.collection)
        .where(filter=FieldFilter("createdAt", ">=", since))
        .order_by("createdAt")
    )
    for page in pages(recent.select(["createdAt"]), 300):
        ids = [snapshot.id for snapshot in page]
        for missing in _ids_without_event(db, outbox, ids, aggregate_type):
            mine.counts["withoutEvent"] += 1
            if len(mine.without_event) < limit:
                mine.without_event.append(missing)
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
        for s in unscheduled
        if needs_partition(s.to_dict() or {}, sum(map(len, every)))
        and s.get(AGGREGATE_TYPE) == aggregate_type
        and isinstance(s.get(CREATED_AT), datetime.datetime)
        and s.get(CREATED_AT) >= since
    ]
    listed = (page for query in recent_events for page in pages(query, 300))
    for page in itertools.chain(listed, [unpartitioned] if unpartitioned else []):
        claimed = {snapshot.id: str(snapshot.get(AGGREGATE_ID)) for snapshot in page}
        # An aggregateId that cannot be a document id names no document at all.
        refs = [
            db.collection(mine.collection).document(aggregate_id)
            for aggregate_id in set(claimed.values())
            if not check_document_id(aggregate_id)
        ]
        existing = {s.id for s in db.get_all(refs) if s.exists}
        for event_id, aggregate_id in claimed.items():
            if aggregate_id not in existing:
                mine.counts["eventsWithoutDocument"] += 1
                if len(mine.events_without_document) < limit:
                    mine.events_without_document.append(
                        {"eventId": event_id, "aggregateId": aggregate_id}
                    )


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
