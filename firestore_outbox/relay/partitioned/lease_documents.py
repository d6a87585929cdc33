"""The partition lease documents: their fields, what is known of each, and creating them.

One small document per partition (collection `RELAY_PARTITION_COLLECTION`, id = the
partition number): `partition`, `holder` (None: free), `expiresAt` (a time on Firestore's
clock), `updatedAt` and `drainedAt`. `PartitionLeases` (`firestore_outbox.relay.partitioned.leases`)
claims, renews and releases them; this module is the one place that names their fields.
"""

from __future__ import annotations

import contextlib
import datetime
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from google.api_core import exceptions as google_exceptions
from google.cloud.firestore import SERVER_TIMESTAMP

if TYPE_CHECKING:
    from google.cloud.firestore import Client, CollectionReference

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
