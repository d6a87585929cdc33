"""The events a job sends, in order, from where its cursor stands.

A `Position` is where a job is: the last event it passed, in the relay's delivery order
(`createdAt`, `sequence`, document name). `candidates` finds the partitions the events are
stored in (not today's `RELAY_PARTITIONS`: events keep the partition they were written with),
reads each from the position on, a page per query, and merges them into that one order, so
an aggregate whose events span two partitions (written before and after a change of the
count) still goes in commit order. It answers every document it passes (each with its
position, so a job that skips one by its filters does not read it again after a restart),
the selected ones with the event read from it.
"""

from __future__ import annotations

import datetime
import heapq
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from firestore_outbox.fields import CREATED_AT
from firestore_outbox.firestore.deadline import bounded_retry
from firestore_outbox.partitions import PARTITION, SEQUENCE
from firestore_outbox.redrive.selection import next_partition_query
from firestore_outbox.relay.events import OutboxEvent, PoisonEvent

if TYPE_CHECKING:
    from google.cloud.firestore import CollectionReference

    from firestore_outbox.redrive.selection import Selection

PAGE_SIZE = 200
MIN_PAGE = 20  # per partition when many are merged: each holds a page at a time


@dataclass(frozen=True)
class Position:
    """The last event a job passed: its `createdAt`, `sequence` and id."""

    created_at: datetime.datetime
    sequence: int
    event_id: str

    def to_document(self) -> dict[str, Any]:
        return {
            "createdAt": self.created_at,
            "sequence": self.sequence,
            "eventId": self.event_id,
        }

    @classmethod
    def from_document(cls, data: Mapping[str, Any] | None) -> Position | None:
        if not data or "partition" in data:
            # None, or a cursor that walks one partition after another (docs/upgrading.md,
            # 0.7): that job starts again from its beginning (at least once: none skipped).
            return None
        return cls(data["createdAt"], data["sequence"], data["eventId"])

    def key(self) -> tuple[Any, ...]:
        return (self.created_at, self.sequence, self.event_id)


@dataclass(frozen=True)
class Candidate:
    """A document the job passes: `event` when selected and deliverable, else `problem`
    (None: not selected by the filters it checks itself)."""

    position: Position
    event: OutboxEvent | None = None
    problem: str | None = None
    partition: Any = None  # as stored


def candidates(
    events: CollectionReference,
    selection: Selection,
    after: Position | None,
    *,
    page_size: int = PAGE_SIZE,
    timeout: float = 30.0,
) -> Iterator[Candidate]:
    """The documents of `selection` in every stored partition after `after`, in order."""
    partitions = stored_partitions(events, timeout=timeout)
    size = max(MIN_PAGE, page_size // max(1, len(partitions)))
    streams = [
        _partition(events, selection, p, after, page_size=size, timeout=timeout) for p in partitions
    ]
    yield from heapq.merge(*streams, key=lambda candidate: candidate.position.key())


def stored_partitions(events: CollectionReference, *, timeout: float) -> list[Any]:
    """The partitions events are stored in (one read each, and one more)."""
    found: list[Any] = []
    while True:
        query = next_partition_query(events, found[-1] if found else -1)
        page = query.get(timeout=timeout, retry=bounded_retry(timeout))
        if not page:
            return found
        found.append((page[0].to_dict() or {})[PARTITION])  # as stored: the next is above it


def _partition(
    events: CollectionReference,
    selection: Selection,
    partition: Any,
    last: Position | None,
    *,
    page_size: int,
    timeout: float,
) -> Iterator[Candidate]:
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
            last = Position(data[CREATED_AT], data[SEQUENCE], snapshot.id)
            yield _candidate(last, selection, data, partition)
        if len(page) < page_size:
            return


def _candidate(
    position: Position, selection: Selection, data: Mapping[str, Any], partition: Any
) -> Candidate:
    if not selection.matches(data):
        return Candidate(position, partition=partition)
    try:
        event = OutboxEvent.from_document(position.event_id, data)
    except PoisonEvent as exc:
        return Candidate(position, problem=str(exc), partition=partition)
    return Candidate(position, event, partition=partition)
