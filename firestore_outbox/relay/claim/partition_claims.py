"""`PartitionLeases`: which invocation drains which partition, by compare-and-set.

One small document per partition (collection `RELAY_PARTITION_COLLECTION`, id = the
partition number; its fields and the writes on it:
`firestore_outbox.relay.claim.partition_leases`) names its `holder` and `expiresAt`, a
time on Firestore's clock. An invocation reads the lease documents, and claims free or expired
ones with writes conditional on the update time it read (`firestore_outbox.firestore.cas`):

    A: read p3@T0 (free) ─ claim(p3 if T0) ok, p3@T1 ── drain p3 ── release(p3 if T1) ok
    B: read p3@T0 (free) ───── claim(p3 if T0) LOST: A holds it; B claims other partitions

Expiry is judged with `ServerClock.earliest()`, so a partition is taken over only once its
lease has surely run out; the holder counts its own lease from the moment its claim left
(monotonic), so it stops before anyone may take over. A holder that lost its partition
anyway (stalled past the expiry) cannot settle what it read: every settle is conditional on
the event's read update time, and the new holder's settle moves it on.
"""

from __future__ import annotations

import dataclasses
import datetime
import random
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Executor
from typing import Any

from firestore_outbox.relay.claim.partition_leases import (
    ClaimedPartition,
    KnownLease,
    PartitionLeaseWrites,
    create_free,
)

_CLAIM_TRIES = 3


