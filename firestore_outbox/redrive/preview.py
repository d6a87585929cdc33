"""`preview`: what a job would send (a dry run), read and counted, nothing written."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from firestore_outbox.redrive.reading import candidates
from firestore_outbox.redrive.selection import written_elsewhere

if TYPE_CHECKING:
    from google.cloud.firestore import CollectionReference

    from firestore_outbox.redrive.selection import Selection
    from firestore_outbox.relay.events import OutboxEvent


@dataclass
class Preview:
    """`count` events would be sent: the first and last by creation time, how many of each
    type; `unsendable` selected documents that are not events (passed by a job);
    `elsewhere` of the `count`, those stored in another partition than today's
    `RELAY_PARTITIONS` gives them (written under another count: selected all the same)."""

    count: int = 0
    first: OutboxEvent | None = None
    last: OutboxEvent | None = None
    per_type: Counter[str] = field(default_factory=Counter)
    unsendable: int = 0
    elsewhere: int = 0


def preview(
    events: CollectionReference, selection: Selection, partitions: int, *, timeout: float = 30.0
) -> Preview:
    """Read what `selection` selects in every stored partition; write nothing. `partitions`
    is today's count, to tell the events written under another."""
    found = Preview()
    for candidate in candidates(events, selection, None, timeout=timeout):
        event = candidate.event
        if event is None:
            found.unsendable += candidate.problem is not None
            continue
        found.count += 1
        found.elsewhere += written_elsewhere(event.aggregate_id, candidate.partition, partitions)
        found.per_type[event.event_type] += 1
        if found.first is None or event.created_at < found.first.created_at:
            found.first = event
        if found.last is None or event.created_at >= found.last.created_at:
            found.last = event
    return found
