"""`PartitionLeases`: which invocation drains which partition, by compare-and-set.

One small document per partition (collection `RELAY_PARTITION_COLLECTION`, id = the
partition number) names its `holder` and `expiresAt`, a time on Firestore's clock. An
invocation reads the lease documents, and claims free or expired ones with writes
conditional on the update time it read (`app.cas`):

    A: read p3@T0 (free) ─ claim(p3 if T0) ok, p3@T1 ── drain p3 ── release(p3 if T1) ok
    B: read p3@T0 (free) ───── claim(p3 if T0) LOST: A holds it; B claims other partitions

Expiry is judged with `ServerClock.earliest()`, so a partition is taken over only once its
lease has surely run out; the holder counts its own lease from the moment its claim left
(monotonic), so it stops before anyone may take over. A holder that lost its partition
anyway (stalled past the expiry) cannot settle what it read: every settle is conditional on
the event's read update time, and the new holder's settle moves it on.
"""

from __future__ import annotations

import contextlib
import datetime
import random
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from google.api_core import exceptions as google_exceptions
from google.cloud.firestore import SERVER_TIMESTAMP

from app.cas import Change

if TYPE_CHECKING:
    from google.cloud.firestore import Client

    from app.relay.leases import LeaseStore


_CLAIM_TRIES = 3


@dataclass(frozen=True)
class HeldPartition:
    """A partition this invocation holds: its lease document's update time (for the next
    conditional write) and the monotonic time until which the lease is surely its own."""

    partition: int
    update_time: datetime.datetime
    valid_until: float


class PartitionLeases:
    """Claims, renews and releases partition leases of `duration` seconds for `holder`s."""

    def __init__(
        self, db: Client, store: LeaseStore, collection: str, *, count: int, duration: float
    ) -> None:
        self._db = db
        self._store = store  # its conditional writes and Firestore's clock
        self.collection = db.collection(collection)
        self.count = count
        self.duration = duration

    def claim(
        self, holder: str, want: int, *, skip: Iterable[int] = (), rng: random.Random
    ) -> list[HeldPartition]:
        """Claim up to `want` free or expired partitions not in `skip`, looking from a
        random partition on so concurrent invocations spread out; those claimed. Only
        when every partition is held by others (or skipped) is the answer empty: one that
        lost every race for free partitions looks again."""
        skipped = set(skip)
        for _ in range(_CLAIM_TRIES):
            free = self._free(skipped, want, rng)
            if not free:
                return []
            held = self._hold(free, holder)
            if held:
                return held
            skipped.update(n for n, _ in free)  # taken by others just now
        return []

    def _free(
        self, skipped: set[int], want: int, rng: random.Random
    ) -> list[tuple[int, datetime.datetime]]:
        # Only the partitions it may claim: a run visiting them all reads each lease once.
        wanted = [n for n in range(self.count) if n not in skipped]
        refs = [self.collection.document(str(n)) for n in wanted]
        snapshots = self._read(refs)
        if any(n not in snapshots or not snapshots[n].exists for n in wanted):
            self._create_missing(snapshots)
            snapshots = self._read(refs)
        now = self._store.clock.earliest()
        start = rng.randrange(self.count)
        free = []
        for step in range(self.count):
            n = (start + step) % self.count
            snapshot = snapshots.get(n)
            if n in skipped or snapshot is None or not snapshot.exists:
                continue
            expires = snapshot.get("expiresAt")
            if isinstance(expires, datetime.datetime) and expires > now:
                continue  # held by someone, not surely expired
            free.append(snapshot)
            if len(free) >= want:
                break
        return [(int(s.id), s.update_time) for s in free]

    def renew(self, held: Sequence[HeldPartition], holder: str) -> list[HeldPartition]:
        """Extend the leases still held; a lease lost meanwhile is left out of the answer."""
        return self._hold([(h.partition, h.update_time) for h in held], holder)

    def renew_due(self, held: Sequence[HeldPartition], holder: str) -> list[HeldPartition]:
        """`renew()` once half the leases' time is gone (follow mode, long budgets), else
        `held` as it is."""
        if not held or min(h.valid_until for h in held) - time.monotonic() > self.duration / 2:
            return list(held)
        return self.renew(held, holder)

    def release(self, held: Sequence[HeldPartition]) -> None:
        """Free the leases at once (a lease lost meanwhile is left as its new holder has it)."""
        changes = [
            Change(
                self.collection.document(str(h.partition)),
                h.update_time,
                {"holder": None, "expiresAt": None, "updatedAt": SERVER_TIMESTAMP},
            )
            for h in held
        ]
        self._store.write(changes)

    def _hold(
        self, partitions: Sequence[tuple[int, datetime.datetime]], holder: str
    ) -> list[HeldPartition]:
        if not partitions:
            return []
        sent_at = time.monotonic()
        # Firestore's time, never early, plus the duration: no one takes it back sooner.
        expires = self._store.clock.latest() + datetime.timedelta(seconds=self.duration)
        fields = {"holder": holder, "expiresAt": expires, "updatedAt": SERVER_TIMESTAMP}
        changes = [
            Change(self.collection.document(str(n)), update_time, fields)
            for n, update_time in partitions
        ]
        held = []
        for (n, _), written in zip(partitions, self._store.write(changes), strict=True):
            if written.applied and written.update_time is not None:
                held.append(HeldPartition(n, written.update_time, sent_at + self.duration))
        return held

    def _read(self, refs: list[Any]) -> dict[int, Any]:
        sent_at = time.monotonic()
        snapshots = {int(s.id): s for s in self._db.get_all(refs, timeout=self._timeout)}
        for snapshot in snapshots.values():
            self._store.clock.observe(snapshot.read_time, sent_at)
        return snapshots

    def _create_missing(self, snapshots: dict[int, object]) -> None:
        # Once per deployment: a free lease document for each partition nobody created yet.
        for n in range(self.count):
            snapshot = snapshots.get(n)
            if snapshot is None or not getattr(snapshot, "exists", False):
                with contextlib.suppress(google_exceptions.Conflict):  # created by another
                    self.collection.document(str(n)).create(
                        {
                            "partition": n,
                            "holder": None,
                            "expiresAt": None,
                            "updatedAt": SERVER_TIMESTAMP,
                        },
                        timeout=self._timeout,
                    )

    @property
    def _timeout(self) -> float:
        return self._store.timeout
