"""`read_status`: how big the backlog is, how late it runs, and why events failed."""

from __future__ import annotations

import datetime
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from google.cloud.firestore import FieldFilter

from firestore_outbox.fields import (
    CREATED_AT,
    LAST_ERROR,
    NEXT_ATTEMPT_AT,
    STATUS,
    UPDATED_AT,
    EventStatus,
)
from firestore_outbox.ops.scan import chunks, count_at, count_each, pages
from firestore_outbox.relay.read.unscheduled import find_unscheduled
from firestore_outbox.relay.store import LeaseStore

PENDING, PROCESSING = EventStatus.PENDING, EventStatus.PROCESSING
# How many PENDING documents `status` reads at most to name unscheduled events.
_UNSCHEDULED_SCAN_LIMIT = 10_000
_UNSCHEDULED_NAMED = 20

if TYPE_CHECKING:
    from google.cloud.firestore import Client


@dataclass(frozen=True)
class OutboxStatus:
    """A snapshot of the outbox. `lag` is how long the oldest eligible event has waited:
    a `PENDING` event since its `nextAttemptAt`, an abandoned lease since it expired."""

    counts: dict[str, int]
    due: int  # PENDING events whose nextAttemptAt has come, and the unscheduled ones
    stuck: int  # PROCESSING events past their lease
    lag: datetime.timedelta | None
    oldest_event_id: str | None
    failures: list[tuple[str, int]] = field(default_factory=list)  # (lastError, count)
    failures_read: int = 0  # how many FAILED events were grouped (at most max_failures)
    # PENDING events without a timestamp nextAttemptAt (the relay leases them at once), and
    # the ids of the first few.
    unscheduled: int = 0
    unscheduled_ids: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "counts": self.counts,
            "due": self.due,
            "stuck": self.stuck,
            "lagSeconds": None if self.lag is None else round(self.lag.total_seconds(), 3),
            "oldestEligibleEventId": self.oldest_event_id,
            "failures": [{"lastError": error, "count": n} for error, n in self.failures],
            "failuresRead": self.failures_read,
            "unscheduled": self.unscheduled,
            "unscheduledEventIds": self.unscheduled_ids,
        }


def read_status(
    db: Client,
    collection: str,
    *,
    now: datetime.datetime,
    lock_timeout_seconds: float,
    timeout: float = 30.0,
    max_failures: int = 10_000,
    partitions: int,
) -> OutboxStatus:
    """Counts by aggregation queries; the lag from the due-event queries, per chunk of
    partitions (the relay's `RELAY_PARTITIONS`); failures by reading `lastError` of at
    most `max_failures` FAILED events (a read each). Events without a usable partition
    count as due and unscheduled: no partition-led query sees them."""
    events = db.collection(collection)
    counts = count_by_status(db, collection)
    store = LeaseStore(db, collection, timeout=timeout)
    expired_before = now - datetime.timedelta(seconds=lock_timeout_seconds)
    every = chunks(partitions)
    due = count_each(
        [store.due_query(PENDING, NEXT_ATTEMPT_AT, now, 1 << 30, partitions=c) for c in every]
    )
    stuck = count_each(
        [
            store.due_query(PROCESSING, UPDATED_AT, expired_before, 1 << 30, partitions=c)
            for c in every
        ]
    )
    waiting = oldest_waiting(store, now, expired_before, partitions)
    unscheduled = find_unscheduled(
        store, scan_limit=_UNSCHEDULED_SCAN_LIMIT, partitions=sum(map(len, every))
    )
    for snapshot in unscheduled.found:  # eligible since they were created
        created = snapshot.get(CREATED_AT)
        if isinstance(created, datetime.datetime):
            waiting.append((now - created, snapshot.id))
    lag, oldest = max(waiting) if waiting else (None, None)
    failures = _failures(events, max_failures)
    return OutboxStatus(
        counts,
        due + unscheduled.count,
        stuck,
        lag,
        oldest,
        failures.most_common(),
        sum(failures.values()),
        unscheduled.count,
        [snapshot.id for snapshot in unscheduled.found[:_UNSCHEDULED_NAMED]],
    )


def count_by_status(
    db: Client, collection: str, *, deadline: float | None = None
) -> dict[str, int]:
    """Events per status, by aggregation queries (one read per 1,000 events counted), all at
    the first one's read time: one snapshot, so an event settled between two counts is not
    counted twice (PENDING, then PROCESSED) or missed. All done by `deadline`
    (`time.monotonic()`), when given."""
    events = db.collection(collection)
    counts: dict[str, int] = {}
    read_time = None
    for status in EventStatus:
        query = events.where(filter=FieldFilter(STATUS, "==", status.value))
        timeout = None if deadline is None else time_left(deadline)
        counts[status.value], read_time = count_at(query, read_time, timeout=timeout)
    return counts


def time_left(deadline: float) -> float:
    """Seconds left before `deadline`; a `TimeoutError` when none are."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("the backlog reading ran out of time")
    return left


def oldest_waiting(
    store: LeaseStore,
    now: datetime.datetime,
    expired_before: datetime.datetime,
    partitions: int,
) -> list[tuple[datetime.timedelta, str]]:
    """How long the oldest due PENDING events and the oldest abandoned leases have waited,
    with their ids (the due-event queries, one document each, per chunk of partitions)."""
    waiting: list[tuple[datetime.timedelta, str]] = []
    for chunk in chunks(partitions):
        due = store.due_query(PENDING, NEXT_ATTEMPT_AT, now, 1, partitions=chunk)
        for snapshot in store.run(due):
            waiting.append((now - snapshot.get(NEXT_ATTEMPT_AT), snapshot.id))
        abandoned = store.due_query(PROCESSING, UPDATED_AT, expired_before, 1, partitions=chunk)
        for snapshot in store.run(abandoned):
            waiting.append((expired_before - snapshot.get(UPDATED_AT), snapshot.id))
    return waiting


def backlog_reader(
    db: Client,
    collection: str,
    *,
    partitions: int,
    lock_timeout_seconds: float,
    timeout: float = 30.0,
) -> Callable[[], tuple[dict[str, int], float | None]]:
    """What `firestore_outbox.observability.metrics.BacklogGauges` reads: events per status and how
    many seconds the
    oldest eligible event has waited (None: none is due), as `outbox status` counts them
    (without its scan for unscheduled events). A reading's queries (four counts, and two
    per chunk of 30 partitions) are all done within `timeout` seconds (the Firestore
    deadline), or it raises."""

    def read() -> tuple[dict[str, int], float | None]:
        deadline = time.monotonic() + timeout
        counts = count_by_status(db, collection, deadline=deadline)
        now = datetime.datetime.now(datetime.timezone.utc)
        expired_before = now - datetime.timedelta(seconds=lock_timeout_seconds)
        # The two lease queries share what is left of the deadline.
        store = LeaseStore(db, collection, timeout=time_left(deadline) / 2)
        waiting = oldest_waiting(store, now, expired_before, partitions)
        age = max(waiting)[0].total_seconds() if waiting else None
        return counts, age

    return read


def _failures(events: Any, limit: int) -> Counter[str]:
    failed = events.where(filter=FieldFilter(STATUS, "==", EventStatus.FAILED.value))
    by_error: Counter[str] = Counter()
    for page in pages(failed.select([LAST_ERROR]).order_by("__name__"), limit=limit):
        for snapshot in page:
            by_error[str((snapshot.to_dict() or {}).get(LAST_ERROR) or "(none)")] += 1
    return by_error
