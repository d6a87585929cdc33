"""What the relay writes at each step of an event's life, decided without any I/O.

    PENDING (due) ──lease──▶ PROCESSING ──2xx──────────────▶ PROCESSED
        ▲                      │  ├─retryable, attempts left─▶ PENDING, nextAttemptAt = backoff
        └──────released────────┤  └─rejected or exhausted────▶ FAILED, lastError
                               └─lease expired: taken back by the next relay (an attempt spent)

`attempts` counts an attempt when its lease is written, so a relay that dies mid-attempt has
still spent it, and a poison event that kills relays runs out instead of looping forever.
"""

from __future__ import annotations

import datetime
import enum
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from google.cloud.firestore import DELETE_FIELD, SERVER_TIMESTAMP, Increment

from firestore_outbox.fields import (
    ATTEMPTS,
    EXPIRE_AT,
    LAST_ERROR,
    NEXT_ATTEMPT_AT,
    PROCESSING_INSTANCE_ID,
    REQUEUED_AT,
    STATUS,
    UPDATED_AT,
    EventStatus,
)
from firestore_outbox.partitions import HELD
from firestore_outbox.publishers.base import Outcome, PublishResult, bounded_error
from firestore_outbox.relay.backoff import backoff_delay
from firestore_outbox.relay.events import OutboxEvent, PoisonEvent
from firestore_outbox.relay.lease import Settled

if TYPE_CHECKING:
    from firestore_outbox.relay.config import RelayConfig

# `processingInstanceId` comes from Function Compute's request id or the caller: bounded like
# `lastError`, so a long one cannot push a document over Firestore's 1 MiB.
MAX_INSTANCE_ID_LENGTH = 128
# A parked write must be small enough to pass where a larger one was refused.
MAX_PARKED_REASON_LENGTH = 200


class Planned(str, enum.Enum):
    """What a lease write does to a due event."""

    LEASED = "leased"
    POISONED = "poisoned"  # it can never be sent as written: FAILED
    EXHAUSTED = "exhausted"  # abandoned with no attempt left: FAILED


@dataclass(frozen=True)
class LeasePlan:
    kind: Planned
    event: OutboxEvent | None  # None when poisoned
    fields: dict[str, Any]  # what the lease write sets
    reclaim: bool  # the event was PROCESSING under an expired lease


def plan_lease(
    document_id: str, data: Mapping[str, Any], *, instance: str, max_attempts: int
) -> LeasePlan:
    """The write that takes a due event: a lease, or FAILED when it can never be sent."""
    reclaim = data.get(STATUS) == EventStatus.PROCESSING.value
    fields: dict[str, Any] = {UPDATED_AT: SERVER_TIMESTAMP}
    try:
        event = OutboxEvent.from_document(document_id, data)
    except PoisonEvent as exc:
        error = bounded_error(f"poison event: {exc}")
        fields.update(status=EventStatus.FAILED.value, lastError=error)
        return LeasePlan(Planned.POISONED, None, fields, reclaim)
    if reclaim:
        holder = bounded_instance_id(str(data.get(PROCESSING_INSTANCE_ID)))
        fields[LAST_ERROR] = f"lease by {holder} abandoned during attempt {event.attempts}"
        if event.attempts >= max_attempts:
            fields[STATUS] = EventStatus.FAILED.value
            return LeasePlan(Planned.EXHAUSTED, event, fields, reclaim)
    fields.update(
        status=EventStatus.PROCESSING.value,
        processingInstanceId=bounded_instance_id(instance),
        attempts=event.attempts + 1,
    )
    return LeasePlan(Planned.LEASED, event, fields, reclaim)


