"""Held aggregates: FAILED events that keep their aggregate's later events waiting.

With `RELAY_ORDERING=aggregate` and `RELAY_FAILED_HEAD=hold` (the defaults) an event that
fails for good is written with `held: true`, and the relay delivers none of its aggregate's
later events: delivering them would apply them without the failed one. The operator either
requeues the failed event (`outbox requeue`, which clears `held`: it goes first again) or
releases the aggregate here: the failed event stays FAILED, `held` becomes false and
`heldReleasedAt` records when, so the later events go on without it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from google.cloud.firestore import SERVER_TIMESTAMP, FieldFilter

from firestore_outbox.errors import InvalidInput
from firestore_outbox.fields import (
    AGGREGATE_ID,
    AGGREGATE_TYPE,
    HELD_RELEASED_AT,
    LAST_ERROR,
    UPDATED_AT,
)
from firestore_outbox.firestore.limits import label_problem
from firestore_outbox.partitions import HELD
from firestore_outbox.relay.store import Change, LeaseStore

if TYPE_CHECKING:
    from google.cloud.firestore import Client

# Held events read at most: more than this many held aggregates at once is an outage to look
# at with `outbox status`, not a list to print.
LIST_LIMIT = 1000


@dataclass(frozen=True)
class HeldAggregate:
    """An aggregate whose later events wait for an operator, and the FAILED events holding it."""

    aggregate_id: str
    aggregate_type: str
    event_ids: list[str] = field(default_factory=list)
    last_error: str = ""


def list_held(db: Client, collection: str, *, limit: int = LIST_LIMIT) -> list[HeldAggregate]:
    """Held aggregates, read from at most `limit` held events."""
    query = db.collection(collection).where(filter=FieldFilter(HELD, "==", True)).limit(limit)
    found: dict[str, HeldAggregate] = {}
    for snapshot in query.get():
        data = snapshot.to_dict() or {}
        aggregate = str(data.get(AGGREGATE_ID))
        held = found.setdefault(
            aggregate,
            HeldAggregate(
                aggregate, str(data.get(AGGREGATE_TYPE)), [], str(data.get(LAST_ERROR) or "")
            ),
        )
        held.event_ids.append(snapshot.id)
    return sorted(found.values(), key=lambda h: h.aggregate_id)


def release_held(db: Client, collection: str, aggregate_id: str, *, timeout: float = 30.0) -> int:
    """Release `aggregate_id`: its held events stay FAILED and stop holding it. Returns how
    many events were released (0: it was not held, or changed meanwhile)."""
    # The producer's rule for an aggregate id, not a document id's: it is only a filter value,
    # and an id such as `tenant/42` that `outbox held` lists must be releasable.
    problem = label_problem(aggregate_id)
    if problem:
        raise InvalidInput(f"AGGREGATE_ID {problem}")
    query = (
        db.collection(collection)
        .where(filter=FieldFilter(HELD, "==", True))
        .where(filter=FieldFilter(AGGREGATE_ID, "==", aggregate_id))
        .limit(LIST_LIMIT)
    )
    fields = {HELD: False, HELD_RELEASED_AT: SERVER_TIMESTAMP, UPDATED_AT: SERVER_TIMESTAMP}
    changes = [Change(s.reference, s.update_time, fields) for s in query.get()]
    store = LeaseStore(db, collection, timeout=timeout)
    return sum(t is not None for t in store.write_if_unchanged(changes))
