"""Finding due events and leasing them: the relay's first two steps, on Firestore's clock."""

from __future__ import annotations

import datetime
import logging
import time
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from app.cas import Change, WriteOutcome
from app.logs import log_event
from app.relay.config import RelayConfig
from app.relay.outcomes import count_refused
from app.relay.settler import Lease
from app.relay.transitions import plan_lease

if TYPE_CHECKING:
    from app.firestore_raw import DueDocument
    from app.relay.leases import LeaseStore

logger = logging.getLogger("app.relay.core")


def look_for_due(
    store: LeaseStore, config: RelayConfig, tally: Counter[str], *, look_for_abandoned: bool
) -> tuple[list[DueDocument], int]:
    """Due events, abandoned leases first; and how many were abandoned. "Now" is
    Firestore's, never ahead of it: a lease is taken back only once it has surely expired."""
    now = store.clock.earliest()
    limit = config.batch_size
    lock = datetime.timedelta(seconds=config.lock_timeout_seconds)
    snapshots: list[DueDocument] = []
    if look_for_abandoned:
        snapshots += store.abandoned(now - lock, limit)
    abandoned = len(snapshots)
    if abandoned < limit:
        pending = store.pending(now, limit - abandoned)
        if pending:
            oldest = pending[0].get("nextAttemptAt")
            lag_ms = round((now - oldest).total_seconds() * 1000)
            tally["lagMs"] = max(tally["lagMs"], lag_ms)
        snapshots += pending
    return snapshots, abandoned


def lease_batch(
    store: LeaseStore,
    snapshots: Sequence[DueDocument],
    instance: str,
    tally: Counter[str],
    config: RelayConfig,
) -> list[Lease]:
    """Take every due event with one conditional write each: a lease, or FAILED for a
    poison event or an abandoned one that has used up its attempts. A write Firestore
    refuses parks only its own event; a lost race leaves the event to the relay that won."""
    plans = [
        plan_lease(
            snapshot.id,
            snapshot.to_dict() or {},
            instance=instance,
            max_attempts=config.max_attempts,
        )
        for snapshot in snapshots
    ]
    changes = [
        Change(snapshot.reference, snapshot.update_time, plan.fields)
        for snapshot, plan in zip(snapshots, plans, strict=True)
    ]
    leased_at = time.monotonic()
    leases = []
    for change, plan, written in zip(changes, plans, store.write(changes), strict=True):
        event_id = change.ref.id
        attempt = plan.event.attempts if plan.event else 0
        if written.outcome is WriteOutcome.LOST or written.transient:
            tally["contended"] += 1  # another relay changed it first: it is theirs
            continue
        if written.outcome is WriteOutcome.REFUSED:
            count_refused(tally, event_id, attempt, written, "lease")
            continue
        tally["reclaimed"] += plan.reclaim
        if plan.event is None or plan.kind != "leased":
            tally["failed"] += 1
            tally["poisoned"] += plan.event is None
            log_event(
                logger,
                logging.WARNING,
                "relay.event_failed",
                f"event {event_id} parked as FAILED: {plan.fields['lastError']}",
                eventId=event_id,
                attempt=attempt,
                errorClass=plan.kind,
                error=plan.fields["lastError"],
                instanceId=instance,
            )
        else:
            assert written.update_time is not None
            tally["leased"] += 1
            settle_on = Change(change.ref, written.update_time, {})
            leases.append(Lease(plan.event, settle_on, leased_at, plan.event.attempts + 1))
    return leases
