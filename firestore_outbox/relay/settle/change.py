"""One lease's settle: the conditional write its publish result becomes (`settle_change`),
and how the write's outcome is counted (`count_settled`).

The settler (`firestore_outbox.relay.settle.settler`) batches these into group commits; what each
settle writes is decided here, per lease, from the fields `firestore_outbox.relay.transitions`
computes.
"""

from __future__ import annotations

import datetime
import logging
import random

from firestore_outbox.firestore.cas import Change, WriteOutcome, Written
from firestore_outbox.observability.logs import log_event
from firestore_outbox.publishers.base import Outcome, PublishResult, error_class
from firestore_outbox.relay.config import RelayConfig
from firestore_outbox.relay.lease import Lease, Settled
from firestore_outbox.relay.outcomes import count_refused
from firestore_outbox.relay.summary import Count, Tally
from firestore_outbox.relay.transitions import one_write_settlement, settlement

# The settler's name, as before this module was split from it: log queries filter on it.
logger = logging.getLogger("firestore_outbox.relay.settling.settler")


def settle_change(
    lease: Lease,
    result: PublishResult | None,
    config: RelayConfig,
    *,
    instance: str,
    now: datetime.datetime,
    rng: random.Random,
) -> tuple[Settled, Change]:
    """The settle (`Settled`) `result` calls for and its write,
    conditional on the lease's update time; a failed delivery is logged. `now` is
    Firestore's time (a retry's `nextAttemptAt` counts from it); `instance` names the relay
    in a one-write settle (`Lease.one_write`)."""
    if lease.one_write:
        kind, fields = one_write_settlement(
            lease.attempt, result, config, instance=instance, now=now, rng=rng
        )
        # What the lease's change carries (healing an event found without a partition,
        # `firestore_outbox.relay.read.unhealed`) goes in the same write.
        fields = {**(lease.change.fields or {}), **fields}
    else:
        kind, fields = settlement(lease.attempt, result, config, now=now, rng=rng)
    if result is not None and result.outcome is not Outcome.DELIVERED:
        log_event(
            logger,
            logging.WARNING,
            "relay.delivery_failed",
            f"event {lease.event.event_id} attempt {lease.attempt}: "
            f"{result.error or result.outcome.value}, {kind}",
            eventId=lease.event.event_id,
            attempt=lease.attempt,
            errorClass=error_class(result),
            error=result.error,
            outcome=kind,
        )
    return kind, Change(lease.change.ref, lease.change.expected_update_time, fields)


def count_settled(tally: Tally, lease: Lease, kind: Settled, written: Written | None) -> None:
    """Count a settle of `kind` by its write's outcome (None: not settled in time) into
    `tally`; a lost lease is logged, a refused write counted and logged as such."""
    event_id = lease.event.event_id
    if written is None or written.transient:
        tally[Count.UNSETTLED] += 1
    elif written.applied:
        tally[kind.tallied] += 1
    elif written.outcome is WriteOutcome.LOST:
        tally[Count.LOST_LEASES] += 1
        log_event(
            logger,
            logging.WARNING,
            "relay.lease_lost",
            f"lost the lease on event {event_id} before settling it as {kind}; left as it is",
            eventId=event_id,
            attempt=lease.attempt,
            outcome=kind,
        )
    else:
        count_refused(tally, event_id, lease.attempt, written, kind)
