"""`read_recent` and `recent_points`: the outbox's last half hour, minute by minute, from
what Firestore already holds, so the console's chart has data the moment the page opens.

Two bounded reads per chunk of 30 partitions (the relay's partition-led indexes): the events
delivered since (`processedAt`, `createdAt` only; at most `limit`), and the PENDING events
created since (`createdAt` only, newest first; at most `limit`). From them, for each minute t:

    delivered(t) = events whose processedAt falls in that minute
    backlog(t)   = PENDING now - PENDING now created after t
                   + delivered after t that were created by t

exact for events that went PENDING -> PROCESSED in the window (a FAILED or retried event
counts as still PENDING). When a read is cut at `limit`, `truncated` says so and the chart
says it covers the first events only. 2 x 500 reads per chunk at most; the console keeps
a reading for a minute (`firestore_outbox.console.context`).
"""

from __future__ import annotations

import bisect
import datetime
from dataclasses import dataclass
from typing import TYPE_CHECKING

from google.cloud.firestore import FieldFilter

from firestore_outbox.fields import CREATED_AT, PARTITION, PROCESSED_AT, STATUS, EventStatus
from firestore_outbox.ops.purge import processed_queries
from firestore_outbox.ops.scan import chunks

if TYPE_CHECKING:
    from google.cloud.firestore import Client

__all__ = ["Point", "Recent", "read_recent", "recent_points"]

WINDOW_SECONDS = 1800.0
LIMIT = 500


@dataclass(frozen=True)
class Recent:
    """Delivered events (processedAt, createdAt) and PENDING events' createdAt since `since`."""

    since: datetime.datetime
    now: datetime.datetime
    delivered: list[tuple[datetime.datetime, datetime.datetime]]
    pending_created: list[datetime.datetime]
    truncated: bool


@dataclass(frozen=True)
class Point:
    """The minute ending at `at`: events delivered in it, and the backlog at its end."""

    at: datetime.datetime
    delivered: int
    backlog: int


def read_recent(
    db: Client, collection: str, *, partitions: int, now: datetime.datetime, timeout: float = 10.0
) -> Recent:
    """The last `WINDOW_SECONDS` before `now`, at most `LIMIT` events each way per chunk."""
    since, limit = now - datetime.timedelta(seconds=WINDOW_SECONDS), LIMIT
    delivered: list[tuple[datetime.datetime, datetime.datetime]] = []
    created: list[datetime.datetime] = []
    truncated = False
    for query in processed_queries(db, collection, ">=", since, partitions):
        found = query.select([PROCESSED_AT, CREATED_AT]).limit(limit).get(timeout=timeout)
        truncated |= len(found) >= limit
        for snapshot in found:
            data = snapshot.to_dict() or {}
            at, born = data.get(PROCESSED_AT), data.get(CREATED_AT)
            if isinstance(at, datetime.datetime):
                delivered.append((at, born if isinstance(born, datetime.datetime) else since))
    for chunk in chunks(partitions):
        query = (
            db.collection(collection)
            .where(filter=FieldFilter(PARTITION, "in", chunk))
            .where(filter=FieldFilter(STATUS, "==", EventStatus.PENDING.value))
            .where(filter=FieldFilter(CREATED_AT, ">=", since))
            .order_by(CREATED_AT, direction="DESCENDING")
            .select([CREATED_AT])
            .limit(limit)
        )
        found = query.get(timeout=timeout)
        truncated |= len(found) >= limit
        stamps = [(snapshot.to_dict() or {}).get(CREATED_AT) for snapshot in found]
        created += [c for c in stamps if isinstance(c, datetime.datetime)]
    return Recent(since, now, delivered, created, truncated)


def recent_points(recent: Recent, pending_now: int, step_seconds: float = 60.0) -> list[Point]:
    """One `Point` per step from `recent.since` to `recent.now` (see the module docstring)."""
    step = datetime.timedelta(seconds=step_seconds)
    processed = sorted(at for at, _ in recent.delivered)
    created = sorted(recent.pending_created)
    points, t = [], recent.since + step
    while t <= recent.now + step / 2:
        start = t - step
        in_step = bisect.bisect_right(processed, t) - bisect.bisect_right(processed, start)
        pending_after = len(created) - bisect.bisect_right(created, t)
        delivered_after = sum(1 for at, born in recent.delivered if at > t and born <= t)
        points.append(Point(t, in_step, max(0, pending_now - pending_after + delivered_after)))
        t += step
    return points
