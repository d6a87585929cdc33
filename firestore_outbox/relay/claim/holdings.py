"""`Holdings`: a run's partition leases from claim to release, and what it knows of the
aggregates held there.

    claim (up to a claim's worth not visited yet) ─ counted, and the aggregates their failed
    heads hold blocked ─ renewed as they near their end ─ released once everything read from
    each is settled: drained, or not (a settle was refused, an event handed back unsent)

Which aggregates are held is read once a run has something to deliver (`hold`); a partition
claimed later is asked again only when a lease written since may hide a hold there
(`_held_since_counted`). Used from the drain's thread only.
"""

from __future__ import annotations

import datetime
import functools
import random
from typing import TYPE_CHECKING

from firestore_outbox.fields import AGGREGATE_ID
from firestore_outbox.firestore.reads import counter, read_retrying
from firestore_outbox.relay.read.scan import held_events
from firestore_outbox.relay.read.survey import HELD_READ_LIMIT, Held
from firestore_outbox.relay.summary import Count

if TYPE_CHECKING:
    from firestore_outbox.relay.aggregates import Aggregates
    from firestore_outbox.relay.claim.partition_claims import PartitionLeases
    from firestore_outbox.relay.claim.partition_leases import ClaimedPartition
    from firestore_outbox.relay.config import RelayConfig
    from firestore_outbox.relay.pipeline import Pipeline
    from firestore_outbox.relay.store import LeaseStore


class Holdings:
    """Claims, renews and releases the run's partitions (`PartitionLeases`), keeping
    `aggregates` told what is held and what was lost."""

    def __init__(
        self,
        store: LeaseStore,
        leases: PartitionLeases,
        config: RelayConfig,
        aggregates: Aggregates,
        rng: random.Random,
    ) -> None:
        self._store = store
        self._leases = leases
        self._config = config
        self._aggregates = aggregates
        self._rng = rng
        self._holds_failed = config.partitions.holds_failed
        self._more_held = False
        self._held_counted_at: datetime.datetime | None = None
        # Partitions another invocation drains from `started` on count as visited.
        self.started: datetime.datetime | None = None
        self.claimed_at: dict[int, datetime.datetime] = {}  # partition -> its claim's time

    def visit_from_now(self) -> None:
        """Partitions another invocation drains from now on are visited for this run too."""
        self.started = self._store.clock.latest()

    def hold(self, held: Held) -> None:
        """Block the aggregates `held` holds; later claims go by when it was read."""
        self._more_held, self._held_counted_at = held.more, held.at
        self._aggregates.block(held.aggregates)

    def claim(self, run: Pipeline, visited: set[int]) -> list[ClaimedPartition]:
        """Claim up to a claim's worth of partitions not in `visited` (which grows)."""
        claimed = self._leases.claim(
            run.instance,
            self._config.partitions.per_claim,
            skip=visited,
            rng=self._rng,
            drained_since=self.started,
        )
        visited.update(h.partition for h in claimed)
        self.note_claimed(run, claimed)
        return claimed

    def note_claimed(self, run: Pipeline, claimed: list[ClaimedPartition]) -> None:
        """Count `claimed`, and block the aggregates held there that the run's look at
        held events may have missed (`_held_since_counted`)."""
        self.claimed_at.update((h.partition, h.update_time) for h in claimed)
        run.tally[Count.PARTITIONS_CLAIMED] += len(claimed)
        for h in claimed:
            if self._holds_failed and (self._more_held or self._held_since_counted(h)):
                query = held_events(self._store, h.partition, HELD_READ_LIMIT)
                found = read_retrying(
                    functools.partial(self._store.run, query),
                    until=run.deadline,
                    retried=counter(run.tally, Count.READ_RETRIES),
                )
                self._aggregates.block(str(d.get(AGGREGATE_ID)) for d in found)

    def _held_since_counted(self, claimed: ClaimedPartition) -> bool:
        """Whether another holder may have held an aggregate in `claimed`'s partition after
        the run counted none: only a partition's holder settles an event FAILED, so only a
        lease written since the count, or taken over from a holder, can hide one (a run
        that trusted its opening count delivered a later event past a head that another
        invocation failed meanwhile)."""
        before = claimed.claimed_from
        if before is None or self._held_counted_at is None:
            return True
        if before.created:
            return False  # created by this relay since: never claimed by anyone
        return before.expires is not None or before.update_time > self._held_counted_at

    def renew(self, run: Pipeline, claimed: list[ClaimedPartition]) -> list[ClaimedPartition]:
        """Renew the leases of `claimed` that are due; those still claimed (the others are
        lost: their settles would be refused)."""
        renewed = self._leases.renew_due(claimed, run.instance)
        kept = {h.partition for h in renewed}
        self._aggregates.lost.update(h.partition for h in claimed if h.partition not in kept)
        return renewed

    def release(
        self, claimed: dict[int, ClaimedPartition], done: list[int], *, unsettled_too: bool = False
    ) -> list[int]:
        """Release the partitions in `done` with nothing read left unsettled (all of them
        with `unsettled_too`: the run ends), taking them out of `claimed`; those released.
        Released as the drain goes, not at the run's end: nothing is left to read there."""
        aggregates = self._aggregates
        finished = [p for p in done if unsettled_too or not aggregates.open_in(p)]
        # A refused settle marks its partition lost, but another writer moving the event (a
        # per-event relay, an operator) refuses it too while the lease is still ours: released
        # like the others (the release is conditional: one taken over is left as it is), or
        # the partition would wait out the lease unread. Nothing says it was drained; nor
        # where an event was handed back unsent: a run that started before must still claim
        # it (drained, it skipped it, and the event waited for the next invocation).
        left = [p for p in finished if p in aggregates.lost or p in aggregates.unsent]
        drained = [p for p in finished if p not in left]
        for partitions, emptied in ((drained, not unsettled_too), (left, False)):
            if partitions:
                self._leases.release([claimed.pop(p) for p in partitions], drained=emptied)
        return finished
