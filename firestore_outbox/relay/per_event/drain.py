"""Per-event leases (`RELAY_LEASES=event`): finding due events, leasing them, and the loop
that drains with them, on Firestore's clock."""

from __future__ import annotations

import datetime
import logging
import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from firestore_outbox.fields import LAST_ERROR, NEXT_ATTEMPT_AT
from firestore_outbox.firestore.cas import Change, WriteOutcome
from firestore_outbox.firestore.reads import counter, read_retrying
from firestore_outbox.observability.logs import log_event
from firestore_outbox.partitions import PARTITION, partition_of
from firestore_outbox.relay.config import RelayConfig
from firestore_outbox.relay.held_event import Lease
from firestore_outbox.relay.outcomes import count_refused
from firestore_outbox.relay.partitioned.scan import heal_fields, needs_heal, needs_partition
from firestore_outbox.relay.summary import Count, StopReason, Tally
from firestore_outbox.relay.transitions import LeasePlan, Planned, plan_lease
from firestore_outbox.relay.unscheduled import find_unscheduled

if TYPE_CHECKING:
    from collections.abc import Sequence

    from firestore_outbox.firestore.raw import DueDocument
    from firestore_outbox.relay.pipeline import Pipeline
    from firestore_outbox.relay.store import LeaseStore

logger = logging.getLogger("firestore_outbox.relay.core")


class Relay(Protocol):
    """What the per-event drain needs of `relay.core.Relay`, which is built on this module."""

    config: RelayConfig

    @property
    def store(self) -> LeaseStore: ...

    def deliver(self, pipeline: Pipeline, snapshots: Sequence[DueDocument]) -> None: ...


_ABANDONED_CHECK_SECONDS = 10.0
# At most this many PENDING documents read per run to find unscheduled ones (see
# `firestore_outbox.relay.unscheduled`); only when the counts say there are any.
_UNSCHEDULED_SCAN_LIMIT = 1000


def look_for_due(
    store: LeaseStore,
    config: RelayConfig,
    tally: Tally,
    *,
    look_for_abandoned: bool,
    until: float = math.inf,
) -> tuple[list[DueDocument], int]:
    """Due events, abandoned leases first; and how many were abandoned. "Now" is
    Firestore's, never ahead of it: a lease is taken back only once it has surely expired.
    A query that fails is sent again while the budget (`until`) lasts (`read_retrying`)."""
    now = store.clock.earliest()
    limit = config.batch_size
    lock = datetime.timedelta(seconds=config.lock_timeout_seconds)
    snapshots: list[DueDocument] = []
    if look_for_abandoned:
        snapshots += read_retrying(
            lambda: store.abandoned(now - lock, limit),
            until=until,
            retried=counter(tally, Count.READ_RETRIES),
        )
    abandoned = len(snapshots)
    if abandoned < limit:
        wanted = limit - abandoned
        pending = read_retrying(
            lambda: store.pending(now, wanted),
            until=until,
            retried=counter(tally, Count.READ_RETRIES),
        )
        if pending:
            oldest = pending[0].get(NEXT_ATTEMPT_AT)
            lag_ms = round((now - oldest).total_seconds() * 1000)
            tally[Count.LAG_MS] = max(tally[Count.LAG_MS], lag_ms)
        snapshots += pending
    return snapshots, abandoned


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


def drain_due(relay: Relay, run: Pipeline) -> StopReason:
    """Heal what the due query cannot see, then lease the next batch while the last one
    is still being published, with at most two batches in flight (which bounds memory
    whatever the backlog). Returns why it stopped."""
    # The counts also give the first reading of Firestore's clock.
    unscheduled = find_unscheduled(relay.store, scan_limit=_UNSCHEDULED_SCAN_LIMIT)
    run.tally[Count.UNSCHEDULED] += unscheduled.count
    for start in range(0, len(unscheduled.found), relay.config.batch_size):
        run.in_flight.wait_below(relay.config.batch_size)
        relay.deliver(run, unscheduled.found[start : start + relay.config.batch_size])
    # Leases expire slowly, so looking for abandoned ones before every batch would only
    # add an empty query (billed as one read) per batch: look at the start, then every
    # few seconds, and again at once while the last look came back full.
    abandoned_checked = -math.inf
    while True:
        if run.deadline - time.monotonic() < relay.config.attempt_seconds:
            return StopReason.BUDGET
        run.in_flight.wait_below(relay.config.batch_size)
        if run.breaker.open:
            return StopReason.CHANNEL
        if run.settler.error is not None:
            return StopReason.ERROR  # run() raises it when the settler closes
        look = time.monotonic() - abandoned_checked >= _ABANDONED_CHECK_SECONDS
        snapshots, abandoned = look_for_due(
            relay.store, relay.config, run.tally, look_for_abandoned=look, until=run.deadline
        )
        if look:
            full = abandoned == relay.config.batch_size
            abandoned_checked = -math.inf if full else time.monotonic()
        if not snapshots:
            return StopReason.DRAINED
        relay.deliver(run, snapshots)


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
