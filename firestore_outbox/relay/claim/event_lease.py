"""A per-event lease (`RELAY_LEASES=event`): one conditional write per due event takes it
(or parks a poison event or one out of attempts as FAILED), healing its partition fields in
the same write."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from firestore_outbox.fields import LAST_ERROR
from firestore_outbox.firestore.cas import Change, WriteOutcome
from firestore_outbox.observability.logs import log_event
from firestore_outbox.partitions import PARTITION, partition_of
from firestore_outbox.relay.healing import heal_fields, needs_heal, needs_partition
from firestore_outbox.relay.lease import Lease
from firestore_outbox.relay.outcomes import count_refused
from firestore_outbox.relay.summary import Count, Tally
from firestore_outbox.relay.transitions import LeasePlan, Planned, plan_lease

if TYPE_CHECKING:
    from firestore_outbox.firestore.raw import DueDocument
    from firestore_outbox.relay.config import RelayConfig
    from firestore_outbox.relay.store import LeaseStore

logger = logging.getLogger("firestore_outbox.relay.core")


def lease_batch(
    store: LeaseStore,
    snapshots: Sequence[DueDocument],
    instance: str,
    tally: Tally,
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
        Change(snapshot.reference, snapshot.update_time, _healing(snapshot, plan, config))
        for snapshot, plan in zip(snapshots, plans, strict=True)
    ]
    leased_at = time.monotonic()
    leases = []
    for change, plan, written in zip(changes, plans, store.write(changes), strict=True):
        event_id = change.ref.id
        attempt = plan.event.attempts if plan.event else 0
        if written.outcome is WriteOutcome.LOST or written.transient:
            tally[Count.CONTENDED] += 1  # another relay changed it first: it is theirs
            continue
        if written.outcome is WriteOutcome.REFUSED:
            count_refused(tally, event_id, attempt, written, "lease")
            continue
        tally[Count.RECLAIMED] += plan.reclaim
        if plan.event is None or plan.kind is not Planned.LEASED:
            tally[Count.FAILED] += 1
            tally[Count.POISONED] += plan.event is None
            log_event(
                logger,
                logging.WARNING,
                "relay.event_failed",
                f"event {event_id} parked as FAILED: {plan.fields['lastError']}",
                eventId=event_id,
                attempt=attempt,
                errorClass=plan.kind,
                error=plan.fields[LAST_ERROR],
                instanceId=instance,
            )
        else:
            assert written.update_time is not None
            tally[Count.LEASED] += 1
            settle_on = Change(change.ref, written.update_time, {})
            leases.append(Lease(plan.event, settle_on, leased_at, plan.event.attempts + 1))
    return leases


def _healing(snapshot: DueDocument, plan: LeasePlan, config: RelayConfig) -> dict[str, Any]:
    """A lease's fields, and on an event written without a usable partition (another
    producer's) its partition and `sequence` too, in the same write: the partition-led
    queries of the operations commands (and a switch back to partition leases) see it."""
    data = snapshot.to_dict() or {}
    if plan.kind != "leased" or plan.event is None or not needs_heal(data, config.partitions.count):
        return dict(plan.fields)
    stored = data.get(PARTITION)
    partition = stored if not needs_partition(data, config.partitions.count) else None
    if partition is None:
        partition = partition_of(plan.event.aggregate_id, config.partitions.count)
    return {**heal_fields(data, partition), **plan.fields}
