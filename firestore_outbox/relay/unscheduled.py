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
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from google.cloud.firestore import FieldFilter

from firestore_outbox.fields import NEXT_ATTEMPT_AT, STATUS, EventStatus

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


def count_unscheduled(store: LeaseStore) -> int:
    """`PENDING` events without a timestamp `nextAttemptAt`: two counts at one read time."""
    pending = _pending(store)
    total, read_time = store.count_at(pending, None)
    scheduled, _ = store.count_at(
        pending.where(filter=FieldFilter(NEXT_ATTEMPT_AT, ">=", EARLIEST)), read_time
    )
    return max(0, total - scheduled)


def find_unscheduled(store: LeaseStore, *, scan_limit: int, page_size: int = 250) -> Unscheduled:
    """Count them, and when there are any, find them by reading at most `scan_limit`
    `PENDING` documents in document-name order."""
    missing = count_unscheduled(store)
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
        found += [d for d in page if not isinstance(d.get(NEXT_ATTEMPT_AT), datetime.datetime)]
        if len(page) < page_size:
            break
        after = page[-1].reference
    return Unscheduled(missing, found, scanned)


def scan_query(store: LeaseStore) -> Any:
    """Every `PENDING` event in document-name order (single-field indexes serve it)."""
    return _pending(store).order_by("__name__")


def _pending(store: LeaseStore) -> Any:
    return store.collection.where(filter=FieldFilter(STATUS, "==", EventStatus.PENDING.value))
