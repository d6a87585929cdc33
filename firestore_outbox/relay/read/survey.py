"""What a partitioned run looks at before it claims anything, at a cost that does not grow
with the backlog: one read of a few open events (all an idle outbox costs; with few events
open, which partitions have none, so they are not claimed for nothing; which partitions have
some, so the first claim can read their pages while it claims), and whether any of those
need healing (then the events without a usable partition are found, to be delivered and
healed in their settles: `firestore_outbox.relay.read.unhealed`). Which aggregates
are held (`read_held`) is asked once there is something to deliver, with the first claim.

Nothing here counts the backlog: a run delivers from its first page before anything that
costs reads or time in proportion to it. With a backlog, whether events elsewhere need
healing, and how many more invocations to start, are found beside the drain once its first
page is out (`after_first_page`), by counts the fan-out bounds.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from google.cloud.firestore import FieldFilter

from firestore_outbox.fields import AGGREGATE_ID
from firestore_outbox.firestore.reads import counter, read_retrying
from firestore_outbox.partitions import HELD, PARTITION, SEQUENCE
from firestore_outbox.relay.fan_out import wanted
from firestore_outbox.relay.healing import needs_heal
from firestore_outbox.relay.outcomes import count_refused
from firestore_outbox.relay.read.scan import Healed, heal_unpartitioned, open_query
from firestore_outbox.relay.read.unhealed import Unhealed, find_unhealed
from firestore_outbox.relay.summary import Count, Tally

if TYPE_CHECKING:
    from firestore_outbox.relay.config import RelayConfig
    from firestore_outbox.relay.fan_out import FanOut
    from firestore_outbox.relay.store import LeaseStore

# Documents read per run to find events without a partition.
HEAL_SCAN_LIMIT = 1000
# Documents read per run to find them when the survey saw some: delivered as they are, so a
# run takes more of them than it heals with writes of their own.
UNHEALED_SCAN_LIMIT = 5000
# Held events read per run: more than this many held at once is an outage to fix.
HELD_READ_LIMIT = 1000


@dataclass(frozen=True)
class Survey:
    """Open events seen (0: nothing to do; `backlog`: at least as many as were read), the
    partitions they lie in (`partitions`) and those known to have none (`empty`)."""

    open_events: int
    empty: set[int] = field(default_factory=set)
    # Where the events read lie (those with a usable partition): the first claim's pick.
    partitions: frozenset[int] = frozenset()
    # More open events than the survey read: healing elsewhere is looked for beside the drain.
    backlog: bool = False
    # Found without a usable partition (the survey saw some): delivered by their partitions.
    unhealed: Unhealed | None = None


@dataclass(frozen=True)
class Held:
    """The aggregates held, wherever their head is (`aggregates`), whether more events hold
    than were read (`more`: look per partition too), and when they were read (`at`; None:
    not read, nothing holds with this configuration)."""

    aggregates: list[str] = field(default_factory=list)
    more: bool = False
    at: datetime.datetime | None = None


def survey(store: LeaseStore, config: RelayConfig, tally: Tally, *, until: float) -> Survey:
    """Look, and heal what the look found (see the module docstring); counts what it healed
    into `tally`. The first read is also the run's first reading of Firestore's clock; it
    is sent again while the budget (`until`) lasts (`read_retrying`)."""
    count = config.partitions.count
    limit = 2 * count
    query = open_query(store).select([PARTITION, SEQUENCE]).limit(limit)
    seen, _ = read_retrying(
        lambda: store.run_at(query), until=until, retried=counter(tally, Count.READ_RETRIES)
    )
    if not seen:
        return Survey(0)
    backlog = len(seen) >= limit
    heal = [needs_heal(d.to_dict() or {}, count) for d in seen]
    healing = any(heal)
    unhealed = find_more(store, config, tally) if healing else None
    lying = frozenset(int(d.get(PARTITION)) for d, h in zip(seen, heal, strict=True) if not h)
    # With a backlog most partitions have some; else the read saw every open event (and
    # where it lies, unless it was just healed into a partition).
    empty: set[int] = set()
    if not (backlog or healing):
        empty = set(range(count)) - {d.get(PARTITION) for d in seen}
    return Survey(len(seen), empty, lying, backlog, unhealed)


def read_held(store: LeaseStore, *, until: float, tally: Tally) -> Held:
    """One read of the events that hold their aggregates (sent again while the budget,
    `until`, lasts). A hold is its aggregate's wherever its event lies: read from the whole
    collection, not per partition claimed (with another RELAY_PARTITIONS, the head a hold
    waits for lies in a partition its aggregate's events no longer go to)."""
    query = (
        store.collection.where(filter=FieldFilter(HELD, "==", True))
        .select([AGGREGATE_ID])
        .limit(HELD_READ_LIMIT)
    )
    found, at = read_retrying(
        lambda: store.run_at(query), until=until, retried=counter(tally, Count.READ_RETRIES)
    )
    return Held([str(d.get(AGGREGATE_ID)) for d in found], len(found) >= HELD_READ_LIMIT, at)


def find_more(store: LeaseStore, config: RelayConfig, tally: Tally) -> Unhealed:
    """Find the events without a usable partition (`relay.read.unhealed`), counting them
    into `tally`; a run that has delivered what one scan found looks again while the last
    look found some and stopped at its limit."""
    found = find_unhealed(store, config.partitions.count, scan_limit=UNHEALED_SCAN_LIMIT)
    _tally_heal(tally, Healed(found.found, 0, found.parked, found.refused))
    return found


def after_first_page(
    store: LeaseStore,
    config: RelayConfig,
    looked: Survey,
    tally: Tally,
    fan_out: FanOut | None,
    instance: str,
    *,
    until: float,
) -> None:
    """What a backlog calls for once the drain has its first page: more invocations (a count
    bounded by what they can take), and healing events the survey's read did not see. Their
    counts, slow on a large backlog, are sent again while the budget (`until`) lasts."""
    retried = counter(tally, Count.READ_RETRIES)
    if fan_out is not None:
        room = min(config.fan_out.max, config.partitions.count)
        cap = config.fan_out.events * (room + 1)
        capped = open_query(store).limit(cap)
        open_count, _ = read_retrying(
            lambda: store.count_at(capped, None), until=until, retried=retried
        )
        if more := wanted(open_count, config.fan_out, config.partitions):
            tally[Count.FANNED_OUT] += fan_out.start(more, instance)
    if looked.backlog and looked.unhealed is None:  # (found already: healed as delivered)
        count = config.partitions.count
        healed = read_retrying(
            lambda: heal_unpartitioned(store, count, scan_limit=HEAL_SCAN_LIMIT),
            until=until,
            retried=retried,
        )
        _tally_heal(tally, healed)


def _tally_heal(tally: Tally, found: Healed) -> None:
    tally[Count.UNSCHEDULED] += found.missing
    tally[Count.HEALED] += found.healed
    tally[Count.POISONED] += found.parked
    tally[Count.FAILED] += found.parked
    for event_id, written in found.refused:  # a heal that would pass 1 MiB, say
        count_refused(tally, event_id, 0, written, "heal")
