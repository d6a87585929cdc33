"""`read_overview`: what `outbox console` shows on its first page, in one reading.

Built from the queries `outbox status` and `outbox held` run (counts by status at one read
time, the relay's own due-event queries for the oldest wait, the held events), plus what
only the overview needs: how many events were delivered and failed lately, and who holds
each partition lease.
"""

from __future__ import annotations

import datetime
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from google.cloud.firestore import FieldFilter

from firestore_outbox.fields import PARTITION, STATUS, UPDATED_AT, EventStatus
from firestore_outbox.ops.held import HeldAggregate, list_held
from firestore_outbox.ops.purge import processed_queries
from firestore_outbox.ops.scan import chunks, count_each
from firestore_outbox.ops.status import count_by_status, oldest_waiting, time_left
from firestore_outbox.relay.partitioned.lease_documents import HOLDER, KnownLease
from firestore_outbox.relay.store import LeaseStore

if TYPE_CHECKING:
    from google.cloud.firestore import Client

# Lease documents read at most: RELAY_PARTITIONS is at most 1024.
_PARTITIONS_READ = 1024


@dataclass(frozen=True)
class PartitionLease:
    """One partition's lease document: who holds it (None: free) and until when."""

    partition: str
    holder: str | None
    expires: datetime.datetime | None
    drained: datetime.datetime | None


@dataclass(frozen=True)
class Overview:
    """A reading of the outbox. `oldest_due_seconds`: how long the oldest eligible event
    has waited (None: none is due); `delivered` and `failed`: events that became PROCESSED
    and FAILED within the last `window_seconds`."""

    counts: dict[str, int]
    oldest_due_seconds: float | None
    oldest_due_event: str | None
    delivered: int
    failed: int
    window_seconds: float
    partitions: list[PartitionLease] = field(default_factory=list)
    held: list[HeldAggregate] = field(default_factory=list)


def read_overview(
    db: Client,
    collection: str,
    partition_collection: str,
    *,
    partitions: int,
    now: datetime.datetime,
    lock_timeout_seconds: float,
    window_seconds: float = 300.0,
    timeout: float = 30.0,
) -> Overview:
    """One reading; every query ends within `timeout` seconds of the first (or raises)."""
    deadline = time.monotonic() + timeout
    counts = count_by_status(db, collection, deadline=deadline)
    expired_before = now - datetime.timedelta(seconds=lock_timeout_seconds)
    store = LeaseStore(db, collection, timeout=time_left(deadline))
    waiting = oldest_waiting(store, now, expired_before, partitions)
    oldest = max(waiting) if waiting else None
    since = now - datetime.timedelta(seconds=window_seconds)
    delivered = count_each(
        processed_queries(db, collection, ">=", since, partitions), timeout=time_left(deadline)
    )
    failed_lately = [
        db.collection(collection)
        .where(filter=FieldFilter(PARTITION, "in", chunk))
        .where(filter=FieldFilter(STATUS, "==", EventStatus.FAILED.value))
        .where(filter=FieldFilter(UPDATED_AT, ">=", since))
        for chunk in chunks(partitions)
    ]
    failed = count_each(failed_lately, timeout=time_left(deadline))
    return Overview(
        counts,
        None if oldest is None else oldest[0].total_seconds(),
        None if oldest is None else oldest[1],
        delivered,
        failed,
        window_seconds,
        list_partitions(db, partition_collection, timeout=time_left(deadline)),
        list_held(db, collection),
    )


def list_partitions(db: Client, collection: str, *, timeout: float) -> list[PartitionLease]:
    """The partition lease documents, by partition number (none before a relay ran)."""
    query = db.collection(collection).limit(_PARTITIONS_READ)
    leases = []
    for snapshot in query.get(timeout=timeout):
        known = KnownLease.read(snapshot)
        holder = (snapshot.to_dict() or {}).get(HOLDER)
        leases.append(
            PartitionLease(
                snapshot.id,
                None if holder is None else str(holder),
                known.expires,
                known.drained,
            )
        )
    return sorted(leases, key=lambda lease: (len(lease.partition), lease.partition))
