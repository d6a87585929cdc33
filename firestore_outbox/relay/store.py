"""`LeaseStore`: the relay's Firestore side. Every state change is a compare-and-set.

The lock is the document's own update time. A relay reads a due event (its snapshot carries
`update_time` T0) and writes the lease with the precondition "last updated at T0":

    relay A: query -> e1@T0 ........ lease(e1 if T0) -> ok, e1@T1 ... publish ... settle(if T1) ok
    relay B: query -> e1@T0 ............... lease(e1 if T0) -> FAILED_PRECONDITION: A has it

Whoever writes first moves the document to T1 and every other writer holding T0 is refused,
so two overlapping invocations can never both hold one event. Settling is conditional on the
lease's own T1: if the lease expired and another relay took the event back (T2), the late
settle is refused and logged instead of overwriting the newer state. The writes go out in one
`BatchWrite` (`firestore_outbox.firestore.cas`), which applies each write on its own, so losing one
race never costs the rest, and a write Firestore refuses (a document pushed over 1 MiB) parks only
its event.

Every answer's time (read times, commit times) sets the store's `clock`: the relay compares
server timestamps only with Firestore's own "now".
"""

from __future__ import annotations

import dataclasses
import datetime
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from google.api_core import exceptions as google_exceptions
from google.api_core.retry import Retry
from google.cloud.firestore import FieldFilter

from firestore_outbox.fields import (
    ATTEMPTS,
    CREATED_AT,
    HELD,
    NEXT_ATTEMPT_AT,
    PARTITION,
    STATUS,
    UPDATED_AT,
    EventStatus,
)
from firestore_outbox.firestore import cas
from firestore_outbox.firestore.cas import Change, WriteOutcome, Written
from firestore_outbox.firestore.clock import ServerClock
from firestore_outbox.firestore.raw import Found, run_query
from firestore_outbox.firestore.watches import Watches
from firestore_outbox.partitions import partition_chunks
from firestore_outbox.relay.transitions import parked

if TYPE_CHECKING:
    from google.cloud.firestore import Client, DocumentSnapshot, Watch

__all__ = ["Change", "LeaseStore", "Written"]


# The least a Firestore call is given past a run's envelope: it fails at once, not never.
MIN_CALL_SECONDS = 0.05


