"""`LeaseStore`: the relay's Firestore side. Every state change is a compare-and-set.

The lock is the document's own update time. A relay reads a due event (its snapshot carries
`update_time` T0) and writes the lease with the precondition "last updated at T0":

    relay A: query -> e1@T0 ........ lease(e1 if T0) -> ok, e1@T1 ... publish ... settle(if T1) ok
    relay B: query -> e1@T0 ............... lease(e1 if T0) -> FAILED_PRECONDITION: A has it

Whoever writes first moves the document to T1 and every other writer holding T0 is refused,
so two overlapping invocations can never both hold one event. Settling is conditional on the
lease's own T1: if the lease expired and another relay took the event back (T2), the late
settle is refused and logged instead of overwriting the newer state. The writes go out in one
`BatchWrite`, which applies each write on its own, so losing one race never costs the rest.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from google.api_core import exceptions as google_exceptions
from google.api_core.retry import Retry
from google.cloud.firestore import FieldFilter
from google.rpc import code_pb2

from app.domain import EventStatus
from app.relay.reads import Found, run_query
from app.relay.writes import batch_write, update_pb

if TYPE_CHECKING:
    from google.cloud.firestore import Client, DocumentReference, DocumentSnapshot, Watch

# The precondition failed (someone else wrote first) or the document is gone (purged).
_LOST = frozenset({code_pb2.FAILED_PRECONDITION, code_pb2.NOT_FOUND})


@dataclass(frozen=True)
class Change:
    """Write `fields` to `ref` (delete it when `fields` is None) only if it was last updated
    at `expected_update_time`."""

    ref: DocumentReference
    expected_update_time: datetime.datetime
    fields: Mapping[str, Any] | None


class LeaseStore:
    """Queries for due events and conditional writes on the outbox collection."""

    def __init__(self, db: Client, collection: str, *, timeout: float) -> None:
        self._db = db
        self._collection = db.collection(collection)
        self._timeout = timeout

    def pending(self, due_by: datetime.datetime, limit: int) -> list[Found]:
        """`PENDING` events whose `nextAttemptAt` has come, oldest first."""
        return self._query(EventStatus.PENDING, "nextAttemptAt", due_by, limit)

    def abandoned(self, leased_before: datetime.datetime, limit: int) -> list[Found]:
        """`PROCESSING` events whose lease (`updatedAt`) is older than `leased_before`."""
        return self._query(EventStatus.PROCESSING, "updatedAt", leased_before, limit)

    def watch_pending(
        self, limit: int, on_change: Callable[[list[DocumentSnapshot[Any]]], None]
    ) -> Watch:
        """Listen to the `limit` `PENDING` events due first; `on_change(documents)` gets the
        whole window, in `nextAttemptAt` order, each time it changes. Firestore bills one
        read per document entering the window, and nothing while it stays the same."""
        watch: Watch = self.window_query(limit).on_snapshot(
            lambda documents, _changes, _read_time: on_change(documents)
        )
        return watch

    def window_query(self, limit: int) -> Any:
        """The first `limit` `PENDING` events by `nextAttemptAt`, due or not."""
        return (
            self._collection.where(filter=FieldFilter("status", "==", EventStatus.PENDING.value))
            .order_by("nextAttemptAt")
            .limit(limit)
        )

    def write_if_unchanged(self, changes: Sequence[Change]) -> list[datetime.datetime | None]:
        """Apply each change on its own; per change, the new update time (the old one for a
        delete), or None if the document had changed or was gone. Any other refusal raises
        `GoogleAPIError`."""
        if not changes:
            return []
        answers = batch_write(
            self._db,
            [update_pb(c.ref, c.fields, c.expected_update_time) for c in changes],
            retry=self._retry(),
            timeout=self._timeout,
        )
        results: list[datetime.datetime | None] = []
        for change, (code, message, update_time) in zip(changes, answers, strict=True):
            if code == code_pb2.OK:
                # A delete has no new update time: the one it had stands for "done".
                results.append(update_time or change.expected_update_time)
            elif code in _LOST:
                results.append(None)
            else:
                raise google_exceptions.from_grpc_status(  # type: ignore[no-untyped-call]
                    code, f"writing {change.ref.path}: {message}"
                )
        return results

    def due_query(
        self, status: EventStatus, field: str, bound: datetime.datetime, limit: int
    ) -> Any:
        """Events in `status` whose `field` is at most `bound`, in `field` order."""
        return (
            self._collection.where(filter=FieldFilter("status", "==", status.value))
            .where(filter=FieldFilter(field, "<=", bound))
            .order_by(field)
            .limit(limit)
        )

    def _query(
        self, status: EventStatus, field: str, bound: datetime.datetime, limit: int
    ) -> list[Found]:
        query = self.due_query(status, field, bound, limit)
        return run_query(self._db, query, retry=self._retry(), timeout=self._timeout)

    def _retry(self) -> Retry:
        # Transient errors are retried, but never past the relay's own Firestore timeout.
        # A BatchWrite retried after its answer was lost finds its own earlier writes and
        # reports them as lost races: such an event waits out one lease and is taken back,
        # so the cost is a delay, never a lost or doubled state change.
        return Retry(initial=0.1, maximum=1.0, timeout=self._timeout)
