"""`plan_requeue` and `requeue`: FAILED events back to PENDING, attempts reset.

Each write is conditional on the update time the plan read (the relay's own
`write_if_unchanged`), so a requeue never overwrites a change made since it looked: an event
requeued twice at once, or edited meanwhile, is counted as `changed` and left alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from google.cloud.firestore import FieldFilter

from firestore_outbox.errors import InvalidInput
from firestore_outbox.fields import (
    AGGREGATE_ID,
    ATTEMPTS,
    EVENT_TYPE,
    LAST_ERROR,
    STATUS,
    UPDATED_AT,
    EventStatus,
)
from firestore_outbox.firestore.limits import check_document_id
from firestore_outbox.ops.scan import PAGE_SIZE, count, pages
from firestore_outbox.relay import transitions
from firestore_outbox.relay.store import Change, LeaseStore

if TYPE_CHECKING:
    from google.cloud.firestore import Client


@dataclass(frozen=True)
class RequeuePlan:
    """What a requeue would touch: `matched` FAILED events (found by `snapshots()`), and
    the ids asked for by name that cannot be requeued, with the reason."""

    matched: int
    snapshots: Callable[[], Iterator[list[Any]]] = field(repr=False)
    skipped: dict[str, str] = field(default_factory=dict)


def plan_requeue(
    db: Client,
    collection: str,
    *,
    event_ids: Sequence[str] = (),
    event_type: str | None = None,
    aggregate_id: str | None = None,
) -> RequeuePlan:
    """The FAILED events named by `event_ids`, or those of `event_type` and of
    `aggregate_id` (each when given), or all when none is given."""
    events = db.collection(collection)
    if event_ids:
        for event_id in event_ids:
            problem = check_document_id(event_id)
            if problem:
                raise InvalidInput(f"EVENT_ID {problem}")
        found = {s.id: s for s in db.get_all([events.document(i) for i in event_ids])}
        chosen, skipped = [], {}
        for event_id in dict.fromkeys(event_ids):
            snapshot = found.get(event_id)
            status = snapshot.get(STATUS) if snapshot and snapshot.exists else None
            if status == EventStatus.FAILED.value:
                chosen.append(snapshot)
            else:
                skipped[event_id] = f"status is {status}" if status else "no such event"
        pages_of_chosen = [chosen[i : i + PAGE_SIZE] for i in range(0, len(chosen), PAGE_SIZE)]
        return RequeuePlan(len(chosen), lambda: iter(pages_of_chosen), skipped)
    query = events.where(filter=FieldFilter(STATUS, "==", EventStatus.FAILED.value))
    if event_type is not None:
        query = query.where(filter=FieldFilter(EVENT_TYPE, "==", event_type))
    if aggregate_id is not None:
        query = query.where(filter=FieldFilter(AGGREGATE_ID, "==", aggregate_id))
    query = query.order_by("__name__")
    return RequeuePlan(count(query), lambda: pages(query))


def requeue(
    db: Client,
    collection: str,
    plan: RequeuePlan,
    *,
    on_page: Callable[[int], None] | None = None,
    timeout: float = 30.0,
) -> tuple[int, int]:
    """Requeue what `plan` found, a page per `BatchWrite`; (requeued, changed meanwhile)."""
    store = LeaseStore(db, collection, timeout=timeout)
    done = changed = 0
    for page in plan.snapshots():
        fields = transitions.requeue()
        changes = [Change(s.reference, s.update_time, fields) for s in page]
        results = store.write_if_unchanged(changes)
        written = sum(result is not None for result in results)
        done, changed = done + written, changed + len(results) - written
        if on_page is not None:
            on_page(len(results))
    return done, changed


# A lastError listed by a dry run is cut here: a table row per event stays one line.
PREVIEW_ERROR_CHARS = 100


@dataclass(frozen=True)
class FailedEvent:
    """One FAILED event as a requeue plan lists it."""

    event_id: str
    event_type: str
    aggregate_id: str
    attempts: Any
    last_error: str
    updated_at: Any


def listed(plan: RequeuePlan, limit: int) -> list[FailedEvent]:
    """The first `limit` events `plan` would requeue; reads at most one page past them."""
    rows: list[FailedEvent] = []
    for page in plan.snapshots():
        for snapshot in page:
            if len(rows) >= limit:
                return rows
            data = snapshot.to_dict() or {}
            rows.append(
                FailedEvent(
                    snapshot.id,
                    str(data.get(EVENT_TYPE, "")),
                    str(data.get(AGGREGATE_ID, "")),
                    data.get(ATTEMPTS, "?"),
                    str(data.get(LAST_ERROR) or "(none)"),
                    data.get(UPDATED_AT),
                )
            )
        if len(rows) >= limit:
            break
    return rows


def preview(plan: RequeuePlan, limit: int) -> list[tuple[str, Any, str]]:
    """(eventId, attempts, lastError cut to a line) of the first `limit` events `plan` would
    requeue."""
    rows = []
    for event in listed(plan, limit):
        error = " ".join(event.last_error.split())
        if len(error) > PREVIEW_ERROR_CHARS:
            error = error[: PREVIEW_ERROR_CHARS - 3] + "..."
        rows.append((event.event_id, event.attempts, error))
    return rows