class LeaseStore:
    """Queries for due events and conditional writes on the outbox collection."""

    def __init__(
        self, db: Client, collection: str, *, timeout: float, park_holds: bool = False
    ) -> None:
        self._db = db
        self.collection = db.collection(collection)
        self._timeout = timeout
        # The envelope of each run under way (`bounded`): a process may drain disjoint
        # partitions in several runs at once (`OUTBOX_NUDGE=process`).
        self._envelopes: list[float] = []
        self._envelopes_lock = threading.Lock()
        # RELAY_FAILED_HEAD=hold (ordered): an event parked undelivered holds its aggregate.
        self._park_holds = park_holds
        self.clock = ServerClock()

    @property
    def timeout(self) -> float:
        """Seconds each Firestore call may take, its retries included: the configured
        timeout, and never past the envelope of the runs under way (`bounded`)."""
        with self._envelopes_lock:
            end = max(self._envelopes, default=None)
        if end is None:
            return self._timeout
        left = end - time.monotonic()
        return max(MIN_CALL_SECONDS, min(self._timeout, left))

    @contextmanager
    def bounded(self, end: float) -> Iterator[None]:
        """While inside, end every Firestore call by `end` (monotonic). A run sets its budget
        plus the Firestore timeout: whatever it still does after its budget (settles,
        renewals, releases, counts) ends within that envelope, Firestore frozen or not.
        Runs under way at once (disjoint partitions, one process) are bounded by the latest
        of their envelopes: the store's calls run on the drains' pools, which do not say
        whose run a call is for, and one run's end must neither lift another's bound nor
        cut another's calls short. One run at a time (a Function Compute invocation): its own."""
        with self._envelopes_lock:
            self._envelopes.append(end)
        try:
            yield
        finally:
            with self._envelopes_lock:
                self._envelopes.remove(end)

    def pending(self, due_by: datetime.datetime, limit: int) -> list[Found]:
        """`PENDING` events whose `nextAttemptAt` has come, oldest first."""
        return self.run(self.due_query(EventStatus.PENDING, NEXT_ATTEMPT_AT, due_by, limit))

    def abandoned(self, leased_before: datetime.datetime, limit: int) -> list[Found]:
        """`PROCESSING` events whose lease (`updatedAt`) is older than `leased_before`."""
        return self.run(self.due_query(EventStatus.PROCESSING, UPDATED_AT, leased_before, limit))

    def watch_pending(
        self,
        limit: int,
        on_change: Callable[[list[DocumentSnapshot[Any]]], None],
        *,
        newest: int = 0,
    ) -> Watch | Watches:
        """Listen to the `limit` `PENDING` events due first, or (`newest`, the partition
        count) the `limit` committed last in each chunk of partitions (`newest_queries`);
        `on_change(documents)` gets the whole window, in the query's order, each time it
        changes. Firestore bills one read per document entering the window, and nothing
        while it stays the same."""

        def changed(documents: Any, _changes: Any, read_time: datetime.datetime) -> None:
            self.clock.observe(read_time)
            on_change(documents)

        if not newest:
            watch: Watch = self.window_query(limit).on_snapshot(changed)
            return watch
        queries = self.newest_queries(limit, newest)
        if len(queries) == 1:
            only: Watch = queries[0].on_snapshot(changed)
            return only
        return Watches(queries, changed)

    def window_query(self, limit: int) -> Any:
        """The first `limit` `PENDING` events by `nextAttemptAt`, due or not."""
        return (
            self.collection.where(filter=FieldFilter(STATUS, "==", EventStatus.PENDING.value))
            .order_by(NEXT_ATTEMPT_AT)
            .limit(limit)
        )

    def newest_queries(self, limit: int, partitions: int) -> list[Any]:
        """The last `limit` `PENDING` events committed, one query per chunk of partitions
        (one up to 30 partitions). An event commits at the top of its chunk's whatever waits
        before (a held aggregate's events, a retrying head's followers), so a listener on
        them hears every commit; the first events by `nextAttemptAt` can be events nobody
        delivers, and a commit behind them changes nothing there. The partition comes
        first: the index it needs (`partition`, `status`, `createdAt` descending) spreads
        each commit's entry over the partitions instead of the end of one range."""
        return [
            self.in_partitions(chunk)
            .where(filter=FieldFilter(STATUS, "==", EventStatus.PENDING.value))
            .order_by(CREATED_AT, direction="DESCENDING")
            .limit(limit)
            for chunk in partition_chunks(partitions)
        ]

    def due_query(
        self,
        status: EventStatus,
        field: str,
        bound: datetime.datetime,
        limit: int,
        *,
        partitions: Sequence[int] | None = None,
    ) -> Any:
        """Events in `status` whose `field` is at most `bound`, in `field` order; only
        those of `partitions` when given, the partition then the query's first filter (the
        index it needs leads with it; without, it is an index of per-event leases,
        `firestore.indexes.event-leases.json`)."""
        events = self.collection if partitions is None else self.in_partitions(partitions)
        return (
            events.where(filter=FieldFilter(STATUS, "==", status.value))
            .where(filter=FieldFilter(field, "<=", bound))
            .order_by(field)
            .limit(limit)
        )

    def in_partitions(self, partitions: Sequence[int]) -> Any:
        """The events of `partitions` (at most 30): a query's first filter."""
        return self.collection.where(filter=FieldFilter(PARTITION, "in", list(partitions)))

    def run(self, query: Any) -> list[Found]:
        """The documents `query` returns, decoded once; its read time sets the clock."""
        return self.run_at(query)[0]

    def run_at(self, query: Any) -> tuple[list[Found], datetime.datetime | None]:
        """`run(query)` and the read time of its answer."""
        sent_at = time.monotonic()
        result = run_query(self._db, query, retry=self._retry(), timeout=self.timeout)
        self.clock.observe(result.read_time, sent_at)
        return result.found, result.read_time

    def count_at(
        self, query: Any, read_time: datetime.datetime | None
    ) -> tuple[int, datetime.datetime]:
        """How many documents `query` matches at `read_time` (None: now), and the read time
        (an aggregation, billed one read per 1,000 matched)."""
        sent_at = time.monotonic()
        [[result]] = query.count(alias="n").get(
            retry=self._retry(), timeout=self.timeout, read_time=read_time
        )
        if read_time is None:  # a read at a past time says nothing about now
            self.clock.observe(result.read_time, sent_at)
        return int(result.value), result.read_time

    def write(self, changes: Sequence[Change]) -> list[Written]:
        """Each change's outcome (`firestore_outbox.firestore.cas`). A write Firestore refuses for
        itself parks its
        event instead: FAILED with the reason, in a write that shrinks the document (a
        shorter status, a short `lastError`); the `Written` stays `REFUSED`, with
        `update_time` set when the park was applied."""
        written = self._write(changes)
        refused = [n for n, w in enumerate(written) if w.outcome is WriteOutcome.REFUSED]
        for with_reason in (True, False):  # without any reason if even that was refused
            refused = [n for n in refused if not written[n].transient]
            parks = [
                Change(
                    changes[n].ref,
                    changes[n].expected_update_time,
                    {
                        **parked(written[n].reason if with_reason else None),
                        **_spent(changes[n].fields),
                        **self._holding(changes[n].fields),
                    },
                )
                for n in refused
            ]
            left = []
            for n, park in zip(refused, self._write(parks), strict=True):
                if park.applied:
                    written[n] = dataclasses.replace(written[n], update_time=park.update_time)
                elif park.outcome is WriteOutcome.REFUSED:
                    left.append(n)
            refused = left
        return written

    def landed(
        self, changes: Sequence[Change], holding: Mapping[str, Any], *, deadline: float
    ) -> list[datetime.datetime | None]:
        """`firestore_outbox.firestore.cas.landed`, in one batched get that ends by `deadline`
        (monotonic): per change
        its update time if it is in Firestore as written, else None (also when no time is
        left to look)."""
        timeout = min(self.timeout, deadline - time.monotonic())
        if not changes or timeout <= 0:
            return [None] * len(changes)
        retry = Retry(initial=0.1, maximum=1.0, timeout=timeout)
        return cas.landed(self._db, changes, holding=holding, retry=retry, timeout=timeout)

    def write_if_unchanged(self, changes: Sequence[Change]) -> list[datetime.datetime | None]:
        """For the operations commands: per change the new update time, or None if the
        document had changed or was gone; a refused write raises `GoogleAPIError`."""
        results: list[datetime.datetime | None] = []
        for change, written in zip(changes, self._write(changes), strict=True):
            if written.outcome is WriteOutcome.REFUSED:
                raise google_exceptions.from_grpc_status(  # type: ignore[no-untyped-call]
                    written.code, f"writing {change.ref.path}: {written.reason}"
                )
            results.append(written.update_time)
        return results

    def _write(self, changes: Sequence[Change]) -> list[Written]:
        sent_at = time.monotonic()
        written = cas.write_if_unchanged(
            self._db, changes, retry=self._retry(), timeout=self.timeout
        )
        for change, result in zip(changes, written, strict=True):
            if result.applied and change.fields is not None:  # a commit time (not a delete)
                self.clock.observe(result.update_time, sent_at)
        return written

    def _holding(self, fields: Mapping[str, Any] | None) -> dict[str, Any]:
        """`held` for a park, as a FAILED settle would have it: its aggregate's later events
        must not overtake an event never delivered (a run delivered them on the next run).
        Not when the refused write was recording a delivery: nothing is owed before them."""
        delivered = fields is not None and fields.get(STATUS) == EventStatus.PROCESSED.value
        return {HELD: True} if self._park_holds and not delivered else {}

    def _retry(self) -> Retry:
        # Transient errors are retried, but never past the relay's own Firestore timeout.
        return Retry(initial=0.1, maximum=1.0, timeout=self.timeout)


def _spent(fields: Mapping[str, Any] | None) -> dict[str, Any]:
    """The attempt a refused settle was recording (with partition leases only the settle
    counts it): a park keeps it. A lease's count is not kept: nothing was sent."""
    if fields is None or fields.get(STATUS) == EventStatus.PROCESSING.value:
        return {}
    attempts = fields.get(ATTEMPTS)
    return {ATTEMPTS: attempts} if isinstance(attempts, int) else {}
