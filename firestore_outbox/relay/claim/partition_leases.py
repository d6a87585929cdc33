"""The partition lease documents: their fields, what is known of each, creating them, and
the conditional writes on them (`PartitionLeaseWrites`: claim, renew, release), with what each
write teaches about its lease.

One small document per partition (collection `RELAY_PARTITION_COLLECTION`, id = the
partition number): `partition`, `holder` (None: free), `expiresAt` (a time on Firestore's
clock), `updatedAt` and `drainedAt`; this module is the one place that names their fields.
Every write is conditional on the lease document's update time last read or written here
(`firestore_outbox.firestore.cas`), so a lease changed meanwhile is refused, never overwritten;
the holder counts its lease from the moment its write left (monotonic), so it stops before
anyone may take over. Which partitions to claim is `PartitionLeases`' part
(`firestore_outbox.relay.claim.partition_claims`).
"""

from __future__ import annotations

import contextlib
import datetime
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from google.api_core import exceptions as google_exceptions
from google.cloud.firestore import SERVER_TIMESTAMP

from firestore_outbox.firestore.cas import Change

if TYPE_CHECKING:
    from google.cloud.firestore import Client, CollectionReference

    from firestore_outbox.relay.store import LeaseStore

# Who holds the lease (None: free).
HOLDER = "holder"
# When the partition was last released with nothing left to deliver (Firestore's time).
DRAINED = "drainedAt"


def _time(value: object) -> datetime.datetime | None:
    return value if isinstance(value, datetime.datetime) else None


@dataclass(frozen=True)
class KnownLease:
    """A lease document as last read or written: its update time, `expiresAt` (None:
    free) and `drainedAt`; `created`: created by this relay, never held since."""

    update_time: datetime.datetime
    expires: datetime.datetime | None
    drained: datetime.datetime | None
    created: bool = False

    @classmethod
    def read(cls, snapshot: Any) -> KnownLease:
        """The lease an existing document's `snapshot` shows."""
        data = snapshot.to_dict() or {}
        expires, drained = data.get("expiresAt"), data.get(DRAINED)
        return cls(snapshot.update_time, _time(expires), _time(drained))

    def claimable(self, now: datetime.datetime, drained_since: datetime.datetime | None) -> bool:
        """Free or surely expired at `now` (`ServerClock.earliest()`), and not released
        drained by another invocation since `drained_since`."""
        if self.expires is not None and self.expires > now:
            return False  # held by someone, not surely expired
        drained = self.drained
        return not (drained is not None and drained_since is not None and drained > drained_since)


def hold_fields(holder: str, expires: datetime.datetime) -> dict[str, Any]:
    """The fields of a claim or renewal by `holder` until `expires`."""
    return {HOLDER: holder, "expiresAt": expires, "updatedAt": SERVER_TIMESTAMP}


def release_fields(*, drained: bool) -> dict[str, Any]:
    """The fields of a release; `drained` also stamps `drainedAt` with Firestore's time."""
    fields: dict[str, Any] = {HOLDER: None, "expiresAt": None, "updatedAt": SERVER_TIMESTAMP}
    if drained:
        fields[DRAINED] = SERVER_TIMESTAMP
    return fields


def create_free(
    db: Client, collection: CollectionReference, partitions: list[int], *, timeout: float
) -> dict[int, KnownLease]:
    """Create a free lease document for each of `partitions`; those this call created."""

    # Once per deployment: a free lease document for each partition nobody created yet,
    # in one commit (a round trip, not one per partition); the create's update time is
    # as good as a read. If another invocation created some meanwhile, the commit fails
    # as a whole and each is created on its own (one that exists is read when needed).
    def fields(n: int) -> dict[str, Any]:
        return {
            "partition": n,
            HOLDER: None,
            "expiresAt": None,
            "updatedAt": SERVER_TIMESTAMP,
        }

    batch = db.batch()
    for n in partitions:
        batch.create(collection.document(str(n)), fields(n))
    created: dict[int, KnownLease] = {}
    try:
        results = batch.commit(timeout=timeout)
    except google_exceptions.Conflict:
        for n in partitions:
            with contextlib.suppress(google_exceptions.Conflict):  # created by another
                result = collection.document(str(n)).create(fields(n), timeout=timeout)
                created[n] = KnownLease(result.update_time, None, None, created=True)
        return created
    for n, result in zip(partitions, results, strict=True):
        created[n] = KnownLease(result.update_time, None, None, created=True)
    return created


# Renewed with this share of the lease left. A lease lasts at least two attempts
# (`RelayConfig`), so at half of it a head taken just then has one attempt's time left and
# no more: a publish that starts a moment later is refused, and its aggregate stops for the
# run. A tenth of the lease earlier leaves that moment room.
RENEW_WHEN_LEFT = 0.6


@dataclass(frozen=True)
class ClaimedPartition:
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

    def renew(self, claimed: Sequence[ClaimedPartition], holder: str) -> list[ClaimedPartition]:
        """Extend the leases still claimed; a lease lost meanwhile is left out of the answer."""
        return self._hold([(h.partition, h.update_time) for h in claimed], holder)

    def renew_due(self, claimed: Sequence[ClaimedPartition], holder: str) -> list[ClaimedPartition]:
        """`renew()` once a lease is due for it (`renewal_due`: follow mode, long budgets),
        else `claimed` as it is."""
        if not self.renewal_due(claimed):
            return list(claimed)
        return self.renew(claimed, holder)

    def renewal_due(self, claimed: Iterable[ClaimedPartition]) -> bool:
        """Whether a lease in `claimed` has `RENEW_WHEN_LEFT` of its time or less left. A drain
        busy publishing asks this without a Firestore call, so that it comes back to renew in
        time: a lease left to run out stops its deliveries (each must end before it)."""
        now = time.monotonic()
        return any(h.valid_until - now <= self.duration * RENEW_WHEN_LEFT for h in claimed)

    def release(self, claimed: Sequence[ClaimedPartition], *, drained: bool = False) -> None:
        """Free the leases at once (a lease lost meanwhile is left as its new holder has it).
        `drained`: everything read from them was settled and their last page came back
        short; the lease then says when (`drainedAt`), so that invocations that started
        before do not claim them again for nothing (`claim(drained_since=...)`)."""
        fields = release_fields(drained=drained)
        changes = [
            Change(self.collection.document(str(h.partition)), h.update_time, fields)
            for h in claimed
        ]
        for h, written in zip(claimed, self._store.write(changes), strict=True):
            if written.applied and written.update_time is not None:
                when = written.update_time if drained else None
                self._known[h.partition] = KnownLease(written.update_time, None, when)
            else:
                self._known.pop(h.partition, None)

    def _hold(
        self, partitions: Sequence[tuple[int, datetime.datetime]], holder: str
    ) -> list[ClaimedPartition]:
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
                held.append(ClaimedPartition(n, written.update_time, sent_at + self.duration))
                self._known[n] = KnownLease(written.update_time, expires, None)
            else:
                self._known.pop(n, None)
        return held

    @property
    def _timeout(self) -> float:
        return self._store.timeout
