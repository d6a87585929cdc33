"""`purge_processed` deletes PROCESSED events past their retention; `backfill_expiry` stamps
`expireAt` on the PROCESSED events that lack it, so a Firestore TTL policy can take over.

Both page through `status == PROCESSED` ordered by `processedAt`, a query per chunk of
partitions with the partition first (the composite index `partition`, `status`,
`processedAt`), and write each page in one `BatchWrite`, every write conditional on the
update time it read. An event processed without a `partition` field is left to its
TTL.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from google.cloud.firestore import FieldFilter

from firestore_outbox.fields import EXPIRE_AT, PARTITION, PROCESSED_AT, STATUS, EventStatus
from firestore_outbox.ops.scan import PAGE_SIZE, chunks, count_each, pages
from firestore_outbox.relay.store import Change, LeaseStore
from firestore_outbox.relay.transitions import expiry

if TYPE_CHECKING:
    from google.cloud.firestore import Client

Progress = Callable[[int], None]


def processed_queries(
    db: Client, collection: str, op: str, cutoff: datetime.datetime, partitions: int
) -> list[Any]:
    """PROCESSED events whose `processedAt` compares to `cutoff` by `op`, oldest first, a
    query per chunk of partitions (the relay's `RELAY_PARTITIONS`)."""
    return [
        db.collection(collection)
        .where(filter=FieldFilter(PARTITION, "in", chunk))
        .where(filter=FieldFilter(STATUS, "==", EventStatus.PROCESSED.value))
        .where(filter=FieldFilter(PROCESSED_AT, op, cutoff))
        .order_by(PROCESSED_AT)
        for chunk in chunks(partitions)
    ]


def count_processed(
    db: Client, collection: str, op: str, cutoff: datetime.datetime, partitions: int
) -> int:
    return count_each(processed_queries(db, collection, op, cutoff, partitions))


def purge_processed(
    db: Client,
    collection: str,
    cutoff: datetime.datetime,
    *,
    batch_size: int = PAGE_SIZE,
    on_page: Progress | None = None,
    timeout: float = 30.0,
    partitions: int,
) -> int:
    """Delete PROCESSED events processed before `cutoff`; return how many were deleted."""
    store = LeaseStore(db, collection, timeout=timeout)
    deleted = 0
    for query in processed_queries(db, collection, "<", cutoff, partitions):
        for page in pages(query.select([PROCESSED_AT]), batch_size):
            changes = [Change(s.reference, s.update_time, None) for s in page]
            deleted += sum(r is not None for r in store.write_if_unchanged(changes))
            if on_page is not None:
                on_page(len(page))
    return deleted


def backfill_expiry(
    db: Client,
    collection: str,
    cutoff: datetime.datetime,
    retention_seconds: float,
    *,
    batch_size: int = PAGE_SIZE,
    on_page: Progress | None = None,
    timeout: float = 30.0,
    partitions: int,
) -> int:
    """Set `expireAt = processedAt + retention` on PROCESSED events processed at or after
    `cutoff` that have none; return how many were stamped."""
    store = LeaseStore(db, collection, timeout=timeout)
    stamped = 0
    for query in processed_queries(db, collection, ">=", cutoff, partitions):
        for page in pages(query.select([PROCESSED_AT, EXPIRE_AT]), batch_size):
            changes = []
            for snapshot in page:
                data = snapshot.to_dict() or {}
                expire_at = expiry(data[PROCESSED_AT], retention_seconds)
                if data.get(EXPIRE_AT) is None and expire_at is not None:
                    fields = {EXPIRE_AT: expire_at}
                    changes.append(Change(snapshot.reference, snapshot.update_time, fields))
            stamped += sum(r is not None for r in store.write_if_unchanged(changes))
            if on_page is not None:
                on_page(len(page))
    return stamped
