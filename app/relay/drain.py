"""`PartitionDrain`: one run of the partitioned relay.

    count open events ── none: done (one read when idle)
      └─ heal events without a partition ─ claim a few free partitions (random start) ─┐
         ┌─────────────────────────────────────────────────────────────────────────────┘
         └─ read a page of each, in delivery order ─ publish aggregate heads ─ settle each
            with ONE write conditional on its read update time ─ next page ... ─ release,
            claim the next few, until every partition was visited or the budget is spent

No event is leased by a write: holding the partition is the lease (`app.relay.partition_leases`),
and the settle's precondition refuses a late settle after the partition was lost. Order within
an aggregate is kept in memory (`app.relay.aggregates`).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from app.cas import Change
from app.logs import log_event
from app.relay.aggregates import Aggregates, goes_on
from app.relay.fan_out import wanted
from app.relay.heads import take_head
from app.relay.partition_leases import HeldPartition, PartitionLeases
from app.relay.partition_scan import held_events, open_events
from app.relay.pipeline import hand_to
from app.relay.settler import Lease
from app.relay.survey import survey

if TYPE_CHECKING:
    from app.firestore_raw import Found
    from app.relay.attempts import Attempts
    from app.relay.config import RelayConfig
    from app.relay.fan_out import FanOut
    from app.relay.leases import LeaseStore
    from app.relay.pipeline import Pipeline

logger = logging.getLogger("app.relay.core")

# Held aggregates read per partition: more than this many held at once is an outage to fix.
HELD_READ_LIMIT = 1000
_WAKE_SECONDS = 0.2


class PartitionDrain:
    """Drains the partitions it can claim; `aggregates.settled` is the settler's callback."""

    def __init__(
        self,
        store: LeaseStore,
        leases: PartitionLeases,
        attempts: Attempts,
        config: RelayConfig,
        rng: random.Random,
        *,
        stop: threading.Event | None = None,
        fan_out: FanOut | None = None,
    ) -> None:
        self._stop = stop or threading.Event()
        self._fan_out = fan_out
        self._store = store
        self._leases = leases
        self._attempts = attempts
        self._config = config
        self._rng = rng
        self._holds_failed = config.ordering == "aggregate" and config.failed_head == "hold"
        self._anything_held = False
        self.aggregates = Aggregates(
            ordered=config.ordering == "aggregate", skip_failed=config.failed_head == "skip"
        )

    def run(self, run: Pipeline) -> str:
        """Drain until every partition was visited or a stop; returns why it stopped."""
        tally = run.tally
        looked = survey(self._store, self._config, tally)
        if not looked.open_events:
            return "drained"
        self._anything_held = looked.anything_held
        if self._fan_out is not None and (more := wanted(looked.open_events, self._config)):
            tally["fannedOut"] += self._fan_out.start(more, run.instance)
        visited = set(looked.empty)
        while True:
            if self._out_of_time(run):
                return "budget"
            held = self._leases.claim(
                run.instance, self._config.partitions_per_claim, skip=visited, rng=self._rng
            )
            if not held:
                return "drained"
            visited.update(h.partition for h in held)
            tally["partitionsClaimed"] += len(held)
            try:
                held, stop = self._drain(run, held)
            finally:
                self._leases.release([h for h in held if h.partition not in self.aggregates.lost])
            if stop:
                return stop

    def _drain(self, run: Pipeline, held: list[HeldPartition]) -> tuple[list[HeldPartition], str]:
        """Deliver the held partitions' events page by page; ("" when they are done)."""
        if self._holds_failed and self._anything_held:
            for h in held:
                found = self._store.run(held_events(self._store, h.partition, HELD_READ_LIMIT))
                self.aggregates.block(str(d.get("aggregateId")) for d in found)
        cursors: dict[int, Found | None] = {h.partition: None for h in held}
        stop = ""
        while not stop:
            stop = self._stopping(run)
            held = self._renew(run, held)
            live = {h.partition for h in held} - self.aggregates.lost
            cursors = {p: c for p, c in cursors.items() if p in live}
            # A page of RELAY_BATCH_SIZE per partition held (at most RELAY_PARTITIONS_PER_CLAIM
            # pages in memory): fewer, fuller queries, each a round trip to Firestore.
            limit = self._config.batch_size
            for partition, after in [] if stop else list(cursors.items()):
                page = self._store.run(open_events(self._store, partition, limit, after))
                run.tally["batches"] += 1
                self.aggregates.add(partition, page)
                if len(page) < limit:
                    del cursors[partition]  # drained for this run
                else:
                    cursors[partition] = page[-1]
            if not self._deliver(run, {h.partition: h for h in held}, more=bool(cursors)):
                break
        # Every settle lands (or gives up) before the partitions are released: the next
        # holder must not find an event delivered here still PENDING.
        while not run.in_flight.wait_below(1, _WAKE_SECONDS):
            if run.settler.error is not None:
                break
        return held, stop

    def _deliver(self, run: Pipeline, held: dict[int, HeldPartition], *, more: bool) -> bool:
        """Publish the heads of the queued aggregates; return True to read more pages
        first (when `more` are left and few events wait), False once none can go on."""
        aggregates = self.aggregates
        while True:
            room = self._config.batch_size - aggregates.in_flight
            heads = [] if self._stopping(run) else aggregates.heads(room)
            for key, partition, document in heads:
                lease = self._lease(run, key, held[partition], document)
                if lease is None:
                    continue
                run.tally["leased"] += 1
                run.in_flight.acquire(1)
                future = run.pool.submit(self._attempts.publish, lease, run)
                future.add_done_callback(self._published(run, key, lease))
            with aggregates.changed:
                if run.settler.error is not None or (aggregates.in_flight == 0 and not heads):
                    return more and run.settler.error is None and not self._stopping(run)
                if more and aggregates.ready() < self._config.batch_size // 2:
                    return True  # read ahead while what was read is being published
                aggregates.changed.wait(_WAKE_SECONDS)

    def _published(self, run: Pipeline, key: str, lease: Lease) -> Callable[[Future[Any]], None]:
        """The aggregate's next event may go as soon as this one was delivered (in order:
        its settle follows, and a settle that does not land only means it is delivered
        again, which the consumer deduplicates); then the result goes to the settler."""
        settle = hand_to(run.settler, lease)
        config = self._config

        def done(published: Future[Any]) -> None:
            result = published.result()
            self.aggregates.finish(key, go_on=goes_on(result, lease.attempt, config))
            settle(published)

        return done

    def _lease(self, run: Pipeline, key: str, held: HeldPartition, document: Found) -> Lease | None:
        """The lease to publish `document` under, or None (the aggregate is then finished:
        not due yet, still leased by a relay of 0.2, or parked as FAILED here)."""
        head = take_head(
            document,
            now=self._store.clock.earliest(),
            config=self._config,
            instance=run.instance,
            leased_at=held.valid_until - self._leases.duration,
        )
        run.tally["reclaimed"] += head.reclaim  # a lease of 0.2 that expired
        if head.lag_ms is not None:
            run.tally["lagMs"] = max(run.tally["lagMs"], head.lag_ms)
        if head.park is not None:
            self._park(run, document, head.park)
            self.aggregates.finish(key, go_on=self._config.failed_head == "skip")
        elif head.lease is None:
            self.aggregates.finish(key, go_on=False)
        return head.lease

    def _park(self, run: Pipeline, document: Found, fields: dict[str, object]) -> None:
        [written] = self._store.write([Change(document.reference, document.update_time, fields)])
        if written.applied:
            run.tally["failed"] += 1
            run.tally["poisoned"] += 1
            log_event(
                logger,
                logging.WARNING,
                "relay.event_failed",
                f"event {document.id} parked as FAILED: {fields.get('lastError')}",
                eventId=document.id,
                error=fields.get("lastError"),
                instanceId=run.instance,
            )

    def _renew(self, run: Pipeline, held: list[HeldPartition]) -> list[HeldPartition]:
        renewed = self._leases.renew_due(held, run.instance)
        kept = {h.partition for h in renewed}
        self.aggregates.lost.update(h.partition for h in held if h.partition not in kept)
        return renewed

    def _stopping(self, run: Pipeline) -> str:
        if self._out_of_time(run):
            return "budget"
        if run.breaker.open:
            return "channel"
        if run.settler.error is not None:
            return "error"
        return ""

    def _out_of_time(self, run: Pipeline) -> bool:
        if self._stop.is_set():
            return True  # follow mode is stopping: settle what is in flight, then leave
        return run.deadline - time.monotonic() < self._config.attempt_seconds
