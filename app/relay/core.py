"""`Relay`: lease due events in batches, publish them in parallel, settle each one.

One `run()` drains: it keeps leasing batches until no event is due or its time budget runs
out. Every event's life is `PENDING -> PROCESSING -> PROCESSED | PENDING (retry) | FAILED`,
and every arrow is a conditional write (see `app.relay.leases`).
"""

from __future__ import annotations

import datetime
import logging
import math
import random
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from google.api_core import exceptions as google_exceptions

from app.config import Settings
from app.logs import log_event
from app.relay.config import RelayConfig
from app.relay.events import rfc3339
from app.relay.factory import publisher_for
from app.relay.leases import Change, LeaseStore
from app.relay.publishers import (
    Delivery,
    Outcome,
    Publisher,
    PublishResult,
    bounded_error,
)
from app.relay.reads import DueDocument
from app.relay.settler import InFlight, Lease, Settler
from app.relay.transitions import plan_lease

if TYPE_CHECKING:
    from google.cloud.firestore import Client

logger = logging.getLogger(__name__)

_COUNTS = (
    "processed",
    "failed",
    "retried",
    "reclaimed",
    "released",
    "poisoned",
    "contended",
    "lostLeases",
    "leased",
    "batches",
    "lagMs",
)

_ABANDONED_CHECK_SECONDS = 10.0


