"""`PartitionLeaseWrites`: the conditional writes on partition lease documents (claim,
renew, release), and what each teaches about its lease.

Every write is conditional on the lease document's update time last read or written here
(`firestore_outbox.firestore.cas`), so a lease changed meanwhile is refused, never overwritten; the
holder counts its lease from the moment its write left (monotonic), so it stops before anyone may
take over. Which partitions to claim is `PartitionLeases`' part
(`firestore_outbox.relay.partitioned.leases`).
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from firestore_outbox.firestore.cas import Change
from firestore_outbox.relay.partitioned.lease_documents import (
    KnownLease,
    hold_fields,
    release_fields,
)

if TYPE_CHECKING:
    from google.cloud.firestore import Client

    from firestore_outbox.relay.store import LeaseStore


# Renewed with this share of the lease left. A lease lasts at least two attempts
# (`RelayConfig`), so at half of it a head taken just then has one attempt's time left and
# no more: a publish that starts a moment later is refused, and its aggregate stops for the
# run. A tenth of the lease earlier leaves that moment room.
RENEW_WHEN_LEFT = 0.6


@dataclass(frozen=True)
class HeldPartition:
    """A partition this invocation holds: its lease document's update time (for the next
    conditional write) and the monotonic time until which the lease is surely its own;
    after a claim, the lease as it was just before (`claimed_from`: what another holder
    may have done there lately)."""

    partition: int
    update_time: datetime.datetime
    valid_until: float
    claimed_from: KnownLease | None = None


class PartitionLeaseWrites:
    """Renews and releases partition leases of `duration` seconds for `holder`s, and writes
    the claims `PartitionLeases` chooses; `_known` is what each write taught."""

    def __init__(
        self, db: Client, store: LeaseStore, collection: str, *, count: int, duration: float
    ) -> None:
        self._db = db
        self._store = store  # its conditional writes and Firestore's clock
        self.collection = db.collection(collection)
        self.count = count
        self.duration = duration
        # Partition -> its lease document's update time, expiry (None: free) and when it
        # was last released drained (None: not known to be), as last read or written here.
        self._known: dict[int, KnownLease] = {}

    def renew(self, held: Sequence[HeldPartition], holder: str) -> list[HeldPartition]:
        """Extend the leases still held; a lease lost meanwhile is left out of the answer."""
        return self._hold([(h.partition, h.update_time) for h in held], holder)

    def renew_due(self, held: Sequence[HeldPartition], holder: str) -> list[HeldPartition]:
        """`renew()` once a lease is due for it (`renewal_due`: follow mode, long budgets),
        else `held` as it is."""
        if not self.renewal_due(held):
            return list(held)
        return self.renew(held, holder)

    def renewal_due(self, held: Iterable[HeldPartition]) -> bool:
        """Whether a lease in `held` has `RENEW_WHEN_LEFT` of its time or less left. A drain
        busy publishing asks this without a Firestore call, so that it comes back to renew in
        time: a lease left to run out stops its deliveries (each must end before it)."""
        now = time.monotonic()
        return any(h.valid_until - now <= self.duration * RENEW_WHEN_LEFT for h in held)

    def release(self, held: Sequence[HeldPartition], *, drained: bool = False) -> None:
        """Free the leases at once (a lease lost meanwhile is left as its new holder has it).
        `drained`: everything read from them was settled and their last page came back
        short; the lease then says when (`drainedAt`), so that invocations that started
        before do not claim them again for nothing (`claim(drained_since=...)`)."""
        fields = release_fields(drained=drained)
        changes = [
            Change(self.collection.document(str(h.partition)), h.update_time, fields) for h in held
        ]
        for h, written in zip(held, self._store.write(changes), strict=True):
            if written.applied and written.update_time is not None:
                when = written.update_time if drained else None
                self._known[h.partition] = KnownLease(written.update_time, None, when)
            else:
                self._known.pop(h.partition, None)

    def _hold(
        self, partitions: Sequence[tuple[int, datetime.datetime]], holder: str
    ) -> list[HeldPartition]:
        if not partitions:
            return []
        sent_at = time.monotonic()
        # Firestore's time, never early, plus the duration: no one takes it back sooner.
        expires = self._store.clock.latest() + datetime.timedelta(seconds=self.duration)
        fields = hold_fields(holder, expires)
        changes = [
            Change(self.collection.document(str(n)), update_time, fields)
            for n, update_time in partitions
        ]
        held = []
        for (n, _), written in zip(partitions, self._store.write(changes), strict=True):
            if written.applied and written.update_time is not None:
                held.append(HeldPartition(n, written.update_time, sent_at + self.duration))
                self._known[n] = KnownLease(written.update_time, expires, None)
            else:
                self._known.pop(n, None)
        return held

    @property
    def _timeout(self) -> float:
        return self._store.timeout
