"""`read_overview`: what `outbox console` shows on its first page besides the relay's health
(`firestore_outbox.health.reading`: the oldest wait, FAILED lately, the partition leases),
in one reading: counts by status at one read time (the queries `outbox status` runs), how
many events were delivered lately, and the held aggregates (`outbox held`'s)."""

from __future__ import annotations

import datetime
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from firestore_outbox.ops.held import HeldAggregate, list_held
from firestore_outbox.ops.purge import processed_queries
from firestore_outbox.ops.scan import count_each
from firestore_outbox.ops.status import count_by_status, time_left
from firestore_outbox.relay.claim.partition_leases import HOLDER, KnownLease

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
    """A reading of the outbox: events by status, those that became PROCESSED within the
    last `window_seconds`, the held aggregates."""

    counts: dict[str, int]
    delivered: int
    window_seconds: float
    held: list[HeldAggregate] = field(default_factory=list)


def read_overview(
    db: Client,
    collection: str,
    *,
    partitions: int,
    now: datetime.datetime,
    window_seconds: float = 300.0,
    timeout: float = 30.0,
) -> Overview:
    """One reading; every query ends within `timeout` seconds of the first (or raises)."""
    deadline = time.monotonic() + timeout
    counts = count_by_status(db, collection, deadline=deadline)
    since = now - datetime.timedelta(seconds=window_seconds)
    delivered = count_each(
        processed_queries(db, collection, ">=", since, partitions), timeout=time_left(deadline)
    )
    return Overview(counts, delivered, window_seconds, list_held(db, collection))


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
