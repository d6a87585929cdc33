"""Whether an aggregate's head event, read under a partition lease, goes out now: a lease to
publish it under (no write: holding the partition is the lease), or a reason it does not."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from firestore_outbox.fields import AGGREGATE_ID, NEXT_ATTEMPT_AT, STATUS, UPDATED_AT, EventStatus
from firestore_outbox.firestore.cas import Change
from firestore_outbox.relay.lease import Lease
from firestore_outbox.relay.partitioned.partitions import HELD
from firestore_outbox.relay.transitions import Planned, plan_lease

if TYPE_CHECKING:
    from firestore_outbox.firestore.raw import Found
    from firestore_outbox.relay.config import RelayConfig


@dataclass(frozen=True)
class Head:
    """`lease` to publish under; else `park` (fields that make it FAILED: it can never be
    sent) or neither (not due yet, or still leased by a relay of 0.2). `lag_ms`: how long it
    has been due; `reclaim`: it was under a lease of 0.2 that expired."""

    lease: Lease | None = None
    park: dict[str, Any] | None = None
    lag_ms: int | None = None
    reclaim: bool = False


def take_head(
    document: Found,
    *,
    now: datetime.datetime,
    config: RelayConfig,
    instance: str,
    leased_at: float,
) -> Head:
    """`document` at Firestore's `now`; `leased_at` (monotonic) is when the partition's lease
    was written, which bounds the publish (`firestore_outbox.relay.attempts`)."""
    data = document.to_dict() or {}
    lock = datetime.timedelta(seconds=config.lock_timeout_seconds)
    due_at, updated_at = data.get(NEXT_ATTEMPT_AT), data.get(UPDATED_AT)
    waiting = isinstance(due_at, datetime.datetime) and due_at > now
    if data.get(STATUS) == EventStatus.PROCESSING.value:  # an event-lease relay's lease, maybe live
        waiting = isinstance(updated_at, datetime.datetime) and updated_at > now - lock
    if waiting:
        return Head()
    lag_ms = None
    if isinstance(due_at, datetime.datetime):
        lag_ms = round((now - due_at).total_seconds() * 1000)
    plan = plan_lease(document.id, data, instance=instance, max_attempts=config.max_attempts)
    if plan.kind is not Planned.LEASED or plan.event is None:
        fields = dict(plan.fields)
        holds = config.partitions.holds_failed
        if holds and isinstance(data.get(AGGREGATE_ID), str):
            fields[HELD] = True  # as a FAILED settle would: later runs wait for it too
        return Head(park=fields, lag_ms=lag_ms, reclaim=plan.reclaim)
    change = Change(document.reference, document.update_time, {})
    lease = Lease(plan.event, change, leased_at, plan.event.attempts + 1, one_write=True)
    return Head(lease=lease, lag_ms=lag_ms, reclaim=plan.reclaim)
