"""`HeadSender`: the partitioned relay's publishing side. It takes the heads of the
aggregates read (`firestore_outbox.relay.aggregates`), decides for each whether it goes
now (`take_head`: a lease to publish it under, with no write, since holding the partition is
the lease; or a reason it does not), hands it to the publishing pool and, once published,
lets the aggregate's next event go and the settler settle this one."""

from __future__ import annotations

import dataclasses
import datetime
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from firestore_outbox.fields import (
    AGGREGATE_ID,
    LAST_ERROR,
    NEXT_ATTEMPT_AT,
    STATUS,
    UPDATED_AT,
    EventStatus,
)
from firestore_outbox.firestore.cas import Change
from firestore_outbox.observability.logs import log_event
from firestore_outbox.partitions import HELD
from firestore_outbox.relay.aggregates import Aggregates, goes_on
from firestore_outbox.relay.healing import heal_fields, needs_heal
from firestore_outbox.relay.lease import Lease
from firestore_outbox.relay.partition_settings import FailedHead
from firestore_outbox.relay.publish.pool import outcome_of
from firestore_outbox.relay.summary import Count
from firestore_outbox.relay.transitions import Planned, plan_lease

if TYPE_CHECKING:
    from firestore_outbox.firestore.raw import Found
    from firestore_outbox.relay.claim.partition_leases import ClaimedPartition
    from firestore_outbox.relay.config import RelayConfig
    from firestore_outbox.relay.pipeline import Pipeline
    from firestore_outbox.relay.publish.attempts import Attempts
    from firestore_outbox.relay.store import LeaseStore

logger = logging.getLogger("firestore_outbox.relay.core")

_WAKE_SECONDS = 0.2


class HeadSender:
    """Publishes aggregate heads for a `PartitionDrain`; it stops on `Pipeline.stop_reason`
    (`stop` set: follow mode is stopping)."""

    def __init__(
        self,
        store: LeaseStore,
        attempts: Attempts,
        config: RelayConfig,
        aggregates: Aggregates,
        lease_seconds: float,
        stop: threading.Event,
    ) -> None:
        self._store = store
        self._attempts = attempts
        self._config = config
        self.aggregates = aggregates
        self._lease_seconds = lease_seconds
        self._stop = stop

    def send(self, run: Pipeline, claimed: dict[int, ClaimedPartition]) -> tuple[bool, bool]:
        """Publish the heads of the queued aggregates there is room for (none once the run
        stops); whether the run stops, and whether any head went."""
        aggregates = self.aggregates
        stopping = run.stop_reason(self._stop, self._config.attempt_seconds) is not None
        # Published and not settled counts: a settle write that does not come back holds
        # publishing at one batch, as leasing does with event leases (`InFlight`).
        room = self._config.batch_size - aggregates.unsettled
        heads = [] if stopping else aggregates.heads(room)
        for key, partition, document in heads:
            lease = self._lease(run, key, claimed, partition, document)
            if lease is None:
                aggregates.abandon(document.id)
                continue
            run.tally[Count.LEASED] += 1
            run.in_flight.acquire(1)
            future = run.pool.submit(self._attempts.publish, lease, run)
            future.add_done_callback(self._published(run, key, lease))
        return stopping, bool(heads)

    def wait_out(self) -> None:
        """Wait until no publish is in flight (the run stops: nothing new goes out)."""
        with self.aggregates.changed:
            while self.aggregates.in_flight:
                self.aggregates.changed.wait(_WAKE_SECONDS)

    def _published(self, run: Pipeline, key: str, lease: Lease) -> Callable[[Future[Any]], None]:
        """The aggregate's next event may go as soon as this one was delivered (in order:
        its settle follows, and a settle that does not land only means it is delivered
        again, which the consumer deduplicates); then the result goes to the settler."""
        config = self._config

        def done(published: Future[Any]) -> None:
            result = outcome_of(published, lease)
            self.aggregates.finish(key, go_on=goes_on(result, lease.attempt, config))
            run.settler.put(lease, result)

        return done

    def _lease(
        self,
        run: Pipeline,
        key: str,
        claimed: dict[int, ClaimedPartition],
        partition: int,
        document: Found,
    ) -> Lease | None:
        """The lease to publish `document` under, or None (the aggregate is then finished:
        not due yet, still under a per-event lease, or parked as FAILED here)."""
        head = take_head(
            document,
            now=self._store.clock.earliest(),
            config=self._config,
            instance=run.instance,
            leased_at=claimed[partition].valid_until - self._lease_seconds,
        )
        run.tally[Count.RECLAIMED] += head.reclaim  # a per-event lease that expired
        if head.lag_ms is not None:
            run.tally[Count.LAG_MS] = max(run.tally[Count.LAG_MS], head.lag_ms)
        if head.park is not None:
            self._park(run, document, head.park)
            self.aggregates.finish(
                key, go_on=self._config.partitions.failed_head is FailedHead.SKIP
            )
        elif head.lease is None:
            self.aggregates.finish(key, go_on=False)
        if head.lease is None:
            return None
        lease = dataclasses.replace(head.lease, expires=_expiry(claimed, claimed[partition]))
        data = document.to_dict() or {}
        if needs_heal(data, self._config.partitions.count):  # found by `unhealed`: its settle heals
            run.tally[Count.HEALED] += 1
            change = lease.change
            healing = Change(change.ref, change.expected_update_time, heal_fields(data, partition))
            lease = dataclasses.replace(lease, change=healing)
        return lease

    def _park(self, run: Pipeline, document: Found, fields: dict[str, object]) -> None:
        [written] = self._store.write([Change(document.reference, document.update_time, fields)])
        if written.applied:
            run.tally[Count.FAILED] += 1
            run.tally[Count.POISONED] += 1
            log_event(
                logger,
                logging.WARNING,
                "relay.event_failed",
                f"event {document.id} parked as FAILED: {fields.get('lastError')}",
                eventId=document.id,
                error=fields.get(LAST_ERROR),
                instanceId=run.instance,
            )


def _expiry(claimed: dict[int, ClaimedPartition], taken: ClaimedPartition) -> Callable[[], float]:
    """Until when the partition of a head taken under `taken` is held, asked when its
    publish starts: the drain renews `claimed` meanwhile (a head waiting for a publishing
    thread was refused once the lease it was taken under ran short, though renewed). A
    partition no longer held (lost, released) keeps the lease it was taken under."""

    def expires() -> float:
        return claimed.get(taken.partition, taken).valid_until

    return expires


@dataclass(frozen=True)
class Head:
    """`lease` to publish under; else `park` (fields that make it FAILED: it can never be
    sent) or neither (not due yet, or still under a per-event lease). `lag_ms`: how long it
    has been due; `reclaim`: it was under a per-event lease that expired."""

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
    was written, which bounds the publish (`firestore_outbox.relay.publish.attempts`)."""
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
