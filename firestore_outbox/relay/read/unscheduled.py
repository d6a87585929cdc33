"""Finding `PENDING` events the due-event query cannot see.

An event written by another producer with the contract's fields but without `nextAttemptAt`
(or with a null or non-timestamp one) never matches `nextAttemptAt <= now`, and Firestore
cannot query for a missing field. So the relay compares two counts taken at one read time:

    PENDING                                  (one aggregation, one read per 1,000 matched)
    PENDING with nextAttemptAt >= year 1     (a range filter matches timestamps only)

Equal counts (the normal case) cost two aggregations. Only when they differ does it page
through the `PENDING` events by document name, at most `scan_limit` documents, and return
those without a timestamp `nextAttemptAt`, for the relay to lease (which parks a truly
malformed one with its reason) and `outbox status` and `reconcile` to name.

The second count needs a composite index (`status`, `nextAttemptAt`) that only per-event
leases need otherwise (`firestore.indexes.event-leases.json`). The operations commands count
by partition instead (`partitions`): `partition in chunk` first, an index led by the
partition, one count per chunk of 30; an event without a usable partition then counts as
unscheduled too (the partitioned relay's queries cannot see it either), and is named.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from google.cloud.firestore import FieldFilter

from firestore_outbox.fields import NEXT_ATTEMPT_AT, PARTITION, STATUS, EventStatus
from firestore_outbox.partitions import partition_chunks

if TYPE_CHECKING:
    from firestore_outbox.firestore.raw import Found
    from firestore_outbox.relay.store import LeaseStore

# Timestamps start at year 1; every timestamp is at least this, and nothing else matches.
EARLIEST = datetime.datetime(1, 1, 1, tzinfo=datetime.timezone.utc)


@dataclass(frozen=True)
class Unscheduled:
    """How many `PENDING` events lack a timestamp `nextAttemptAt`, and those found of them."""

    count: int
    found: list[Found] = field(default_factory=list)
    scanned: int = 0  # documents read to find them


def count_unscheduled(store: LeaseStore, partitions: int | None = None) -> int:
    """`PENDING` events without a timestamp `nextAttemptAt` (with `partitions`: or without
    a partition below it): counts at one read time."""
    total, read_time = store.count_at(_pending(store), None)
    scheduled = sum(store.count_at(q, read_time)[0] for q in scheduled_queries(store, partitions))
    return max(0, total - scheduled)


def scheduled_queries(store: LeaseStore, partitions: int | None) -> list[Any]:
    """The `PENDING` events with a timestamp `nextAttemptAt` (and with `partitions`, a
    partition below it: a query per chunk, the partition first)."""
    if partitions is None:
        return [_pending(store).where(filter=FieldFilter(NEXT_ATTEMPT_AT, ">=", EARLIEST))]
    return [
        store.in_partitions(chunk)
        .where(filter=FieldFilter(STATUS, "==", EventStatus.PENDING.value))
        .where(filter=FieldFilter(NEXT_ATTEMPT_AT, ">=", EARLIEST))
        for chunk in partition_chunks(partitions)
    ]


def find_unscheduled(
    store: LeaseStore, *, scan_limit: int, page_size: int = 250, partitions: int | None = None
) -> Unscheduled:
    """Count them, and when there are any, find them by reading at most `scan_limit`
    `PENDING` documents in document-name order."""
    missing = count_unscheduled(store, partitions)
    if not missing:
        return Unscheduled(0)
    query = scan_query(store)
    found: list[Found] = []
    scanned, after = 0, None
    while scanned < scan_limit and len(found) < missing:
        page_query = query.limit(min(page_size, scan_limit - scanned))
        if after is not None:
            page_query = page_query.start_after({"__name__": after})
        page = store.run(page_query)
        scanned += len(page)
        found += [d for d in page if _unscheduled(d, partitions)]
        if len(page) < page_size:
            break
        after = page[-1].reference
    return Unscheduled(missing, found, scanned)


def _unscheduled(document: Found, partitions: int | None) -> bool:
    if not isinstance(document.get(NEXT_ATTEMPT_AT), datetime.datetime):
        return True
    partition = document.get(PARTITION)
    usable = isinstance(partition, int) and not isinstance(partition, bool)
    return partitions is not None and not (usable and 0 <= partition < partitions)


def scan_query(store: LeaseStore) -> Any:
    """Every `PENDING` event in document-name order (single-field indexes serve it)."""
    return _pending(store).order_by("__name__")


def _pending(store: LeaseStore) -> Any:
    return store.collection.where(filter=FieldFilter(STATUS, "==", EventStatus.PENDING.value))
