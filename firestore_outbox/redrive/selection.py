"""`Selection`: which outbox events a re-drive job sends; checked when made, stored in the
job document, and turned into one query per stored partition.

Events keep the partition they were written with, whatever `RELAY_PARTITIONS` says today, so
the partitions walked are the ones stored (`next_partition_query`: the single-field index on
`partition`, one read per partition), not today's. Each partition's query leads with
`partition`, like the relay's own (`relay.read.scan`), so the composite index
`partition, status, createdAt, sequence` that the relay already needs serves it; an aggregate
id adds `aggregateId`, else a single event type adds `eventType` (their indexes are in
`firestore.indexes.json`). Several event types and the aggregate type are checked on each
document read. Every query orders by the relay's delivery order, `(createdAt, sequence,
document name)`: every aggregate's events in commit order.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from google.cloud.firestore import FieldFilter

from firestore_outbox.errors import InvalidInput
from firestore_outbox.fields import (
    AGGREGATE_ID,
    AGGREGATE_TYPE,
    CREATED_AT,
    EVENT_TYPE,
    STATUS,
    EventStatus,
)
from firestore_outbox.partitions import PARTITION, SEQUENCE, partition_of

if TYPE_CHECKING:
    from google.cloud.firestore import CollectionReference, Query

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_AGO = re.compile(r"^(\d+(?:\.\d+)?)([smhd])$")
STATUSES = tuple(status.value for status in EventStatus)
DELIVERED = (EventStatus.PROCESSED.value,)
MAX_TEXT = 1500  # Firestore indexes a string's first 1,500 bytes


@dataclass(frozen=True)
class Selection:
    """Events created in `[since, until)` (either end open when None), of one of
    `event_types` (any when empty), of `aggregate_type` and `aggregate_id` (when given), in
    one of `statuses` (default: delivered, `PROCESSED`). `InvalidInput` names the field that
    is wrong."""

    since: datetime.datetime | None = None
    until: datetime.datetime | None = None
    event_types: tuple[str, ...] = ()
    aggregate_type: str | None = None
    aggregate_id: str | None = None
    statuses: tuple[str, ...] = DELIVERED

    def __post_init__(self) -> None:
        for name, moment in (("since", self.since), ("until", self.until)):
            if moment is not None and (
                not isinstance(moment, datetime.datetime) or moment.tzinfo is None
            ):
                raise InvalidInput(f"{name} must be a timestamp with a time zone")
        if self.since and self.until and not self.since < self.until:
            raise InvalidInput("since must be before until")
        if not self.statuses:
            raise InvalidInput(f"status must name at least one of {', '.join(STATUSES)}")
        for status in self.statuses:
            if status not in STATUSES:
                raise InvalidInput(f"status must be one of {', '.join(STATUSES)}, got {status!r}")
        for name, values in (
            ("event type", self.event_types),
            ("aggregate type", (self.aggregate_type,) if self.aggregate_type is not None else ()),
            ("aggregate id", (self.aggregate_id,) if self.aggregate_id is not None else ()),
        ):
            for value in values:
                if not isinstance(value, str) or not value.strip() or len(value) > MAX_TEXT:
                    raise InvalidInput(f"{name} must be a non-empty string of at most {MAX_TEXT}")

    def query(self, events: CollectionReference, partition: Any) -> Query:
        """Partition `partition`'s candidates in delivery order (`matches` decides each)."""
        query = events.where(filter=FieldFilter(PARTITION, "==", partition))
        if self.aggregate_id is not None:
            query = query.where(filter=FieldFilter(AGGREGATE_ID, "==", self.aggregate_id))
        elif len(self.event_types) == 1:
            query = query.where(filter=FieldFilter(EVENT_TYPE, "==", self.event_types[0]))
        query = query.where(filter=FieldFilter(STATUS, "in", list(self.statuses)))
        if self.since is not None:
            query = query.where(filter=FieldFilter(CREATED_AT, ">=", self.since))
        if self.until is not None:
            query = query.where(filter=FieldFilter(CREATED_AT, "<", self.until))
        return query.order_by(CREATED_AT).order_by(SEQUENCE).order_by("__name__")

    def matches(self, data: Mapping[str, Any]) -> bool:
        """Whether a document the query found is selected (what the query left to it)."""
        if self.event_types and data.get(EVENT_TYPE) not in self.event_types:
            return False
        if self.aggregate_type is not None and data.get(AGGREGATE_TYPE) != self.aggregate_type:
            return False
        return self.aggregate_id is None or data.get(AGGREGATE_ID) == self.aggregate_id

    def to_document(self) -> dict[str, Any]:
        """The job document's `filter` map."""
        return {
            "since": self.since,
            "until": self.until,
            "eventTypes": list(self.event_types),
            "aggregateType": self.aggregate_type,
            "aggregateId": self.aggregate_id,
            "statuses": list(self.statuses),
        }

    @classmethod
    def from_document(cls, data: Mapping[str, Any]) -> Selection:
        return cls(
            since=data.get("since"),
            until=data.get("until"),
            event_types=tuple(data.get("eventTypes") or ()),
            aggregate_type=data.get("aggregateType"),
            aggregate_id=data.get("aggregateId"),
            statuses=tuple(data.get("statuses") or DELIVERED),
        )

    def describe(self) -> str:
        """One line for a listing: the filters that are set."""
        parts = [
            f"{label} {value}"
            for label, value in (
                ("since", self.since and self.since.isoformat()),
                ("until", self.until and self.until.isoformat()),
                ("type", ",".join(self.event_types)),
                ("aggregateType", self.aggregate_type),
                ("aggregateId", self.aggregate_id),
            )
            if value
        ]
        return " ".join([*parts, "status " + ",".join(self.statuses)])


def next_partition_query(events: CollectionReference, after: Any) -> Query:
    """The lowest stored partition above `after` (one document, by the single-field index on
    `partition`): the stored partitions, whatever today's count is, one read each."""
    above = FieldFilter(PARTITION, ">", after)
    return events.where(filter=above).order_by(PARTITION).limit(1)


def written_elsewhere(aggregate_id: str, partition: Any, count: int) -> bool:
    """Whether an event's stored `partition` is not the one `count` partitions give its
    aggregate today (it was written under another `RELAY_PARTITIONS`)."""
    return bool(partition != partition_of(aggregate_id, count))


def parse_moment(name: str, text: str | None, now: datetime.datetime) -> datetime.datetime | None:
    """`text` as a moment: RFC 3339 with a zone (`2026-11-28T09:00:00Z`), or a time back
    from `now` (`90s`, `15m`, `36h`, `7d`); None when blank. `InvalidInput` names `name`."""
    if text is None or not text.strip():
        return None
    text = text.strip()
    ago = _AGO.match(text.lower())
    if ago:
        seconds = float(ago.group(1)) * _UNITS[ago.group(2)]
        if seconds > 100 * 366 * 86400:
            raise InvalidInput(f"{name} must be at most 100 years back")
        return now - datetime.timedelta(seconds=seconds)
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInput(f"{name} must be RFC 3339 (2026-11-28T09:00:00Z) or 36h") from None
    if moment.tzinfo is None:
        raise InvalidInput(f"{name} needs a time zone (Z or +08:00)")
    return moment
