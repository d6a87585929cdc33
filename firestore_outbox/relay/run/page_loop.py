"""`PageLoop`: the loop of a partitioned run once it holds its first partitions: claim,
read and publish in one loop, so that no round trip waits for another it does not need.

    renew what is claimed ─ take the pages that came in ─ with few events left to publish:
    read on, or claim the next partitions (`relay.claim.holdings`) ─ send the aggregates'
    heads (`relay.publish.head_sender`) ─ release each partition once everything read from
    it is settled, re-checking it when nudges are on (`relay.claim.recheck`)

Every partition visited: the events without a partition found beyond a scan's limit are
looked for again (`relay.read.survey.find_more`) and their partitions visited.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from firestore_outbox.relay.claim.recheck import recheck
from firestore_outbox.relay.read.page_reads import PageReads
from firestore_outbox.relay.read.survey import find_more
from firestore_outbox.relay.summary import Count, StopReason

if TYPE_CHECKING:
    from firestore_outbox.relay.aggregates import Aggregates
    from firestore_outbox.relay.claim.holdings import Holdings
    from firestore_outbox.relay.claim.nudged import NudgedStart
    from firestore_outbox.relay.claim.partition_claims import PartitionLeases
    from firestore_outbox.relay.claim.partition_leases import ClaimedPartition
    from firestore_outbox.relay.config import RelayConfig
    from firestore_outbox.relay.pipeline import Pipeline
    from firestore_outbox.relay.publish.head_sender import HeadSender
    from firestore_outbox.relay.read.unhealed import Unhealed
    from firestore_outbox.relay.store import LeaseStore

# Events read and waiting, in pages of RELAY_BATCH_SIZE, before reading ahead pauses.
READ_AHEAD = 4
_WAKE_SECONDS = 0.2  # how often a loop waiting for publishes looks again


class PageLoop:
    """The page loop of one `PartitionDrain` run; `stopping`, `settled` and `first_page`
    are the drain's (why the run stops, waiting until everything sent is settled, the work
    that waits for the first page)."""

    def __init__(
        self,
        store: LeaseStore,
        leases: PartitionLeases,
        config: RelayConfig,
        aggregates: Aggregates,
        sender: HeadSender,
        holdings: Holdings,
        *,
        hand_off: Callable[[frozenset[int]], object] | None,
        stopping: Callable[[Pipeline], StopReason | None],
        settled: Callable[[Pipeline], bool],
        first_page: Callable[[], object],
    ) -> None:
        self._store = store
        self._leases = leases
        self._config = config
        self.aggregates = aggregates
        self._sender = sender
        self._holdings = holdings
        self._hand_off = hand_off
        self._stopping = stopping
        self._settled = settled
        self._start_after_first_page = first_page

    def run(
        self,
        run: Pipeline,
        claimed: dict[int, ClaimedPartition],
        visited: set[int],
        pages: ThreadPoolExecutor,
        unhealed: Unhealed | None,
        *,
        first: NudgedStart | None = None,
    ) -> StopReason:
        """Claim, read and deliver in one loop, so that no round trip waits for another it
        does not need: the pages of the partitions claimed are read at once; the next
        partitions are claimed as soon as the ones claimed have no page left to read (while
        their last events are still being published); a partition is released as soon as
        every event read from it is settled. `claimed` is kept up to date for the caller."""
        size = self._config.batch_size
        reads = PageReads(self._store, self.aggregates, pages, size, unhealed)
        if first is not None:  # a nudge's: its first pages read before the claim
            for partition, page in first.pages.items():
                reads.adopt(partition, page)
        exhausted = False
        healed = run.tally[Count.HEALED]  # when events without a partition were last looked for

        def more() -> bool:  # anything left to read or claim
            return bool(reads.open) or not exhausted

        def work() -> bool:  # something for this loop: a lease to renew, a page, room to read
            if reads.arrived() or self._leases.renewal_due(claimed.values()):
                return True  # (publishing alone could hold this thread past the leases)
            # Read ahead while what was read is being published, within a bound of memory:
            # the next page of a partition claimed as soon as it came back (a page is a round
            # trip or more away, longer than publishing half a batch takes across a cloud
            # link); the next partitions only once fewer than half a batch is ready.
            aggregates, size = self.aggregates, self._config.batch_size
            if aggregates.waiting() >= READ_AHEAD * size:
                return False
            if reads.can_send():
                return True
            # (`2 * ready < size`, not `ready < size // 2`: with a batch of one, that was
            # never true, and the drain claimed nothing until its budget ran out.)
            return 2 * aggregates.ready() < size and not reads.open and not exhausted

        while True:
            if stop := self._stopping(run):
                self._sender.wait_out()
                return stop
            renewed = self._holdings.renew(run, list(claimed.values()))
            claimed.clear()
            claimed.update((h.partition, h) for h in renewed)
            reads.keep(claimed)
            reads.take(run)
            if run.tally[Count.BATCHES]:
                self._start_after_first_page()
            if work():  # few events left to publish: read on, or claim the next partitions
                if not reads.open and not exhausted:
                    taken = self._holdings.claim(run, visited)
                    exhausted = not taken
                    claimed.update((h.partition, h) for h in taken)
                    reads.start([h.partition for h in taken])
                reads.send(run)
            reading = reads.open
            self._aggregates_unread(reads)
            released = self._holdings.release(claimed, [p for p in claimed if p not in reading])
            self._recheck(run, claimed, released, reads, pages)
            if not self._deliver(run, claimed, more=more, work=work):
                if self._config.recheck_released and claimed:
                    # the last partitions: released and re-checked here
                    if not self._settled(run):
                        continue  # the run stops (the loop's first test says why)
                    released = self._holdings.release(claimed, list(claimed), unsettled_too=True)
                    if self._recheck(run, claimed, released, reads, pages):
                        continue
                if unhealed is None or not unhealed.more or run.tally[Count.HEALED] == healed:
                    return StopReason.DRAINED
                # Every partition visited, the events without one were more than a scan
                # takes, and some of those found went (not all held, nor in partitions others
                # hold): look again, and visit the partitions they belong in. Once every
                # settle has landed and the partitions are released: the scan must not find
                # an event sent and not yet settled (it is still PENDING without a partition).
                if not self._settled(run):
                    continue  # the run stops (the loop's first test says why)
                self._holdings.release(claimed, list(claimed))
                healed = run.tally[Count.HEALED]
                unhealed = find_more(self._store, self._config, run.tally)
                reads.heal(unhealed)
                self._holdings.visit_from_now()
                visited.update(range(self._config.partitions.count))
                visited.difference_update(unhealed.partitions())
                exhausted = False

    def _deliver(
        self,
        run: Pipeline,
        claimed: dict[int, ClaimedPartition],
        *,
        more: Callable[[], bool],
        work: Callable[[], bool],
    ) -> bool:
        """Publish the heads of the queued aggregates (`HeadSender.send`) until `work()`
        says this loop has something to do or the run stops (True), or everything taken is
        settled and there is not `more()` to read or claim (False)."""
        aggregates = self.aggregates
        while True:
            stopping, sent = self._sender.send(run, claimed)
            with aggregates.changed:
                if stopping or run.settler.error is not None or work():
                    return True  # the run stops, or this loop has something to do
                if sent:
                    continue  # room for more, perhaps
                # (Not `in_flight`: with the window full of events waiting for their
                # settles, nothing is being published and the queued ones have yet to go.)
                if aggregates.unsettled == 0 and not more():
                    return False
                aggregates.changed.wait(_WAKE_SECONDS)

    def _recheck(
        self,
        run: Pipeline,
        claimed: dict[int, ClaimedPartition],
        released: list[int],
        reads: PageReads,
        pages: ThreadPoolExecutor,
    ) -> bool:
        """With nudges on, read the partitions just released once more; those claimed
        again (`relay.claim.recheck`) join `claimed`."""
        released = [p for p in released if p not in reads.unread]  # those not drained
        if not released or not self._config.recheck_released:
            return False
        again = recheck(
            self._store,
            self._leases,
            run,
            released,
            reads,
            pages,
            self._holdings.claimed_at,
            self._hand_off,
        )
        claimed.update((h.partition, h) for h in again)
        return bool(again)

    def _aggregates_unread(self, reads: PageReads) -> None:
        """Partitions given up unread are released as not drained (`Holdings.release`): a
        run under way elsewhere must still claim them."""
        self.aggregates.unsent.update(reads.unread)
