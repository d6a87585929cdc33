"""Open events without a usable partition, delivered by the partition they belong in with
no write of their own: healing happens in the settle.

An event written by another producer with the contract's fields only (or by a relay with
another `RELAY_PARTITIONS`, or before partitions existed) is invisible to the partition
query, and Firestore cannot query for a missing field. A run that sees one finds them the
way healing always did, open events in document-name order (single-field indexes serve it),
at most `scan_limit` documents, and keeps each under the partition its `aggregateId` hashes
to (`relay.healing.heal_change`), in delivery order:

    partition p's pages   e1 (t1)  e3 (t3)  e4 (t4) ...      (createdAt, sequence, name)
    found for p           u2 (t2)  u5 (t5)                    (createdAt, 0, name)
    what the drain gets   e1 u2 e3 e4 u5 ...                  merged as each page arrives

so an aggregate's events go in commit order whichever way they were written. Each one's
settle, the event's one write, also writes `partition`, `sequence` and (when missing)
`nextAttemptAt` (`relay.healing.heal_fields`), as a heal write of its own did before
(`scan.heal_unpartitioned`, still used for what a backlog's later counts find): one write
per event instead of two.
"""

from __future__ import annotations

import datetime
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from firestore_outbox.fields import CREATED_AT, STATUS
from firestore_outbox.firestore.cas import Change, WriteOutcome, Written
from firestore_outbox.partitions import PARTITION, SEQUENCE
from firestore_outbox.relay.healing import heal_change, needs_heal
from firestore_outbox.relay.read.scan import open_query, pages_by_name

if TYPE_CHECKING:
    from collections.abc import Iterable

    from firestore_outbox.firestore.raw import Found
    from firestore_outbox.relay.store import LeaseStore

_EARLIEST = datetime.datetime(1, 1, 1, tzinfo=datetime.timezone.utc)


def order_key(document: Found) -> tuple[datetime.datetime, int, str]:
    """Where `document` goes in its partition: the partition query's order, a missing
    `sequence` counting as 0 (what healing writes)."""
    created, sequence = document.get(CREATED_AT), document.get(SEQUENCE)
    return (
        created if isinstance(created, datetime.datetime) else _EARLIEST,
        sequence if isinstance(sequence, int) and not isinstance(sequence, bool) else 0,
        document.id,
    )


@dataclass
class Unhealed:
    """Events found without a usable partition (`found`, parked ones too), those to deliver
    per partition in delivery order; the ones parked instead (they could never be sent) and
    the parks Firestore refused."""

    waiting: dict[int, deque[Found]] = field(default_factory=dict)
    found: int = 0
    parked: int = 0
    refused: list[tuple[str, Written]] = field(default_factory=list)
    more: bool = False  # the scan stopped at its limit: there may be more of them

    def partitions(self) -> set[int]:
        """The partitions with events found for them still waiting."""
        return {p for p, waiting in self.waiting.items() if waiting}

    def merge(self, partition: int, page: Iterable[Found], *, last: bool) -> list[Found]:
        """`page` of `partition` (in delivery order) with the events found for it that go
        before its last event, or all of them when the partition has no more (`last`)."""
        waiting = self.waiting.get(partition)
        if not waiting:
            return list(page)
        merged: list[Found] = []
        for document in page:
            key = order_key(document)
            while waiting and order_key(waiting[0]) < key:
                merged.append(waiting.popleft())
            merged.append(document)
        if last:
            merged.extend(waiting)
            waiting.clear()
        return merged


# Documents a scan page reads. The scan comes before these events are delivered: on the
# emulator, 5,000 events took 3.7 s in pages of 250 and 1.1 s in pages of 1,000.
SCAN_PAGE = 1000


def find_unhealed(
    store: LeaseStore, partitions: int, *, scan_limit: int, page_size: int = SCAN_PAGE
) -> Unhealed:
    """Read at most `scan_limit` open events in document-name order and keep those without
    a usable partition under the partition they belong in; a poison one (it could never be
    sent) is parked at once, as healing did."""
    found: dict[int, list[Found]] = {}
    unhealed = Unhealed()
    scanned = 0
    for page in pages_by_name(store, open_query(store), scan_limit, page_size):
        scanned += len(page)
        parks: list[Change] = []
        for document in page:
            if not needs_heal(document.to_dict() or {}, partitions):
                continue
            change = heal_change(document, partitions)
            fields = change.fields or {}
            unhealed.found += 1
            if STATUS in fields:
                parks.append(change)
            else:
                found.setdefault(int(fields[PARTITION]), []).append(document)
        for change, written in zip(parks, store.write(parks), strict=True):
            unhealed.parked += written.applied
            if written.outcome is WriteOutcome.REFUSED:
                unhealed.refused.append((change.ref.id, written))
    unhealed.more = scanned >= scan_limit
    unhealed.waiting = {p: deque(sorted(docs, key=order_key)) for p, docs in found.items()}
    return unhealed
