"""The outbox document's field names and status values, in one place.

The contract's fields (docs/concepts/documents.md; users' data and other producers depend on
them, so they never change): `eventId` (= the document id), `eventType`, `aggregateType`,
`aggregateId` (the partition key), `payload`, `status`, `attempts`, `createdAt`, `updatedAt`
(the lease clock), `processingInstanceId`, `processedAt`, `lastError`.

Fields of this implementation's own (documented in docs/concepts/documents.md; the relay
heals a document written without them): `nextAttemptAt` (when a PENDING event is due),
`partition` and `sequence` (where and in what order it goes), `held` and `heldReleasedAt` (a
FAILED head event holding its aggregate, and its release), `requeuedAt`, `expireAt` (the TTL
field), and the creation trace context (`firestore_outbox.observability.trace_context`).

Code that reads or writes an outbox document spells a field through these names; an event's
life is `EventStatus`.
"""

from __future__ import annotations

from enum import Enum

__all__ = [
    "AGGREGATE_ID",
    "AGGREGATE_TYPE",
    "ATTEMPTS",
    "CREATED_AT",
    "EVENT_ID",
    "EVENT_TYPE",
    "EXPIRE_AT",
    "HELD",
    "HELD_RELEASED_AT",
    "LAST_ERROR",
    "NEXT_ATTEMPT_AT",
    "PARTITION",
    "PAYLOAD",
    "PROCESSED_AT",
    "PROCESSING_INSTANCE_ID",
    "REQUEUED_AT",
    "SEQUENCE",
    "STATUS",
    "UPDATED_AT",
    "EventStatus",
]

# The contract's fields.
EVENT_ID = "eventId"
EVENT_TYPE = "eventType"
AGGREGATE_TYPE = "aggregateType"
AGGREGATE_ID = "aggregateId"
PAYLOAD = "payload"
STATUS = "status"
ATTEMPTS = "attempts"
CREATED_AT = "createdAt"
UPDATED_AT = "updatedAt"
PROCESSING_INSTANCE_ID = "processingInstanceId"
PROCESSED_AT = "processedAt"
LAST_ERROR = "lastError"

# This implementation's own.
NEXT_ATTEMPT_AT = "nextAttemptAt"
PARTITION = "partition"
SEQUENCE = "sequence"
# True on a FAILED event that holds its aggregate's later events (RELAY_FAILED_HEAD=hold).
HELD = "held"
HELD_RELEASED_AT = "heldReleasedAt"
REQUEUED_AT = "requeuedAt"
# The TTL field: a Firestore TTL policy on it deletes a PROCESSED event after its retention.
EXPIRE_AT = "expireAt"


class EventStatus(str, Enum):
    """Life of an outbox event: PENDING -> PROCESSING -> PROCESSED, or FAILED."""

    PENDING = "PENDING"
    PROCESSING = "PROCESSING"
    PROCESSED = "PROCESSED"
    FAILED = "FAILED"
