"""What the re-drive tests share: an outbox of delivered events at known times, the job
service over it, and the order each aggregate's deliveries came in."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from google.cloud import firestore

from firestore_outbox.consumer.receiver import Received
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.redrive.service import Redrive
from firestore_outbox.relay import RelayConfig
from tests.support.helpers import add_own_event, fast_config

T0 = dt.datetime(2026, 11, 1, 8, 0, tzinfo=dt.timezone.utc)
AGGREGATES = ("a", "b", "c")
TYPES = ("OrderCreated", "OrderPaid")


def seed(db: firestore.Client, settings: Settings, count: int = 12) -> list[dict[str, Any]]:
    """`count` delivered events, a minute apart, spread over aggregates `a`, `b`, `c` (type
    `order`, but `c` of type `cart`) and two event types; one FAILED (the fifth)."""
    events = []
    for n in range(count):
        aggregate = AGGREGATES[n % 3]
        document = add_own_event(
            db,
            settings,
            f"ev-{n:03d}",
            eventType=TYPES[n % 2],
            aggregateType="cart" if aggregate == "c" else "order",
            aggregateId=aggregate,
            payload={"n": n},
            status="FAILED" if n == 4 else "PROCESSED",
            createdAt=T0 + dt.timedelta(minutes=n),
        )
        events.append(document)
    return events


def ids(events: Iterable[dict[str, Any]]) -> list[str]:
    return [event["eventId"] for event in events]


def redrive(
    db: firestore.Client, settings: Settings, url: str, **overrides: Any
) -> tuple[Redrive, RelayConfig]:
    config = fast_config(url, **overrides)
    return Redrive(db, settings, config), config


def per_aggregate(received: Iterable[Received]) -> dict[str, list[str]]:
    """Event ids in the order they arrived, per `ce-subject` (the aggregate)."""
    order: dict[str, list[str]] = defaultdict(list)
    for request in received:
        order[request.headers["ce-subject"]].append(str(request.event_id))
    return dict(order)


def update_times(db: firestore.Client, settings: Settings) -> dict[str, Any]:
    return {s.id: s.update_time for s in db.collection(settings.outbox_collection).get()}
