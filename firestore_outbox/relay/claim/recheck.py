"""The re-check after a release, which keeps a nudge from waiting for the next timer tick.

The hazard: an event is committed into partition p while invocation H holds p and has
already read p's last page; the nudge's invocation N finds p held and leaves; H releases p
without having seen the event. So, with nudges on (`RelayConfig.recheck_released`), a holder
that releases a partition drained reads it once more, AFTER the release:

    H: last page of p ─ release(p) ─ re-check: p's open events after what H read ─ none: done
                                                         └ some: claim p again, read on
    N (nudged after the commit): claims p if free; if held, leaves: the holder's release,
    later than N's look and so than the commit, is followed by a re-check that sees it

Any event committed before H's re-check is found by it (its query runs later), and one
committed after it finds p free (released before the re-check), so its nudge's invocation
claims p and reads it. If H's claim after a re-check loses to another invocation, that one
held p after the re-check, so it releases later and its own re-check sees the event.
A re-check that fails is sent again while the budget lasts (`firestore_outbox.firestore.reads`).
Cost: one query per partition released drained, a read when it finds nothing (Firestore
bills one read for an empty query), and a claim and a page only when it finds something.

A nudged run with a way to nudge (`hand_off`) does not claim again: it nudges the partitions
its re-check found, and ends. Claiming again made a nudged run a chain (release, re-check,
claim, page, publish, settle, release...) that lasted as long as events kept coming into its
partitions, up to its whole budget: in-process (`OUTBOX_NUDGE=process`) the next nudge waited
for it, and on Function Compute it held an instance while nudges queued for one. The nudge it
sends is sent after the release and the re-check, so the invocation it starts reads the
partition after the event; dropped, it costs latency only, as any nudge (the timer delivers).
"""

from __future__ import annotations

import datetime
import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from google.cloud.firestore import FieldFilter

from firestore_outbox.fields import CREATED_AT
from firestore_outbox.firestore.reads import counter, read_retrying
from firestore_outbox.relay.read.scan import open_events
from firestore_outbox.relay.summary import Count

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

    from firestore_outbox.firestore.raw import Found
    from firestore_outbox.relay.claim.partition_claims import PartitionLeases
    from firestore_outbox.relay.claim.partition_leases import ClaimedPartition
    from firestore_outbox.relay.pipeline import Pipeline
    from firestore_outbox.relay.read.page_reads import PageReads
    from firestore_outbox.relay.store import LeaseStore

_rng = random.Random()


def recheck(
    store: LeaseStore,
    leases: PartitionLeases,
    run: Pipeline,
    released: list[int],
    reads: PageReads,
    pages: ThreadPoolExecutor,
    claimed_at: dict[int, datetime.datetime],
    hand_off: Callable[[frozenset[int]], object] | None = None,
) -> list[ClaimedPartition]:
    """Read each partition just `released` drained once more (at once, on the `pages`
    pool); claim again those with an event this run did not read, to read on there, or,
    with `hand_off`, nudge them (`hand_off(partitions)`) and claim nothing."""
    queries = [unread_events(store, p, reads.last.get(p), claimed_at[p]) for p in released]

    def read(query: Any) -> list[Found]:  # sent again while the budget lasts
        return read_retrying(
            lambda: store.run(query),
            until=run.deadline,
            retried=counter(run.tally, Count.READ_RETRIES),
        )

    found = list(pages.map(read, queries))
    again = {p for p, docs in zip(released, found, strict=True) if docs}
    if not again:
        return []
    if hand_off is not None:
        hand_off(frozenset(again))
        run.tally[Count.HANDED_OFF] += len(again)
        return []
    skip = set(range(leases.count)) - again
    claimed = leases.claim(run.instance, len(again), skip=skip, rng=_rng)
    for held in claimed:
        reads.resume(held.partition)
    run.tally[Count.PARTITIONS_CLAIMED] += len(claimed)
    return claimed


def unread_events(
    store: LeaseStore, partition: int, last: Found | None, claimed_at: datetime.datetime
) -> Any:
    """The query for one open event of `partition` this run did not read: after `last`, the
    last event it read there, or, when it read none, committed since its claim at
    `claimed_at` (anything committed before was visible to its first page)."""
    if last is not None:
        return open_events(store, partition, 1, last)
    query = open_events(store, partition, 1, None)
    return query.where(filter=FieldFilter(CREATED_AT, ">=", claimed_at))
