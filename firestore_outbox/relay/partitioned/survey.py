"""What a partitioned run looks at before it claims anything, at a cost that does not grow
with the backlog: how many events are open (all an idle outbox costs), which of them need
healing (`firestore_outbox.relay.partitioned.scan`), whether any aggregate is held, and, when few
events are open, which partitions have none (so they are not claimed for nothing)."""

from __future__ import annotations

import datetime
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from google.cloud.firestore import FieldFilter

from firestore_outbox.fields import STATUS
from firestore_outbox.relay.outcomes import count_refused
from firestore_outbox.relay.partitioned.partitions import HELD, PARTITION
from firestore_outbox.relay.partitioned.scan import OPEN, heal_unpartitioned
from firestore_outbox.relay.partitioned.settings import FailedHead

if TYPE_CHECKING:
    from firestore_outbox.relay.config import RelayConfig
    from firestore_outbox.relay.store import LeaseStore

# Documents read per run to find events without a partition (only when the counts differ).
HEAL_SCAN_LIMIT = 1000


@dataclass(frozen=True)
class Survey:
    """Open events (0: nothing to do), whether any aggregate is held, and the partitions
    known to have no open event."""

    open_events: int
    anything_held: bool = False
    empty: set[int] = field(default_factory=set)
    # When held events were counted (None: not counted, nothing holds with this config).
    held_counted_at: datetime.datetime | None = None


def survey(store: LeaseStore, config: RelayConfig, tally: Counter[str]) -> Survey:
    """Count, heal and look (see the module docstring); counts what it healed into `tally`.
    The first count is also the run's first reading of Firestore's clock."""
    open_count, read_time = store.count_at(_open(store), None)
    if not open_count:
        return Survey(0)
    found = heal_unpartitioned(
        store, config.partitions, scan_limit=HEAL_SCAN_LIMIT, counted=(open_count, read_time)
    )
    tally["unscheduled"] += found.missing
    tally["healed"] += found.healed
    tally["poisoned"] += found.parked
    tally["failed"] += found.parked
    for event_id, written in found.refused:  # a heal that would pass 1 MiB, say
        count_refused(tally, event_id, 0, written, "heal")
    held, held_at = False, None
    if config.ordered and config.failed_head is FailedHead.HOLD:
        # One read here instead of a query per partition drained.
        count, held_at = store.count_at(
            store.collection.where(filter=FieldFilter(HELD, "==", True)), None
        )
        held = count > 0
    return Survey(open_count, held, _empty_partitions(store, config, open_count), held_at)


def _empty_partitions(store: LeaseStore, config: RelayConfig, open_count: int) -> set[int]:
    """With a few open events (follow mode, a quiet timer tick), the partitions that have
    none, from one query reading just their `partition` (a read per event, at most two per
    partition): cheaper than claiming and releasing every partition (two writes each)."""
    limit = 2 * config.partitions
    if open_count >= limit:
        return set()  # a backlog: most partitions have some
    found = store.run(_open(store).select([PARTITION]).limit(limit))
    if len(found) >= limit:
        return set()  # more came meanwhile
    return set(range(config.partitions)) - {d.get(PARTITION) for d in found}


def _open(store: LeaseStore) -> Any:
    return store.collection.where(filter=FieldFilter(STATUS, "in", OPEN))
