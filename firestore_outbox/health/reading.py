"""`read_health`: what the watchdog and the console judge the relay's health by, in bounded
reads.

Cost of one reading, in Firestore document reads (the default 16 partitions, one chunk of 30):
the heartbeat shards, 8; the oldest due event and the oldest abandoned event lease, 1 each per
chunk (a query of one document; an empty answer costs 1); FAILED events, 1 per 1,000 counted
(an aggregation); FAILED lately, 1 per chunk; the partition leases, 1 each (16). 28 in all;
with the incident record a watchdog check reads 29 (measured: bench/bench_watchdog.py and
tests/integration/health/test_watchdog_cost.py), about 42,000 a month at one a minute.
"""

from __future__ import annotations

import datetime
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from google.cloud.firestore import FieldFilter

from firestore_outbox.fields import NEXT_ATTEMPT_AT, PARTITION, STATUS, UPDATED_AT, EventStatus
from firestore_outbox.ops.overview import PartitionLease, list_partitions
from firestore_outbox.ops.scan import chunks, count_at, count_each
from firestore_outbox.ops.status import time_left
from firestore_outbox.relay.heartbeat import Beat, shard_ids
from firestore_outbox.relay.store import LeaseStore

if TYPE_CHECKING:
    from google.cloud.firestore import Client

__all__ = ["HealthReading", "Stuck", "Watched", "read_health"]

PENDING, PROCESSING = EventStatus.PENDING, EventStatus.PROCESSING
FAILED = EventStatus.FAILED.value


@dataclass(frozen=True)
class Stuck:
    """A lease held past its time: a partition's (`what` its number) or an event's."""

    what: str
    holder: str | None
    overdue_seconds: float


@dataclass(frozen=True)
class HealthReading:
    """One reading at `now` (Firestore's clock: the heartbeat read's time)."""

    now: datetime.datetime
    beats: list[Beat]
    oldest_due_seconds: float | None
    oldest_due_event: str | None
    failed: int
    failed_lately: int
    window_seconds: float
    stuck: list[Stuck] = field(default_factory=list)
    partitions: list[PartitionLease] = field(default_factory=list)


@dataclass(frozen=True)
class Watched:
    """What a reading looks at: the outbox, the heartbeat's collection, the relay's partition
    leases (their collection and count) and its lease timeout."""

    outbox: str
    health_collection: str
    partition_collection: str
    partitions: int
    lock_timeout_seconds: float


def read_health(
    db: Client, watched: Watched, *, window_seconds: float, timeout: float
) -> HealthReading:
    """One reading; every read ends within `timeout` seconds of the first, or it raises
    (`TimeoutError`, or the client's `GoogleAPIError`)."""
    outbox, health_collection = watched.outbox, watched.health_collection
    partition_collection, partitions = watched.partition_collection, watched.partitions
    lock_timeout_seconds = watched.lock_timeout_seconds
    deadline = time.monotonic() + timeout
    shards = db.collection(health_collection)
    snapshots = list(
        db.get_all([shards.document(i) for i in shard_ids()], timeout=time_left(deadline))
    )
    now = max(
        (s.read_time for s in snapshots if s.read_time is not None),
        default=datetime.datetime.now(datetime.timezone.utc),
    )
    beats = [Beat.read(s) for s in snapshots if s.exists]
    expired_before = now - datetime.timedelta(seconds=lock_timeout_seconds)
    store = LeaseStore(db, outbox, timeout=time_left(deadline))
    due: list[tuple[float, str]] = []
    stuck: list[Stuck] = []
    for chunk in chunks(partitions):
        query = store.due_query(PENDING, NEXT_ATTEMPT_AT, now, 1, partitions=chunk)
        for snapshot in store.run(query):
            due.append(((now - snapshot.get(NEXT_ATTEMPT_AT)).total_seconds(), snapshot.id))
        query = store.due_query(PROCESSING, UPDATED_AT, expired_before, 1, partitions=chunk)
        for snapshot in store.run(query):
            overdue = (expired_before - snapshot.get(UPDATED_AT)).total_seconds()
            stuck.append(Stuck(f"event {snapshot.id}", None, overdue))
    failed_query = db.collection(outbox).where(filter=FieldFilter(STATUS, "==", FAILED))
    failed, _ = count_at(failed_query, None, timeout=time_left(deadline))
    since = now - datetime.timedelta(seconds=window_seconds)
    lately = [
        db.collection(outbox)
        .where(filter=FieldFilter(PARTITION, "in", chunk))
        .where(filter=FieldFilter(STATUS, "==", FAILED))
        .where(filter=FieldFilter(UPDATED_AT, ">=", since))
        for chunk in chunks(partitions)
    ]
    failed_lately = count_each(lately, timeout=time_left(deadline))
    leases = list_partitions(db, partition_collection, timeout=time_left(deadline))
    stuck += [
        Stuck(f"partition {lease.partition}", lease.holder, (now - lease.expires).total_seconds())
        for lease in leases
        if lease.expires is not None and lease.expires < now
    ]
    oldest = max(due, default=None)
    return HealthReading(
        now,
        beats,
        None if oldest is None else oldest[0],
        None if oldest is None else oldest[1],
        failed,
        failed_lately,
        window_seconds,
        stuck,
        leases,
    )
