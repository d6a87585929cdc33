"""The events a job sends, in order, from where its cursor stands.

A `Position` is where a job is: the partition and the last event it passed, as the
partition's query orders it (`createdAt`, `sequence`, document name). `candidates` walks the
job's partitions from there, a page per query, and answers every document it passes (each
with its position, so a job that skips one by its filters does not read it again after a
restart), the selected ones with the event read from it.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from firestore_outbox.fields import CREATED_AT
from firestore_outbox.firestore.deadline import bounded_retry
from firestore_outbox.partitions import SEQUENCE
from firestore_outbox.relay.events import OutboxEvent, PoisonEvent

if TYPE_CHECKING:
    from google.cloud.firestore import CollectionReference

    from firestore_outbox.redrive.selection import Selection

PAGE_SIZE = 200


@dataclass(frozen=True)
class Position:
    """The last event a job passed: its partition, `createdAt`, `sequence` and id."""

    partition: int
    created_at: datetime.datetime
    sequence: int
    event_id: str

    def to_document(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "createdAt": self.created_at,
            "sequence": self.sequence,
            "eventId": self.event_id,
        }

    @classmethod
    def from_document(cls, data: Mapping[str, Any] | None) -> Position | None:
        if not data:
            return None
        return cls(data["partition"], data["createdAt"], data["sequence"], data["eventId"])


@dataclass(frozen=True)
class Candidate:
    """A document the job passes: `event` when selected and deliverable, else `problem`
    (None: not selected by the filters it checks itself)."""

    position: Position
    event: OutboxEvent | None = None
    problem: str | None = None


def candidates(
    events: CollectionReference,
    selection: Selection,
    partitions: int,
    after: Position | None,
    *,
    page_size: int = PAGE_SIZE,
    timeout: float = 30.0,
) -> Iterator[Candidate]:
    """The documents of `selection`'s partitions (of `partitions`) after `after`, in order."""
    for partition in selection.partitions(partitions):
        if after is not None and partition < after.partition:
            continue
        last = after if after is not None and after.partition == partition else None
        while True:
            query = selection.query(events, partition).limit(page_size)
            if last is not None:
                query = query.start_after(
                    {
                        CREATED_AT: last.created_at,
                        SEQUENCE: last.sequence,
                        "__name__": events.document(last.event_id),
                    }
                )
            page = list(query.stream(timeout=timeout, retry=bounded_retry(timeout)))
            for snapshot in page:
                data = snapshot.to_dict() or {}
                last = Position(partition, data[CREATED_AT], data[SEQUENCE], snapshot.id)
                yield _candidate(last, selection, data)
            if len(page) < page_size:
                break


def _candidate(position: Position, selection: Selection, data: Mapping[str, Any]) -> Candidate:
    if not selection.matches(data):
        return Candidate(position)
    try:
        return Candidate(position, OutboxEvent.from_document(position.event_id, data))
    except PoisonEvent as exc:
        return Candidate(position, problem=str(exc))
