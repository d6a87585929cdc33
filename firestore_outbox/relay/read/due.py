"""Due events for per-event leases (`RELAY_LEASES=event`): abandoned leases first, then
what is due now, on Firestore's clock."""

from __future__ import annotations

import datetime
import math
from typing import TYPE_CHECKING

from firestore_outbox.fields import NEXT_ATTEMPT_AT
from firestore_outbox.firestore.reads import counter, read_retrying
from firestore_outbox.relay.summary import Count, Tally

if TYPE_CHECKING:
    from firestore_outbox.firestore.raw import DueDocument
    from firestore_outbox.relay.config import RelayConfig
    from firestore_outbox.relay.store import LeaseStore


def look_for_due(
    store: LeaseStore,
    config: RelayConfig,
    tally: Tally,
    *,
    look_for_abandoned: bool,
    until: float = math.inf,
) -> tuple[list[DueDocument], int]:
    """Due events, abandoned leases first; and how many were abandoned. "Now" is
    Firestore's, never ahead of it: a lease is taken back only once it has surely expired.
    A query that fails is sent again while the budget (`until`) lasts (`read_retrying`)."""
    now = store.clock.earliest()
    limit = config.batch_size
    lock = datetime.timedelta(seconds=config.lock_timeout_seconds)
    snapshots: list[DueDocument] = []
    if look_for_abandoned:
        snapshots += read_retrying(
            lambda: store.abandoned(now - lock, limit),
            until=until,
            retried=counter(tally, Count.READ_RETRIES),
        )
    abandoned = len(snapshots)
    if abandoned < limit:
        wanted = limit - abandoned
        pending = read_retrying(
            lambda: store.pending(now, wanted),
            until=until,
            retried=counter(tally, Count.READ_RETRIES),
        )
        if pending:
            oldest = pending[0].get(NEXT_ATTEMPT_AT)
            lag_ms = round((now - oldest).total_seconds() * 1000)
            tally[Count.LAG_MS] = max(tally[Count.LAG_MS], lag_ms)
        snapshots += pending
    return snapshots, abandoned
