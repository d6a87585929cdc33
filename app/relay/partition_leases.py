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
# When the partition was last released with nothing left to deliver (Firestore's time).
DRAINED = "drainedAt"


@dataclass(frozen=True)
class _Lease:
    """A lease document as last read or written: its update time, `expiresAt` (None:
    free) and `drainedAt`."""

    update_time: datetime.datetime
    expires: datetime.datetime | None
    drained: datetime.datetime | None


def _time(value: object) -> datetime.datetime | None:
    return value if isinstance(value, datetime.datetime) else None


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
        # Partition -> its lease document's update time, expiry (None: free) and when it
        # was last released drained (None: not known to be), as last read or written here.
        self._known: dict[int, _Lease] = {}

    def claim(
        self,
        holder: str,
        want: int,
        *,
        skip: Iterable[int] = (),
        rng: random.Random,
        drained_since: datetime.datetime | None = None,
    ) -> list[HeldPartition]:
        """Claim up to `want` free or expired partitions not in `skip`, looking from a
        random partition on so concurrent invocations spread out; those claimed. Only
        when every partition is held by others (or skipped) is the answer empty: one that
        lost every race for free partitions looks again. A partition released drained
        (`release(drained=True)`) after `drained_since` counts as skipped: another
        invocation drained it while this one ran (its run's visit is done)."""
        skipped = set(skip)
        for _ in range(_CLAIM_TRIES):
            free = self._free(skipped, want, rng, drained_since)
            if not free:
                return []
            held = self._hold(free, holder)
            if held:
                return held
            skipped.update(n for n, _ in free)  # taken by others just now
            for n, _ in free:
                self._known.pop(n, None)
        return []

    def _free(
        self,
        skipped: set[int],
        want: int,
        rng: random.Random,
        drained_since: datetime.datetime | None,
    ) -> list[tuple[int, datetime.datetime]]:
        # Each lease document is read once per PartitionLeases (one per run), when a claim
        # first needs it; later claims go by what was read, written or created since.
        # Acting on an old reading is safe: the claim is conditional on that update time,
        # so a lease changed meanwhile is refused (and forgotten, to be read again).
        wanted = [n for n in range(self.count) if n not in skipped]
        self._look([n for n in wanted if n not in self._known])
        now = self._store.clock.earliest()
        if not self._pick(wanted, want, now, drained_since):
            # Perhaps released meanwhile: only the leases seen held by others are read again.
            self._look([n for n in wanted if n in self._known])
        start = rng.randrange(self.count)
        order = [(start + step) % self.count for step in range(self.count)]
        free = self._pick([n for n in order if n not in skipped], want, now, drained_since)
        return [(n, self._known[n].update_time) for n in free]

    def _pick(
        self,
        partitions: list[int],
        want: int,
        now: datetime.datetime,
        drained_since: datetime.datetime | None,
    ) -> list[int]:
        """Up to `want` of `partitions` known free or surely expired, and not drained by
        another invocation since `drained_since`."""
        free = []
        for n in partitions:
            known = self._known.get(n)
            if known is None or (known.expires is not None and known.expires > now):
                continue  # not known, or held by someone, not surely expired
            drained = known.drained
            if drained is not None and drained_since is not None and drained > drained_since:
                continue
            free.append(n)
            if len(free) >= want:
                break
        return free

    def _look(self, partitions: list[int], *, create: bool = True) -> None:
        """Read the lease documents of `partitions` (creating the missing ones)."""
        if not partitions:
            return
        snapshots = self._read([self.collection.document(str(n)) for n in partitions])
        missing = []
        for n in partitions:
            snapshot = snapshots.get(n)
            if snapshot is None or not snapshot.exists:
                missing.append(n)
                self._known.pop(n, None)
                continue
            data = snapshot.to_dict() or {}
            expires, drained = data.get("expiresAt"), data.get(DRAINED)
            self._known[n] = _Lease(snapshot.update_time, _time(expires), _time(drained))
        if missing and create:  # the first run ever: every lease not read yet is created
            self._create_missing([n for n in range(self.count) if n not in self._known])
            if others := [n for n in partitions if n not in self._known]:
                self._look(others, create=False)  # created by another invocation meanwhile

    def renew(self, held: Sequence[HeldPartition], holder: str) -> list[HeldPartition]:
        """Extend the leases still held; a lease lost meanwhile is left out of the answer."""
        return self._hold([(h.partition, h.update_time) for h in held], holder)

    def renew_due(self, held: Sequence[HeldPartition], holder: str) -> list[HeldPartition]:
        """`renew()` once half the leases' time is gone (follow mode, long budgets), else
        `held` as it is."""
        if not held or min(h.valid_until for h in held) - time.monotonic() > self.duration / 2:
            return list(held)
        return self.renew(held, holder)

    def release(self, held: Sequence[HeldPartition], *, drained: bool = False) -> None:
        """Free the leases at once (a lease lost meanwhile is left as its new holder has it).
        `drained`: everything read from them was settled and their last page came back
        short; the lease then says when (`drainedAt`), so that invocations that started
        before do not claim them again for nothing (`claim(drained_since=...)`)."""
        fields: dict[str, Any] = {"holder": None, "expiresAt": None, "updatedAt": SERVER_TIMESTAMP}
        if drained:
            fields[DRAINED] = SERVER_TIMESTAMP
        changes = [
            Change(self.collection.document(str(h.partition)), h.update_time, fields) for h in held
        ]
        for h, written in zip(held, self._store.write(changes), strict=True):
            if written.applied and written.update_time is not None:
                when = written.update_time if drained else None
                self._known[h.partition] = _Lease(written.update_time, None, when)
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
        fields = {"holder": holder, "expiresAt": expires, "updatedAt": SERVER_TIMESTAMP}
        changes = [
            Change(self.collection.document(str(n)), update_time, fields)
            for n, update_time in partitions
        ]
        held = []
        for (n, _), written in zip(partitions, self._store.write(changes), strict=True):
            if written.applied and written.update_time is not None:
                held.append(HeldPartition(n, written.update_time, sent_at + self.duration))
                self._known[n] = _Lease(written.update_time, expires, None)
            else:
                self._known.pop(n, None)
        return held

    def _read(self, refs: list[Any]) -> dict[int, Any]:
        sent_at = time.monotonic()
        snapshots = {int(s.id): s for s in self._db.get_all(refs, timeout=self._timeout)}
        for snapshot in snapshots.values():
            self._store.clock.observe(snapshot.read_time, sent_at)
        return snapshots

    def _create_missing(self, partitions: list[int]) -> None:
        # Once per deployment: a free lease document for each partition nobody created yet,
        # in one commit (a round trip, not one per partition); the create's update time is
        # as good as a read. If another invocation created some meanwhile, the commit fails
        # as a whole and each is created on its own (one that exists is read when needed).
        def fields(n: int) -> dict[str, Any]:
            return {
                "partition": n,
                "holder": None,
                "expiresAt": None,
                "updatedAt": SERVER_TIMESTAMP,
            }

        batch = self._db.batch()
        for n in partitions:
            batch.create(self.collection.document(str(n)), fields(n))
        try:
            results = batch.commit(timeout=self._timeout)
        except google_exceptions.Conflict:
            results = []
            for n in partitions:
                with contextlib.suppress(google_exceptions.Conflict):  # created by another
                    result = self.collection.document(str(n)).create(
                        fields(n), timeout=self._timeout
                    )
                    self._known[n] = _Lease(result.update_time, None, None)
            return
        for n, result in zip(partitions, results, strict=True):
            self._known[n] = _Lease(result.update_time, None, None)

    @property
    def _timeout(self) -> float:
        return self._store.timeout
