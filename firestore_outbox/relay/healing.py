"""Healing: what an open event needs to be found by the partition queries (a usable
`partition`, a `sequence`, a `nextAttemptAt`), and the write that gives it them.

An event another producer wrote without those fields is healed wherever the relay meets it:
by the survey's scan (`relay.read.unhealed`), in its settle under a partition lease
(`relay.publish.head_sender`), or in its lease write under per-event leases
(`relay.claim.event_lease`); they all take the fields from here.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

from google.cloud.firestore import SERVER_TIMESTAMP

from firestore_outbox.fields import NEXT_ATTEMPT_AT
from firestore_outbox.firestore.cas import Change
from firestore_outbox.partitions import PARTITION, SEQUENCE, partition_of
from firestore_outbox.publishers.base import bounded_error
from firestore_outbox.relay.events import OutboxEvent, PoisonEvent
from firestore_outbox.relay.transitions import parked

if TYPE_CHECKING:
    from firestore_outbox.firestore.raw import Found


def needs_heal(data: dict[str, Any], partitions: int) -> bool:
    """Whether an open event's fields keep it out of the partition queries."""
    return not (_has_partition(data, partitions) and isinstance(data.get(SEQUENCE), int))


def needs_partition(data: dict[str, Any], partitions: int) -> bool:
    """Whether an event's stored `partition` is missing or not below `partitions`."""
    return not _has_partition(data, partitions)


def _has_partition(data: dict[str, Any], partitions: int) -> bool:
    stored = data.get(PARTITION)
    return isinstance(stored, int) and not isinstance(stored, bool) and 0 <= stored < partitions


def heal_change(document: Found, partitions: int) -> Change:
    """The write that heals an open event `needs_heal` says needs it: its partition (the
    one stored when usable, else its aggregate's), `sequence` and `nextAttemptAt`; a park
    as FAILED instead when it could never be sent."""
    data = document.to_dict() or {}
    try:
        event = OutboxEvent.from_document(document.id, data)
    except PoisonEvent as exc:  # it could never be sent: parked now, with its reason
        park = parked(None)
        park["lastError"] = bounded_error(f"poison event: {exc}")
        return Change(document.reference, document.update_time, park)
    stored = data.get(PARTITION)
    partition = stored if _has_partition(data, partitions) else None
    if partition is None:
        partition = partition_of(event.aggregate_id, partitions)
    return Change(document.reference, document.update_time, heal_fields(data, partition))


def heal_fields(data: dict[str, Any], partition: int) -> dict[str, Any]:
    """What healing writes on an event that now belongs to `partition`. Not `updatedAt`:
    healing is no state change, and a per-event lease is timed by it."""
    fields: dict[str, Any] = {PARTITION: partition}
    sequence = data.get(SEQUENCE)
    fields[SEQUENCE] = sequence if isinstance(sequence, int) else 0
    if not isinstance(data.get(NEXT_ATTEMPT_AT), datetime.datetime):
        fields[NEXT_ATTEMPT_AT] = SERVER_TIMESTAMP
    return fields
