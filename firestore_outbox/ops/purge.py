"""`purge_processed` deletes PROCESSED events past their retention; `backfill_expiry` stamps
`expireAt` on the PROCESSED events that lack it, so a Firestore TTL policy can take over.

Both page through `status == PROCESSED` ordered by `processedAt` (one composite index) and
write each page in one `BatchWrite`, every write conditional on the update time it read.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from google.cloud.firestore import FieldFilter

from firestore_outbox.fields import EXPIRE_AT, PROCESSED_AT, STATUS, EventStatus
from firestore_outbox.ops.scan import PAGE_SIZE, count, pages
from firestore_outbox.relay.store import Change, LeaseStore
from firestore_outbox.relay.transitions import expiry

if TYPE_CHECKING:
    from google.cloud.firestore import Client

Progress = Callable[[int], None]


def processed_query(db: Client, collection: str, op: str, cutoff: datetime.datetime) -> Any:
    """PROCESSED events whose `processedAt` compares to `cutoff` by `op`, oldest first."""
    return (
        db.collection(collection)
        .where(filter=FieldFilter(STATUS, "==", EventStatus.PROCESSED.value))
        .where(filter=FieldFilter(PROCESSED_AT, op, cutoff))
        .order_by(PROCESSED_AT)
    )


def count_processed(db: Client, collection: str, op: str, cutoff: datetime.datetime) -> int:
    return count(processed_query(db, collection, op, cutoff))


def purge_processed(
    db: Client,
    collection: str,
    cutoff: datetime.datetime,
    *,
    batch_size: int = PAGE_SIZE,
    on_page: Progress | None = None,
    timeout: float = 30.0,
) -> int:
    """Delete PROCESSED events processed before `cutoff`; return how many were deleted."""
    store = LeaseStore(db, collection, timeout=timeout)
    deleted = 0
    query = processed_query(db, collection, "<", cutoff)
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
) -> int:
    """Set `expireAt = processedAt + retention` on PROCESSED events processed at or after
    `cutoff` that have none; return how many were stamped."""
    store = LeaseStore(db, collection, timeout=timeout)
    stamped = 0
    query = processed_query(db, collection, ">=", cutoff)
    for page in pages(query.select([PROCESSED_AT, EXPIRE_AT]), batch_size):
        changes = []
        for snapshot in page:
            data = snapshot.to_dict() or {}
            expire_at = expiry(data[PROCESSED_AT], retention_seconds)
            if data.get(EXPIRE_AT) is None and expire_at is not None:
                changes.append(
                    Change(snapshot.reference, snapshot.update_time, {EXPIRE_AT: expire_at})
                )
        stamped += sum(r is not None for r in store.write_if_unchanged(changes))
        if on_page is not None:
            on_page(len(page))
    return stamped
