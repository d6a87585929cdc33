"""What an inbox record holds, what each step writes, and what a delivery comes to."""

from __future__ import annotations

import datetime
import enum
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from google.cloud import firestore

from firestore_outbox.errors import InvalidInput, OutboxError
from firestore_outbox.publishers.base import bounded_error
from firestore_outbox.signing import REPLAY_ATTRIBUTE

if TYPE_CHECKING:
    from google.cloud.firestore import DocumentSnapshot

T = TypeVar("T")
# What an inbox does with a re-drive's delivery: "skip" (the default) dedupes it like any
# other, "again" applies it once more per job (`event_key`).
REPLAYS = ("skip", "again")


class InboxStatus(str, enum.Enum):
    """An inbox record's state: PROCESSING while a delivery runs the effect, SUCCEEDED once it
    happened, FAILED after a failed run (retried), PARKED once the attempts are spent."""

    PROCESSING = "PROCESSING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    PARKED = "PARKED"


class Verdict(str, enum.Enum):
    """What one delivery came to."""

    APPLIED = "applied"  # the effect ran now
    DUPLICATE = "duplicate"  # it had already succeeded: nothing ran
    IN_PROGRESS = "in_progress"  # another delivery holds a live lease: try again later
    PARKED = "parked"  # it failed too often: nothing runs until an operator steps in


@dataclass(frozen=True)
class Result(Generic[T]):
    verdict: Verdict
    value: T | None = None  # the effect's return value when APPLIED
    attempts: int = 0  # effect runs started for this event, this one included
    retry_after: float | None = None  # seconds left on the lease when IN_PROGRESS


class LeaseLost(OutboxError):
    """The effect ran, but its lease expired and another delivery took the event over."""


@dataclass(frozen=True)
class Records:
    """Builds the fields each step writes, for one consumer's policy."""

    consumer: str
    lease: datetime.timedelta
    max_attempts: int
    retention: datetime.timedelta

    def blocked(self, snapshot: DocumentSnapshot[Any]) -> Result[Any] | None:
        """The verdict when this delivery must not run the effect, else None."""
        if not snapshot.exists:
            return None
        status, attempts = snapshot.get("status"), int(snapshot.get("attempts"))
        if status == InboxStatus.SUCCEEDED.value:
            return Result(Verdict.DUPLICATE, attempts=attempts)
        if status == InboxStatus.PARKED.value:
            return Result(Verdict.PARKED, attempts=attempts)
        if status == InboxStatus.PROCESSING.value:
            held = snapshot.read_time - snapshot.get("leasedAt")  # both on Firestore's clock
            if held < self.lease:
                left = (self.lease - held).total_seconds()
                return Result(Verdict.IN_PROGRESS, attempts=attempts, retry_after=left)
        return None

    def stuck(self, snapshot: DocumentSnapshot[Any]) -> bool:
        """PROCESSING and not `blocked`: its consumer died and the lease expired, so this
        delivery heals it (takes it over, or parks it at the bound)."""
        return snapshot.exists and snapshot.get("status") == InboxStatus.PROCESSING.value

    def next_attempt(self, snapshot: DocumentSnapshot[Any]) -> int:
        return int(snapshot.get("attempts")) + 1 if snapshot.exists else 1

    def leased(self, source: str, event_id: str, attempts: int, *, new: bool) -> dict[str, Any]:
        """A lease for attempt `attempts`; `new` for a record that does not exist yet."""
        fields: dict[str, Any] = {
            "consumer": self.consumer,
            "source": source,
            "eventId": event_id,
            "status": InboxStatus.PROCESSING.value,
            "attempts": attempts,
            "holder": uuid.uuid4().hex,
            "leasedAt": firestore.SERVER_TIMESTAMP,
            "updatedAt": firestore.SERVER_TIMESTAMP,
            "expireAt": _utcnow() + self.retention,
        }
        if new:
            fields.update(createdAt=firestore.SERVER_TIMESTAMP, lastError=None, completedAt=None)
        return fields

    def failed(self, attempts: int, exc: Exception) -> dict[str, Any]:
        """FAILED, or PARKED once `attempts` reaches the bound."""
        parked = attempts >= self.max_attempts
        fields = self.settled(InboxStatus.PARKED if parked else InboxStatus.FAILED)
        fields["lastError"] = bounded_error(f"attempt {attempts}: {type(exc).__name__}: {exc}")
        return fields

    def abandoned(self, snapshot: DocumentSnapshot[Any]) -> dict[str, Any]:
        """PARKED for a record whose last allowed attempt died or failed."""
        reason = snapshot.get("lastError") if snapshot.get("status") == "FAILED" else None
        attempts = snapshot.get("attempts")
        return {
            **self.settled(InboxStatus.PARKED),
            "lastError": reason or f"abandoned during attempt {attempts} (lease expired)",
        }

    def settled(self, status: InboxStatus) -> dict[str, Any]:
        fields: dict[str, Any] = {
            "status": status.value,
            "updatedAt": firestore.SERVER_TIMESTAMP,
            "expireAt": _utcnow() + self.retention,
        }
        if status is not InboxStatus.FAILED:
            fields["completedAt"] = firestore.SERVER_TIMESTAMP
        return fields


def event_key(event: Any, *, replays: str = "skip") -> tuple[str, str]:
    """(source, id) of a `cloudevents` event or of a mapping with `source` and `id`.

    With `replays="again"`, a re-drive's delivery (it carries `outboxreplay`, the job's id)
    is keyed `<id> replay <job>`: applied once more, once per job, beside the event's own
    record; with `"skip"` it keys like any delivery, so an event already applied is a
    duplicate and one never seen is applied."""
    if hasattr(event, "get_source") and hasattr(event, "get_id"):
        source, event_id = str(event.get_source()), str(event.get_id())
    else:
        source, event_id = str(event["source"]), str(event["id"])
    if replays == "again":
        if hasattr(event, "get_extension"):
            job = event.get_extension(REPLAY_ATTRIBUTE)
        else:
            job = event.get(REPLAY_ATTRIBUTE) if isinstance(event, Mapping) else None
        if job:
            return source, f"{event_id} replay {job}"
    return source, event_id


def check_replays(replays: str) -> str:
    """`replays` if it is `skip` or `again`, else `InvalidInput` naming it."""
    if replays not in REPLAYS:
        raise InvalidInput(f"replays must be one of {', '.join(REPLAYS)}, got {replays!r}")
    return replays


def event_trace(event: Any) -> Mapping[str, Any]:
    """The attributes of a `cloudevents` event or the mapping itself, where its
    `traceparent`/`tracestate` (the distributed-tracing extension) are looked up."""
    if hasattr(event, "get_attributes"):
        return dict(event.get_attributes())
    return event if isinstance(event, Mapping) else {}


def _utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)
