"""The per-event drain (`RELAY_LEASES=event`): heal what the due query cannot see, then
read the due events (`relay.read.due`), lease them (`relay.claim.event_lease`) and hand each
lease to the publishing pool, at most two batches in flight."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from firestore_outbox.relay.claim.event_lease import lease_batch
from firestore_outbox.relay.config import RelayConfig
from firestore_outbox.relay.publish.attempts import Attempts
from firestore_outbox.relay.publish.pool import hand_to
from firestore_outbox.relay.read.due import look_for_due
from firestore_outbox.relay.read.unscheduled import find_unscheduled
from firestore_outbox.relay.summary import Count, StopReason

if TYPE_CHECKING:
    from firestore_outbox.firestore.raw import DueDocument
    from firestore_outbox.relay.pipeline import Pipeline
    from firestore_outbox.relay.store import LeaseStore


class Relay(Protocol):
    """What the per-event drain needs of `relay.run.relay.Relay`, which is built on this module."""

    config: RelayConfig

    @property
    def store(self) -> LeaseStore: ...

    def deliver(self, pipeline: Pipeline, snapshots: Sequence[DueDocument]) -> None: ...


_ABANDONED_CHECK_SECONDS = 10.0
# At most this many PENDING documents read per run to find unscheduled ones (see
# `firestore_outbox.relay.read.unscheduled`); only when the counts say there are any.
_UNSCHEDULED_SCAN_LIMIT = 1000


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


def deliver_batch(
    store: LeaseStore,
    attempts: Attempts,
    config: RelayConfig,
    pipeline: Pipeline,
    snapshots: Sequence[DueDocument],
) -> None:
    """Lease the events `snapshots` show and hand every lease to `attempts` in the pool: see
    `Relay.deliver()`."""
    if pipeline.breaker.open:
        return  # leasing now would only hand the events back: the channel is broken
    pipeline.tally[Count.BATCHES] += 1
    leases = lease_batch(store, snapshots, pipeline.instance, pipeline.tally, config)
    pipeline.in_flight.acquire(len(leases))
    for lease in leases:
        future = pipeline.pool.submit(attempts.publish, lease, pipeline)
        future.add_done_callback(hand_to(pipeline.settler, lease))