class PartitionLeases(PartitionLeaseWrites):
    """Claims, renews and releases partition leases of `duration` seconds for `holder`s;
    the writes, and `renew`, `renew_due` and `release`, are `PartitionLeaseWrites`'
    (`firestore_outbox.relay.claim.partition_leases`)."""

    def claim(
        self,
        holder: str,
        want: int,
        *,
        skip: Iterable[int] = (),
        rng: random.Random,
        drained_since: datetime.datetime | None = None,
    ) -> list[ClaimedPartition]:
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
            if held := self._hold_known(free, holder):
                return held
            # Every claim refused: those leases changed since this relay last read or wrote
            # them, and the others it knows may have too (a warm relay after another
            # invocation's run: skipping the refused ones only, it gave up after three tries
            # with every partition free). Read them all again: the next try goes by the truth.
            self._known.clear()
        return []

    def read_named(self, partitions: Iterable[int], *, again: bool = True) -> None:
        """Read the leases of `partitions` in one read; `claim_named` goes by it. With
        `again`, whatever this relay knew (a nudge's: another instance may have held them
        since, and one seen held would be left unread); else only those it knows nothing of
        (a claim by an old reading is refused if the lease changed since)."""
        named = sorted(set(partitions))
        self._look(named if again else [n for n in named if n not in self._known])

    def claim_named(self, holder: str, partitions: Iterable[int]) -> list[ClaimedPartition]:
        """A nudge's claim (after `read_named`): those of `partitions` free or surely
        expired, with one write; those claimed, each with `claimed_from`. One held by
        another invocation is left to it: its re-check before release finds the event."""
        named = sorted(set(partitions))
        if not named:  # nothing to claim: no clock needed (a cold relay has none yet)
            return []
        return self._hold_known(self._pick(named, len(named), self._store.clock.earliest()), holder)

    def claim_nudged(
        self,
        holder: str,
        partitions: Iterable[int],
        *,
        beside: Executor,
        with_events: Callable[[list[int]], list[int]],
        into: dict[int, ClaimedPartition],
    ) -> list[ClaimedPartition]:
        """A nudge's claim of `partitions` (`into` gets each part as it lands): those
        this relay knows free (its own release, most often) claimed at once by what it
        knows, on `beside`, while one read of all of them goes out; the others, and those
        refused (changed since), by that read, once `with_events` says their page found an
        open event. One found held by another invocation is left to it.

        Giving up is only ever decided on that read, sent after the nudge, so after the
        nudged commit: whoever changed the lease since holds it (and reads the partition
        after its claim) or released it (and re-checks after its release); either sees
        the event. A claim by what this relay knew decides nothing when refused."""
        named = sorted(set(partitions))
        sure: dict[int, KnownLease] = {}
        if any(n in self._known for n in named):  # (so Firestore's clock was read)
            sure = self._pick(named, len(named), self._store.clock.earliest())
        fast = beside.submit(self._hold_known, sure, holder)
        try:
            snapshots = self._read([self.collection.document(str(n)) for n in named])
        finally:  # what the claim took is released, whatever the read did
            taken = fast.result()
            into.update((h.partition, h) for h in taken)
        got = {h.partition for h in taken}
        rest = [n for n in named if n not in got]
        self._learn(rest, snapshots)
        later = self.claim_named(holder, with_events(rest))
        into.update((h.partition, h) for h in later)
        return taken + later

    def _free(
        self,
        skipped: set[int],
        want: int,
        rng: random.Random,
        drained_since: datetime.datetime | None,
    ) -> dict[int, KnownLease]:
        # Each lease document is read once per PartitionLeases (one per Relay, kept across
        # its runs), when a claim first needs it; later claims, in this run and the next,
        # go by what was read, written or created since.
        # Acting on an old reading is safe: the claim is conditional on that update time,
        # so a lease changed meanwhile is refused (and forgotten, to be read again).
        wanted = [n for n in range(self.count) if n not in skipped]
        fresh = [n for n in wanted if n not in self._known]
        self._look(fresh)
        now = self._store.clock.earliest()
        if not self._pick(wanted, want, now, drained_since):
            # Perhaps released meanwhile: the leases seen held by others are read again,
            # but not those this claim has just read.
            just_read = set(fresh)
            self._look([n for n in wanted if n in self._known and n not in just_read])
        start = rng.randrange(self.count)
        order = [(start + step) % self.count for step in range(self.count)]
        return self._pick([n for n in order if n not in skipped], want, now, drained_since)

    def _pick(
        self,
        partitions: list[int],
        want: int,
        now: datetime.datetime,
        drained_since: datetime.datetime | None = None,
    ) -> dict[int, KnownLease]:
        """Up to `want` of `partitions` known free or surely expired, and not drained by
        another invocation since `drained_since`, as known now (another run of this relay
        may learn or forget one meanwhile: a claim goes by this answer)."""
        free: dict[int, KnownLease] = {}
        for n in partitions:
            known = self._known.get(n)
            if known is None or not known.claimable(now, drained_since):
                continue  # not known, or held by someone, or drained by another since
            free[n] = known
            if len(free) >= want:
                break
        return free

    def _hold_known(self, free: dict[int, KnownLease], holder: str) -> list[ClaimedPartition]:
        """Claim `free` by the update times known of them; those claimed, `claimed_from`
        what was known."""
        held = self._hold([(n, known.update_time) for n, known in free.items()], holder)
        return [dataclasses.replace(h, claimed_from=free[h.partition]) for h in held]

    def _look(self, partitions: list[int]) -> None:
        """Read the lease documents of `partitions` (creating the missing ones)."""
        if partitions:
            self._learn(
                partitions, self._read([self.collection.document(str(n)) for n in partitions])
            )

    def _learn(
        self, partitions: list[int], snapshots: dict[int, Any], *, create: bool = True
    ) -> None:
        """Know the leases of `partitions` as `snapshots` show them (creating the missing)."""
        missing = []
        for n in partitions:
            snapshot = snapshots.get(n)
            if snapshot is None or not snapshot.exists:
                missing.append(n)
                self._known.pop(n, None)
                continue
            self._known[n] = KnownLease.read(snapshot)
        if missing and create:  # the first run ever: every lease not read yet is created
            unread = [n for n in range(self.count) if n not in self._known]
            self._known.update(
                create_free(self._db, self.collection, unread, timeout=self._timeout)
            )
            if others := [n for n in partitions if n not in self._known]:
                # created by another invocation meanwhile
                refs = [self.collection.document(str(n)) for n in others]
                self._learn(others, self._read(refs), create=False)

    def _read(self, refs: list[Any]) -> dict[int, Any]:
        sent_at = time.monotonic()
        snapshots = {int(s.id): s for s in self._db.get_all(refs, timeout=self._timeout)}
        for snapshot in snapshots.values():
            self._store.clock.observe(snapshot.read_time, sent_at)
        return snapshots