def settlement(
    attempt: int,
    result: PublishResult | None,
    config: RelayConfig,
    *,
    now: datetime.datetime,
    rng: random.Random | None = None,
) -> tuple[Settled, dict[str, Any]]:
    """How attempt number `attempt` ends: the settle (`Settled`) and the fields to write.
    `result` None means the event was never sent."""
    fields: dict[str, Any] = {UPDATED_AT: SERVER_TIMESTAMP}
    if result is None or result.outcome is Outcome.CHANNEL:
        # Handed back without spending the attempt: never sent, or the channel (not the
        # event) is broken. Due at once, on Firestore's clock.
        fields.update(
            status=EventStatus.PENDING.value,
            attempts=attempt - 1,
            nextAttemptAt=SERVER_TIMESTAMP,
        )
        if result is not None:
            fields[LAST_ERROR] = bounded_error(f"channel: {result.error or 'broken'}")
        return Settled.RELEASED, fields
    if result.outcome is Outcome.DELIVERED:
        fields.update(status=EventStatus.PROCESSED.value, processedAt=SERVER_TIMESTAMP)
        expire_at = expiry(now, config.retention_seconds)
        if expire_at is not None:
            fields[EXPIRE_AT] = expire_at
        return Settled.PROCESSED, fields
    error = result.error or result.outcome.value
    if result.outcome is Outcome.REJECTED or attempt >= config.max_attempts:
        reason = "rejected" if result.outcome is Outcome.REJECTED else "gave up"
        fields.update(
            status=EventStatus.FAILED.value,
            lastError=bounded_error(f"{reason} after attempt {attempt}: {error}"),
        )
        return Settled.FAILED, fields
    delay = backoff_delay(
        attempt,
        base=config.backoff_base_seconds,
        cap=config.backoff_max_seconds,
        retry_after=result.retry_after,
        rng=rng,
    )
    fields.update(
        status=EventStatus.PENDING.value,
        nextAttemptAt=now + datetime.timedelta(seconds=delay),
        lastError=bounded_error(f"attempt {attempt}: {error}"),
    )
    return Settled.RETRIED, fields


def parked(reason: str | None) -> dict[str, Any]:
    """FAILED because Firestore refused the write that would have moved the event on. The
    write only shrinks the document (a shorter status, a short `lastError` or none), so it
    passes where the refused one did not."""
    fields: dict[str, Any] = {STATUS: EventStatus.FAILED.value, UPDATED_AT: SERVER_TIMESTAMP}
    if reason is not None:
        text = bounded_error(f"write refused by Firestore: {reason}")
        if len(text) > MAX_PARKED_REASON_LENGTH:
            text = text[: MAX_PARKED_REASON_LENGTH - 3] + "..."
        fields[LAST_ERROR] = text
    return fields


def bounded_instance_id(instance: str) -> str:
    """An instance id short enough for every document: one line of at most 128 characters."""
    text = " ".join(instance.split())
    if len(text) > MAX_INSTANCE_ID_LENGTH:
        text = text[: MAX_INSTANCE_ID_LENGTH - 3] + "..."
    return text


def expiry(settled_at: datetime.datetime, retention_seconds: float) -> datetime.datetime | None:
    """When an event settled at `settled_at` may be deleted; None keeps it for ever."""
    if retention_seconds <= 0:
        return None
    return settled_at + datetime.timedelta(seconds=retention_seconds)


def requeue() -> dict[str, Any]:
    """What `outbox requeue` writes on a FAILED event: due now, with every attempt back.
    `lastError` stays, so the operator can still see why it had failed."""
    return {
        STATUS: EventStatus.PENDING.value,
        ATTEMPTS: 0,
        NEXT_ATTEMPT_AT: SERVER_TIMESTAMP,
        UPDATED_AT: SERVER_TIMESTAMP,
        REQUEUED_AT: SERVER_TIMESTAMP,
        "requeues": Increment(1),
        EXPIRE_AT: DELETE_FIELD,
        HELD: False,  # its aggregate's later events wait for it again, not for an operator
    }


def one_write_settlement(
    attempt: int,
    result: PublishResult | None,
    config: RelayConfig,
    *,
    instance: str,
    now: datetime.datetime,
    rng: random.Random | None = None,
) -> tuple[Settled, dict[str, Any]]:
    """`settlement()` for an event read under a partition lease, where no lease write came
    first: the settle itself counts the attempt and names the relay, and a FAILED event
    holds its aggregate when `RELAY_FAILED_HEAD=hold` (ordered delivery only)."""
    kind, fields = settlement(attempt, result, config, now=now, rng=rng)
    fields[PROCESSING_INSTANCE_ID] = bounded_instance_id(instance)
    if kind is not Settled.RELEASED:
        fields[ATTEMPTS] = attempt
    if kind is Settled.FAILED and config.partitions.holds_failed:
        fields[HELD] = True
    return kind, fields
