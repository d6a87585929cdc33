"""`Relay`: lease due events in batches, publish them in parallel, settle each one.

One `run()` drains: it keeps leasing batches until no event is due or its time budget runs
out. Every event's life is `PENDING -> PROCESSING -> PROCESSED | PENDING (retry) | FAILED`,
and every arrow is a conditional write (see `app.relay.leases`).
"""

from __future__ import annotations

import datetime
import logging
import random
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from google.api_core import exceptions as google_exceptions

from app.config import Settings
from app.logs import log_event
from app.relay.config import RelayConfig
from app.relay.events import OutboxEvent, rfc3339
from app.relay.factory import publisher_for
from app.relay.leases import Change, LeaseStore
from app.relay.publishers import (
    Delivery,
    Outcome,
    Publisher,
    PublishResult,
    bounded_error,
    error_class,
)
from app.relay.transitions import plan_lease, settlement

if TYPE_CHECKING:
    from google.cloud.firestore import Client, DocumentSnapshot

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


@dataclass(frozen=True)
class _Lease:
    event: OutboxEvent
    change: Change  # the settle precondition: the update time the lease write produced
    leased_at: float  # monotonic time just before the lease was written
    attempt: int


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
            with ThreadPoolExecutor(self.config.concurrency, "relay-publish") as pool:
                while True:
                    if deadline - time.monotonic() < self.config.attempt_seconds:
                        summary["stoppedBy"] = "budget"
                        break
                    snapshots = self._due(tally)
                    if not snapshots:
                        break
                    tally["batches"] += 1
                    leases = self._lease(snapshots, instance, tally)
                    results = list(pool.map(lambda lease: self._publish(lease, deadline), leases))
                    self._settle(leases, results, tally)
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

    def _due(self, tally: Counter[str]) -> list[DocumentSnapshot[Any]]:
        now = _utcnow()
        limit = self.config.batch_size
        lock = datetime.timedelta(seconds=self.config.lock_timeout_seconds)
        snapshots = self._store.abandoned(now - lock, limit)
        if len(snapshots) < limit:
            pending = self._store.pending(now, limit - len(snapshots))
            if pending:
                oldest = pending[0].get("nextAttemptAt")
                lag_ms = round((now - oldest).total_seconds() * 1000)
                tally["lagMs"] = max(tally["lagMs"], lag_ms)
            snapshots += pending
        return snapshots

    def _lease(
        self, snapshots: list[DocumentSnapshot[Any]], instance: str, tally: Counter[str]
    ) -> list[_Lease]:
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
                leases.append(_Lease(plan.event, settle_on, leased_at, plan.event.attempts + 1))
        return leases

    def _publish(self, lease: _Lease, deadline: float) -> PublishResult | None:
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

    def _settle(
        self, leases: list[_Lease], results: list[PublishResult | None], tally: Counter[str]
    ) -> None:
        changes, kinds, now = [], [], _utcnow()
        for lease, result in zip(leases, results, strict=True):
            kind, fields = settlement(lease.attempt, result, self.config, now=now, rng=self._rng)
            if result is not None and result.outcome is not Outcome.DELIVERED:
                log_event(
                    logger,
                    logging.WARNING,
                    "relay.delivery_failed",
                    f"event {lease.event.event_id} attempt {lease.attempt}: "
                    f"{result.error or result.outcome.value}, {kind}",
                    eventId=lease.event.event_id,
                    attempt=lease.attempt,
                    errorClass=error_class(result),
                    error=result.error,
                    outcome=kind,
                )
            changes.append(Change(lease.change.ref, lease.change.expected_update_time, fields))
            kinds.append(kind)
        for lease, kind, update_time in zip(
            leases, kinds, self._store.write_if_unchanged(changes), strict=True
        ):
            if update_time is None:
                tally["lostLeases"] += 1
                log_event(
                    logger,
                    logging.WARNING,
                    "relay.lease_lost",
                    f"lost the lease on event {lease.event.event_id} before settling it as "
                    f"{kind}; left as it is",
                    eventId=lease.event.event_id,
                    attempt=lease.attempt,
                    outcome=kind,
                )
            else:
                tally[kind] += 1


def _utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)