class Relay:
    """Delivers due outbox events through `publisher` (by default HTTP to the downstream)."""

    def __init__(
        self,
        db: Client,
        settings: Settings,
        config: RelayConfig,
        *,
        publisher: Publisher | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.config = config
        self._store = LeaseStore(
            db, settings.outbox_collection, timeout=config.firestore_timeout_seconds
        )
        self._publisher = publisher or publisher_for(config)
        self._source = config.event_source or (
            f"//firestore.googleapis.com/projects/{db.project}/databases/{settings.database}"
            f"/documents/{settings.outbox_collection}"
        )
        self._rng = rng or random.Random()

    def run(
        self, *, time_budget: float | None = None, instance_id: str | None = None
    ) -> dict[str, Any]:
        """Drain due events for at most `time_budget` seconds (default and ceiling: the
        configured budget). Returns the summary; Firestore errors end the run with
        `status: error`, and whatever was leased and not settled is taken back later."""
        started = time.monotonic()
        budget = self.config.time_budget_seconds
        if time_budget is not None:
            budget = max(0.0, min(budget, time_budget))
        deadline = started + budget
        instance = instance_id or uuid.uuid4().hex
        tally: Counter[str] = Counter()
        summary: dict[str, Any] = {"status": "ok", "stoppedBy": "drained"}
        try:
            with self.pipeline(deadline, instance, tally) as pipeline:
                summary["stoppedBy"] = self._drain(pipeline)
        except google_exceptions.GoogleAPIError as exc:
            log_event(
                logger,
                logging.ERROR,
                "relay.firestore_error",
                f"relay {instance} stopped: Firestore error: {exc}",
                instanceId=instance,
                errorClass=type(exc).__name__,
            )
            summary.update(status="error", stoppedBy="error", error=f"Firestore: {exc}")
        summary.update(
            {name: tally[name] for name in _COUNTS},
            instanceId=instance,
            durationMs=round((time.monotonic() - started) * 1000),
        )
        return summary

    @contextmanager
    def pipeline(self, deadline: float, instance: str, tally: Counter[str]) -> Iterator[Pipeline]:
        """A publishing pool and a settler for `deliver()`. Leaving waits until everything
        delivered is settled, counts into `tally`, and raises a Firestore error the settler
        met."""
        in_flight = InFlight()
        settler = Settler(self._store, self.config, self._rng, in_flight.release)
        try:
            with settler, ThreadPoolExecutor(self.config.concurrency, "relay-publish") as pool:
                yield Pipeline(pool, settler, in_flight, deadline, instance, tally)
        finally:
            tally.update(settler.tally)

    def deliver(self, pipeline: Pipeline, snapshots: Sequence[DueDocument]) -> None:
        """Lease the events `snapshots` show (each only if unchanged since) and hand every
        lease to the pool; results go to the settler as they arrive."""
        pipeline.tally["batches"] += 1
        leases = self._lease(snapshots, pipeline.instance, pipeline.tally)
        pipeline.in_flight.acquire(len(leases))
        for lease in leases:
            future = pipeline.pool.submit(self._publish, lease, pipeline.deadline)
            future.add_done_callback(_hand_to(pipeline.settler, lease))

    @property
    def store(self) -> LeaseStore:
        return self._store

    def _drain(self, run: Pipeline) -> str:
        """Lease the next batch while the last one is still being published, with at most
        two batches in flight (which bounds memory whatever the backlog); each result goes
        to the settler as soon as it arrives. Returns why it stopped."""
        # Leases expire slowly, so looking for abandoned ones before every batch would only
        # add an empty query (billed as one read) per batch: look at the start, then every
        # few seconds, and again at once while the last look came back full.
        abandoned_checked = -math.inf
        while True:
            if run.deadline - time.monotonic() < self.config.attempt_seconds:
                return "budget"
            run.in_flight.wait_below(self.config.batch_size)
            if run.settler.error is not None:
                return "error"  # run() raises it when the settler closes
            look = time.monotonic() - abandoned_checked >= _ABANDONED_CHECK_SECONDS
            snapshots, abandoned = self._due(run.tally, look_for_abandoned=look)
            if look:
                full = abandoned == self.config.batch_size
                abandoned_checked = -math.inf if full else time.monotonic()
            if not snapshots:
                return "drained"
            self.deliver(run, snapshots)

    def _due(
        self, tally: Counter[str], *, look_for_abandoned: bool
    ) -> tuple[list[DueDocument], int]:
        """Due events, abandoned leases first; and how many were abandoned."""
        now = _utcnow()
        limit = self.config.batch_size
        lock = datetime.timedelta(seconds=self.config.lock_timeout_seconds)
        snapshots: list[DueDocument] = []
        if look_for_abandoned:
            snapshots += self._store.abandoned(now - lock, limit)
        abandoned = len(snapshots)
        if abandoned < limit:
            pending = self._store.pending(now, limit - abandoned)
            if pending:
                oldest = pending[0].get("nextAttemptAt")
                lag_ms = round((now - oldest).total_seconds() * 1000)
                tally["lagMs"] = max(tally["lagMs"], lag_ms)
            snapshots += pending
        return snapshots, abandoned

    def _lease(
        self, snapshots: Sequence[DueDocument], instance: str, tally: Counter[str]
    ) -> list[Lease]:
        """Take every due event with one conditional write each: a lease, or FAILED for a
        poison event or an abandoned one that has used up its attempts."""
        plans = [
            plan_lease(
                snapshot.id,
                snapshot.to_dict() or {},
                instance=instance,
                max_attempts=self.config.max_attempts,
            )
            for snapshot in snapshots
        ]
        changes = [
            Change(snapshot.reference, snapshot.update_time, plan.fields)
            for snapshot, plan in zip(snapshots, plans, strict=True)
        ]
        leased_at = time.monotonic()
        leases = []
        for change, plan, update_time in zip(
            changes, plans, self._store.write_if_unchanged(changes), strict=True
        ):
            if update_time is None:
                tally["contended"] += 1  # another relay changed it first: it is theirs
                continue
            tally["reclaimed"] += plan.reclaim
            if plan.event is None or plan.kind != "leased":
                tally["failed"] += 1
                tally["poisoned"] += plan.event is None
                log_event(
                    logger,
                    logging.WARNING,
                    "relay.event_failed",
                    f"event {change.ref.id} parked as FAILED: {plan.fields['lastError']}",
                    eventId=change.ref.id,
                    attempt=plan.event.attempts if plan.event else 0,
                    errorClass=plan.kind,
                    error=plan.fields["lastError"],
                    instanceId=instance,
                )
            else:
                tally["leased"] += 1
                settle_on = Change(change.ref, update_time, {})
                leases.append(Lease(plan.event, settle_on, leased_at, plan.event.attempts + 1))
        return leases

    def _publish(self, lease: Lease, deadline: float) -> PublishResult | None:
        """Publish under a lease that will outlive the publish; None when there is no time."""
        now = time.monotonic()
        lease_left = lease.leased_at + self.config.lock_timeout_seconds - now
        if min(deadline - now, lease_left) < self.config.attempt_seconds:
            return None
        event = lease.event
        delivery = Delivery(
            event_id=event.event_id,
            event_type=event.event_type,
            source=self._source,
            subject=event.aggregate_id,
            time=rfc3339(event.created_at),
            body=event.body,
            attempt=lease.attempt,
        )
        try:
            return self._publisher.publish(delivery)
        except Exception as exc:  # a publisher bug must not strand the event in PROCESSING
            log_event(
                logger,
                logging.ERROR,
                "relay.publisher_raised",
                f"publisher raised on event {event.event_id}",
                exc_info=True,
                eventId=event.event_id,
                attempt=lease.attempt,
                errorClass=type(exc).__name__,
            )
            return PublishResult(Outcome.RETRY, bounded_error(f"{type(exc).__name__}: {exc}"))


def _utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


@dataclass(frozen=True)
class Pipeline:
    """What `deliver()` works with: see `Relay.pipeline()`."""

    pool: ThreadPoolExecutor
    settler: Settler
    in_flight: InFlight
    deadline: float
    instance: str
    tally: Counter[str]


def _hand_to(settler: Settler, lease: Lease) -> Callable[[Future[PublishResult | None]], None]:
    def settle(published: Future[PublishResult | None]) -> None:
        settler.put(lease, published.result())  # _publish answers, never raises

    return settle
