"""A re-drive job document as read (`Job`), its states and what an operator may do to it.

The document (collection `{OUTBOX_COLLECTION}_redrive`) and the writes on it are in
`firestore_outbox.redrive.jobs`; its fields are described in docs/redrive.md.
"""

from __future__ import annotations

import datetime
import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from firestore_outbox.errors import InvalidInput
from firestore_outbox.redrive.reading import Position
from firestore_outbox.redrive.selection import Selection

if TYPE_CHECKING:
    from google.cloud.firestore import DocumentSnapshot

COUNTS = ("selected", "sent", "rejected", "skipped")


class JobState(str, enum.Enum):
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    CANCELLED = "CANCELLED"
    DONE = "DONE"


FINAL = (JobState.CANCELLED, JobState.DONE)
# The state an operator's command moves a job to, and the states it may move it from.
MOVES = {
    "pause": (JobState.PAUSED, (JobState.RUNNING,)),
    "resume": (JobState.RUNNING, (JobState.PAUSED,)),
    "cancel": (JobState.CANCELLED, (JobState.RUNNING, JobState.PAUSED)),
}


class JobNotFound(InvalidInput):
    """No re-drive job has that id."""


@dataclass(frozen=True)
class Job:
    """A job document as read."""

    job_id: str
    state: JobState
    selection: Selection
    target: dict[str, Any]
    rate: float
    partitions: int
    created_by: str
    created_at: datetime.datetime | None
    cursor: Position | None
    counts: dict[str, int]
    lease_owner: str | None = None
    leased_at: datetime.datetime | None = None
    last_error: str | None = None
    update_time: datetime.datetime | None = field(default=None, repr=False)

    @classmethod
    def from_snapshot(cls, snapshot: DocumentSnapshot[Any]) -> Job:
        data: Mapping[str, Any] = snapshot.to_dict() or {}
        return cls(
            job_id=snapshot.id,
            state=JobState(data["state"]),
            selection=Selection.from_document(data.get("filter") or {}),
            target=dict(data.get("target") or {}),
            rate=float(data["ratePerSecond"]),
            partitions=int(data["partitions"]),
            created_by=str(data.get("createdBy", "")),
            created_at=data.get("createdAt"),
            cursor=Position.from_document(data.get("cursor")),
            counts={name: int((data.get("counts") or {}).get(name, 0)) for name in COUNTS},
            lease_owner=data.get("leaseOwner"),
            leased_at=data.get("leasedAt"),
            last_error=data.get("lastError"),
            update_time=snapshot.update_time,
        )
