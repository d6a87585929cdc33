"""`Lease`: an outbox event this relay has claimed, from its claim until it is settled, and
`OnSettled`, how a caller hears how each one ended.

Claiming makes them (`relay.claim.event_lease` by a write, `relay.publish.head_sender` under a
partition lease), the publishing pool sends them and the settler (`relay.settle.settler`)
settles them; they live below all three so that each can name them without importing the
others."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from firestore_outbox.firestore.cas import Change, Written
from firestore_outbox.relay.events import OutboxEvent
from firestore_outbox.relay.summary import Count


class Settled(str, enum.Enum):
    """How a lease ended, as the settler tells it (`OnSettled`): the settle the attempt
    called for (`firestore_outbox.relay.transitions.settlement`), or `UNSETTLED` when no settle
    landed in time."""

    PROCESSED = "processed"
    RETRIED = "retried"
    FAILED = "failed"
    RELEASED = "released"  # handed back unsent, or the channel is broken: no attempt spent
    UNSETTLED = "unsettled"

    def __str__(self) -> str:
        return self.value

    @property
    def tallied(self) -> Count:
        """What a run counts for it."""
        return Count(self.value)


@dataclass(frozen=True)
class Lease:
    """An event this relay has claimed: settle it only if it is still at `change`'s update
    time."""

    event: OutboxEvent
    change: Change
    leased_at: float  # monotonic time just before the lease was written
    attempt: int
    # Read under a partition lease: no lease write came before, so the settle is the event's
    # one write, and an event never sent needs no write at all.
    one_write: bool = False
    # The monotonic time its partition's lease now runs to, renewals included (None: the
    # lease runs `RELAY_LOCK_TIMEOUT_SECONDS` from `leased_at`). An event waiting in the
    # publishing pool's queue goes under the lease as it is when its turn comes.
    expires: Callable[[], float] | None = None


# Told how each lease ended: its kind ("processed", "retried", ...) and the write's outcome
# (None when nothing was written or it could not be settled in time).
OnSettled = Callable[[Lease, Settled, "Written | None"], None]
