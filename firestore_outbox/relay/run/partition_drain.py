"""`PartitionDrain`: one run of the partitioned relay.

    read a few open events (`relay.read.survey`) ── none: done (one read when idle)
      └─ find events without a partition, if any ─ claim a few partitions that read saw
         events in, reading their first pages meanwhile (`relay.claim.nudged`) ──────────┐
         ┌─────────────────────────────────────────────────────────────────────────────┘
         └─ the page loop (`relay.run.page_loop`): read a page of each, all at once ─
            publish aggregate heads (`relay.publish.head_sender`) ─ settle each with ONE
            write conditional on its read update time (`relay.settle`; an event found
            without a partition is merged into its partition's pages, healed by its settle)
            ─ next pages ... ─ once none is left to read, claim the next few while the last
            events go out; release each partition once everything read from it is
            settled; until every partition was visited or the budget is spent
    with a backlog, once the first page is in: count for fan-out (bounded) and heal events
    elsewhere, beside the drain (`relay.read.survey.after_first_page`)

No event is leased by a write: the partition's lease covers it (`relay.claim.partition_claims`;
a run's claims, renewals and releases: `relay.claim.holdings`), and the settle's precondition
refuses a late settle after the partition was lost. Order within an aggregate is kept in
memory (`relay.aggregates`).
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Collection
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

from firestore_outbox.relay.aggregates import Aggregates
from firestore_outbox.relay.claim.holdings import Holdings
from firestore_outbox.relay.claim.nudged import NudgedStart, start_nudged
from firestore_outbox.relay.claim.partition_claims import PartitionLeases
from firestore_outbox.relay.claim.partition_leases import ClaimedPartition
from firestore_outbox.relay.fan_out import wanted
from firestore_outbox.relay.partition_settings import FailedHead
from firestore_outbox.relay.publish.head_sender import HeadSender
from firestore_outbox.relay.read.survey import (
    Survey,
    after_first_page,
    read_held,
    survey,
)
from firestore_outbox.relay.run.page_loop import PageLoop
from firestore_outbox.relay.summary import Count, StopReason, Tally

if TYPE_CHECKING:
    from firestore_outbox.relay.config import RelayConfig
    from firestore_outbox.relay.fan_out import FanOut
    from firestore_outbox.relay.pipeline import Pipeline
    from firestore_outbox.relay.publish.attempts import Attempts
    from firestore_outbox.relay.store import LeaseStore


_WAKE_SECONDS = 0.2


def _nothing() -> Future[None]:
    done: Future[None] = Future()
    done.set_result(None)
    return done


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
        take_mode: Callable[[], bool] = lambda: True,
        only: Collection[int] | None = None,
        hand_off: Callable[[frozenset[int]], object] | None = None,
    ) -> None:
        self._only = only  # a nudge's partitions: no others are claimed
        # A nudged run's re-check nudges what it finds through this, not claiming again.
        self._hand_off = hand_off if only is not None else None
        self._stop = stop or threading.Event()
        self._take_mode = take_mode  # False: relays of the other lease mode may be draining
        self._fan_out = fan_out
        self._store = store
        self._leases = leases
        self._config = config
        self._rng = rng
        self._holds_failed = config.partitions.holds_failed
        self._after_first_page: Callable[[], Future[None]] = _nothing
        self._after: Future[None] | None = None
        self.aggregates = Aggregates(
            ordered=config.partitions.ordered,
            skip_failed=config.partitions.failed_head is FailedHead.SKIP,
        )
        self._sender = HeadSender(
            store, attempts, config, self.aggregates, leases.duration, self._stop
        )
        self._holdings = Holdings(store, leases, config, self.aggregates, rng)

    def survey(self, tally: Tally, *, until: float) -> Survey | None:
        """What the run looks at first, before anything is set up to publish: a few open
        events (`relay.read.survey`; none open: the run is done, in one read). None for a
        nudge's run, which claims its partitions without looking (`relay.claim.nudged`)."""
        if self._only is not None and not self._config.ramp.enabled:
            return None
        return survey(self._store, self._config, tally, until=until)

    def run(self, run: Pipeline, looked: Survey | None) -> StopReason:
        """Drain what `looked` (`survey()`) saw, until every partition was visited or a
        stop; returns why it stopped."""
        if looked is None:
            return self._run_nudged(run)
        if not looked.open_events:
            return StopReason.DRAINED
        tally = run.tally
        claimed: dict[int, ClaimedPartition] = {}
        self._holdings.visit_from_now()
        with ThreadPoolExecutor(1, "relay-backlog") as beside:
            if looked.backlog:  # counts and healing wait for the first page, then go beside
                args = (self._store, self._config, looked, tally, self._fan_out, run.instance)
                self._after_first_page = lambda: beside.submit(
                    after_first_page, *args, until=run.deadline
                )
            try:
                with ThreadPoolExecutor(self._config.partitions.per_claim, "relay-pages") as pages:
                    visited = set(looked.empty)
                    first: NudgedStart | None = None
                    if run.ramp is None and looked.unhealed is None:
                        # a few partitions the survey saw events in: their pages read at once
                        first = self._start(
                            run, claimed, self._first_claim(looked), pages, nudged=False
                        )
                        mode_ok = first.mode_ok
                        visited.update(claimed)
                    elif (mode_ok := self._take_mode()) and self._holds_failed:
                        self._holdings.hold(read_held(self._store, until=run.deadline, tally=tally))
                    if not mode_ok:
                        return StopReason.MODE  # the summary says which mode it waits for
                    self._fan_out_few(run, looked)
                    if self._only is not None:  # a nudge: its partitions only
                        visited |= set(range(self._config.partitions.count)) - set(self._only)
                    return self._page_loop().run(
                        run, claimed, visited, pages, looked.unhealed, first=first
                    )
            finally:
                # Every settle lands (or gives up) before the partitions are released: the
                # next holder must not find an event delivered here still PENDING.
                self._settled(run)
                self._holdings.release(claimed, list(claimed), unsettled_too=True)
                if self._after is not None:  # none when no page came: nothing went out
                    self._after.result()  # its Firestore error ends the run

    def _run_nudged(self, run: Pipeline) -> StopReason:
        """A nudge's run: its partitions only, started in two round trips (`nudged`)."""
        claimed: dict[int, ClaimedPartition] = {}
        try:
            # A page query each for every partition the nudge names (up to all of them), at
            # once: with a claim's worth of threads, the rest of a 16-partition nudge waited.
            # No more threads than the relay publishes on (RELAY_CONCURRENCY): a nudge of
            # every one of 1,024 partitions queues its queries, it opens no 1,024 threads.
            named = min(len(self._only or ()), self._config.concurrency)
            readers = max(self._config.partitions.per_claim, named)
            with ThreadPoolExecutor(readers, "relay-pages") as pages:
                start = self._start(run, claimed, self._only or (), pages)
                if not start.mode_ok:
                    return StopReason.MODE
                if not claimed:
                    return StopReason.DRAINED
                self._holdings.visit_from_now()
                visited = set(range(self._config.partitions.count))  # nothing more is claimed
                return self._page_loop().run(run, claimed, visited, pages, None, first=start)
        finally:
            self._settled(run)
            self._holdings.release(claimed, list(claimed), unsettled_too=True)

    def _start(
        self,
        run: Pipeline,
        claimed: dict[int, ClaimedPartition],
        partitions: Collection[int],
        pages: ThreadPoolExecutor,
        *,
        nudged: bool = True,
    ) -> NudgedStart:
        """Claim `partitions`, their first pages and the held aggregates read at once
        (`nudged`); `claimed` gets the claim as soon as it lands."""
        start = start_nudged(
            self._store,
            self._leases,
            partitions,
            instance=run.instance,
            page_size=self._config.batch_size,
            take_mode=self._take_mode,
            holds=self._holds_failed,
            reader=pages,
            until=run.deadline,
            tally=run.tally,
            nudged=nudged,
            into=claimed,
        )
        if start.mode_ok:
            self._holdings.hold(start.held)
            self._holdings.note_claimed(run, start.claimed)
        return start

    def _first_claim(self, looked: Survey) -> list[int]:
        """Up to a claim's worth of the partitions the survey saw events in, at random, so
        that invocations started together spread out."""
        seen = sorted(looked.partitions - looked.empty)
        return self._rng.sample(seen, min(self._config.partitions.per_claim, len(seen)))

    def _fan_out_few(self, run: Pipeline, looked: Survey) -> None:
        """More invocations for the open events the survey saw all of (a backlog's are
        counted once the first page is out: `after_first_page`)."""
        fan_out = self._fan_out
        if (
            not looked.backlog
            and fan_out
            and (more := wanted(looked.open_events, self._config.fan_out, self._config.partitions))
        ):
            run.tally[Count.FANNED_OUT] += fan_out.start(more, run.instance)

    def _start_after_first_page(self) -> Future[None]:
        if self._after is None:
            self._after = self._after_first_page()
        return self._after

    def _page_loop(self) -> PageLoop:
        return PageLoop(
            self._store,
            self._leases,
            self._config,
            self.aggregates,
            self._sender,
            self._holdings,
            hand_off=self._hand_off,
            stopping=self._stopping,
            settled=self._settled,
            first_page=self._start_after_first_page,
        )

    def _settled(self, run: Pipeline) -> bool:
        """Wait until every event sent is settled; False if the run stops first."""
        while not run.in_flight.wait_below(1, _WAKE_SECONDS):
            if run.settler.error is not None or self._stopping(run):
                return False
        return True

    def _stopping(self, run: Pipeline) -> StopReason | None:
        return run.stop_reason(self._stop, self._config.attempt_seconds)
