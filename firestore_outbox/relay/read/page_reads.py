"""`PageReads`: the partitioned drain's page queries, sent in the background.

Each partition held is read page by page in delivery order (`open_events`). The queries of
all the partitions held go out at once, on a small pool of their own, and the drain goes on
publishing what it already read while they are in flight: with Firestore a cross-cloud
round trip away, a drain that waited for each page would spend most of its time waiting.
A partition whose page came back short has nothing more to read in this run. Events found
without a usable partition (`firestore_outbox.relay.read.unhealed`) are merged into
their partition's pages in delivery order.

A page query that fails for want of time or of Firestore (a timeout, `UNAVAILABLE`, ...:
`READ_FAILURES`, shared with the run's other reads: `firestore_outbox.firestore.reads`) is sent
again from the same cursor, up to `READ_TRIES` times in all; a
partition whose reads keep failing is given up for this run (`unread`): the drain releases it,
not drained, once what was read from it is settled, and goes on with the others. One slow
read does not end a run that other partitions' reads are feeding.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from firestore_outbox.firestore.reads import READ_FAILURES, READ_TRIES
from firestore_outbox.relay.ramp import bucket, pace
from firestore_outbox.relay.read.scan import open_events
from firestore_outbox.relay.read.unhealed import Unhealed
from firestore_outbox.relay.summary import Count

if TYPE_CHECKING:
    from firestore_outbox.firestore.raw import Found
    from firestore_outbox.relay.aggregates import Aggregates
    from firestore_outbox.relay.pipeline import Pipeline
    from firestore_outbox.relay.store import LeaseStore

logger = logging.getLogger("firestore_outbox.relay")


class PageReads:
    """Cursors of the partitions with more to read, and their page queries in flight.
    Used from the drain's thread only; a finished query wakes it through `aggregates`."""

    def __init__(
        self,
        store: LeaseStore,
        aggregates: Aggregates,
        pool: ThreadPoolExecutor,
        limit: int,
        unhealed: Unhealed | None = None,
    ) -> None:
        self._store = store
        self._unhealed = unhealed or Unhealed()
        self._aggregates = aggregates
        self._pool = pool
        self._limit = limit
        self._cursors: dict[int, Found | None] = {}
        self.last: dict[int, Found] = {}  # the last event read in each partition
        # each page in flight (an adopted one may come back None: read it again)
        self._reading: dict[int, tuple[Future[Any], int]] = {}
        self._done = threading.Event()
        self._failures: dict[int, int] = {}  # partition -> its page reads failed in a row
        self.unread: set[int] = set()  # given up: its reads kept failing

    def heal(self, unhealed: Unhealed) -> None:
        """Events found without a partition since (`Unhealed`): merged from now on."""
        self._unhealed = unhealed

    def start(self, partitions: Iterable[int]) -> None:
        """Partitions just claimed: read from their first event."""
        self._cursors.update((p, None) for p in partitions)

    def adopt(self, partition: int, page: Future[list[Found] | None]) -> None:
        """A first page read before or while the partition was claimed (`nudged`), maybe
        still in flight: taken as if this reader had sent it; None: read again from the
        first event."""
        self._cursors[partition] = None
        self._reading[partition] = (page, self._limit)
        page.add_done_callback(self._arrive)

    def resume(self, partition: int) -> None:
        """A partition claimed again (`recheck`): read on after its last event read."""
        self._cursors[partition] = self.last.get(partition)

    def keep(self, held: Iterable[int]) -> None:
        """Stop reading partitions no longer held (a page in flight is dropped when it
        comes back)."""
        kept = set(held)
        self._cursors = {p: c for p, c in self._cursors.items() if p in kept}

    @property
    def open(self) -> set[int]:
        """Partitions with a page still to read or in flight."""
        return set(self._cursors) | set(self._reading)

    def can_send(self) -> bool:
        """Whether a partition has a page to read and no query in flight."""
        return any(p not in self._reading for p in self._cursors)

    def arrived(self) -> bool:
        """Whether a page came back since the last `take()`."""
        return self._done.is_set()

    def send(self, run: Pipeline) -> None:
        """Query the next page of every partition with none in flight."""
        waiting = [p for p in self._cursors if p not in self._reading]
        if not waiting:
            return
        # RELAY_RAMP=on: booked before they are read, each page at most a bucket's share.
        limit = bucket(run.ramp, self._limit * len(waiting)) // len(waiting) or 1
        pace(run.ramp, limit * len(waiting), run.deadline)
        for partition in waiting:
            query = open_events(self._store, partition, limit, self._cursors[partition])
            future = self._pool.submit(self._store.run, query)
            future.add_done_callback(self._arrive)
            self._reading[partition] = (future, limit)

    def take(self, run: Pipeline) -> None:
        """Queue the pages that came back (a query's error is raised here)."""
        self._done.clear()
        for partition, (future, limit) in list(self._reading.items()):
            if not future.done():
                continue
            del self._reading[partition]
            try:
                page = future.result()
            except READ_FAILURES as exc:
                self._failed(run, partition, exc)
                continue
            self._failures.pop(partition, None)
            if page is None:
                continue  # an adopted page older than the claim: its cursor reads it again
            run.tally[Count.BATCHES] += 1
            if partition not in self._cursors:
                continue  # lost meanwhile
            self._took(partition, page, limit)

    def _failed(self, run: Pipeline, partition: int, exc: Exception) -> None:
        """A page query of `partition` failed: its cursor reads it again, or, after
        `READ_TRIES`, the partition is given up for this run (the others go on)."""
        if partition not in self._cursors:
            return  # lost meanwhile: nothing more is read there anyway
        failures = self._failures[partition] = self._failures.get(partition, 0) + 1
        if failures < READ_TRIES:
            run.tally[Count.READ_RETRIES] += 1  # `send` queries it again from its cursor
            return
        del self._cursors[partition]
        self.unread.add(partition)
        run.tally[Count.PARTITIONS_UNREAD] += 1
        logger.warning(
            "partition %d released unread: %d page reads failed (last: %s)",
            partition,
            failures,
            type(exc).__name__,
        )

    def _took(self, partition: int, page: list[Found], limit: int) -> None:
        last = len(page) < limit
        self._aggregates.add(partition, self._unhealed.merge(partition, page, last=last))
        if page:
            self.last[partition] = page[-1]
        if last:
            del self._cursors[partition]  # drained for this run
        else:
            self._cursors[partition] = page[-1]

    def _arrive(self, _: Future[Any]) -> None:
        self._done.set()
        self._aggregates.poke()
