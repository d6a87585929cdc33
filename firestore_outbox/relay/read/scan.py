"""The partitioned relay's queries, and healing events written without a partition.

Every query that finds events to deliver leads with `partition`, so its index spreads over
`RELAY_PARTITIONS` key ranges instead of one range at the end of a timestamp index (which
Firestore limits to about 500 writes/s):

    partition == p, status in (PENDING, PROCESSING)  order by createdAt, sequence, __name__
    partition == p, held == true                      (the aggregates a FAILED event holds)

Events written before partitions existed, or by another producer, have no `partition` (or
no `sequence`) and match neither; nor do events written with a larger `RELAY_PARTITIONS`.
Like `firestore_outbox.relay.read.unscheduled`, counts at one read time tell whether there are any
(the `PENDING` events, and those of each chunk of 30 partitions: the normal case costs one
aggregation more than there are chunks); only then are they found in document-name order and
healed: one conditional write each sets `partition`, `sequence` 0 and, when missing,
`nextAttemptAt`, after which the partition's holder sees them in commit order.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from google.cloud.firestore import FieldFilter

from firestore_outbox.fields import CREATED_AT, STATUS, EventStatus
from firestore_outbox.firestore.cas import WriteOutcome, Written
from firestore_outbox.partitions import (
    HELD,
    PARTITION,
    SEQUENCE,
    partition_chunks,
)
from firestore_outbox.relay.healing import heal_change, needs_heal

if TYPE_CHECKING:
    from google.cloud.firestore import Query

    from firestore_outbox.firestore.raw import Found
    from firestore_outbox.relay.store import LeaseStore

OPEN = [EventStatus.PENDING.value, EventStatus.PROCESSING.value]
ORDER = (CREATED_AT, SEQUENCE, "__name__")


def open_events(store: LeaseStore, partition: int, limit: int, after: Found | None) -> Any:
    """Partition `partition`'s PENDING and PROCESSING events in delivery order, after
    `after` (a document this query returned)."""
    query = (
        store.collection.where(filter=FieldFilter(PARTITION, "==", partition))
        .where(filter=FieldFilter(STATUS, "in", OPEN))
        .order_by(CREATED_AT)
        .order_by(SEQUENCE)
        .order_by("__name__")
        .limit(limit)
    )
    if after is not None:
        query = query.start_after(
            {
                CREATED_AT: after.get(CREATED_AT),
                SEQUENCE: after.get(SEQUENCE),
                "__name__": after.reference,
            }
        )
    return query


def held_events(store: LeaseStore, partition: int, limit: int) -> Any:
    """FAILED events of partition `partition` that hold their aggregate."""
    return (
        store.collection.where(filter=FieldFilter(PARTITION, "==", partition))
        .where(filter=FieldFilter(HELD, "==", True))
        .limit(limit)
    )


def count_unpartitioned(store: LeaseStore, partitions: int) -> int:
    """`PENDING` events without a `partition` below `partitions` (none, or one written with
    another count): counts at one read time, all `PENDING` events and those of each chunk of
    30 partitions. Equalities only, so single-field indexes serve them (no composite led by
    `status`); `PENDING` only, one disjunction per partition, which is what the emulator's
    time grows with (a `PROCESSING` event under a per-event lease got its partition in its lease
    write, or is found by the survey's read or the scan)."""
    pending = FieldFilter(STATUS, "==", EventStatus.PENDING.value)
    total, read_time = store.count_at(store.collection.where(filter=pending), None)
    partitioned = sum(
        store.count_at(store.in_partitions(chunk).where(filter=pending), read_time)[0]
        for chunk in partition_chunks(partitions)
    )
    return max(0, total - partitioned)


@dataclass(frozen=True)
class Healed:
    """Open events found without a usable partition; how many were given one, how many were
    parked as FAILED instead (they could never be delivered), and the heals Firestore refused
    (event id and outcome: `LeaseStore.write` parked the event when it could)."""

    missing: int = 0
    healed: int = 0
    parked: int = 0
    refused: list[tuple[str, Written]] = field(default_factory=list)


def heal_unpartitioned(
    store: LeaseStore,
    partitions: int,
    *,
    scan_limit: int,
    page_size: int = 250,
) -> Healed:
    """Give open events a partition (and what else the partition query orders by), reading
    at most `scan_limit` documents."""
    missing = count_unpartitioned(store, partitions)
    if not missing:
        return Healed()
    healed = parked = 0
    refused: list[tuple[str, Written]] = []
    for page in pages_by_name(store, open_query(store), scan_limit, page_size):
        changes = [heal_change(d, partitions) for d in page if needs_heal(d.to_dict(), partitions)]
        for change, written in zip(changes, store.write(changes), strict=True):
            is_park = change.fields is not None and STATUS in change.fields
            parked += written.applied and is_park
            healed += written.applied and not is_park
            if written.outcome is WriteOutcome.REFUSED:
                refused.append((change.ref.id, written))
    return Healed(missing, healed, parked, refused)


def pages_by_name(
    store: LeaseStore, query: Query, scan_limit: int, page_size: int
) -> Iterator[list[Found]]:
    """`query`'s documents in document-name order, a page at a time, at most `scan_limit`
    in all; the pages stop at the first short one. Each page is read when the caller asks
    for it, after it has handled the one before (its writes included)."""
    ordered = query.order_by("__name__")
    scanned, after = 0, None
    while scanned < scan_limit:
        page_query = ordered.limit(min(page_size, scan_limit - scanned))
        if after is not None:
            page_query = page_query.start_after({"__name__": after})
        page = store.run(page_query)
        scanned += len(page)
        yield page
        if len(page) < page_size:
            return
        after = page[-1].reference


def open_query(store: LeaseStore) -> Any:
    """The open (PENDING or PROCESSING) events of `store`'s collection."""
    return store.collection.where(filter=FieldFilter(STATUS, "in", OPEN))
