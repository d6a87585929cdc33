"""A partition released drained is not claimed again by an invocation that started before:
with four relays on one backlog, each partition is drained once, not claimed by every relay
that comes by after (a claim, an empty page and a release each, for nothing)."""

from __future__ import annotations

import random

from google.cloud import firestore

from firestore_outbox.config.settings import Settings
from firestore_outbox.relay.partitioned.leases import PartitionLeases
from tests.helpers import make_relay


def leases_of(db: firestore.Client, settings: Settings) -> PartitionLeases:
    relay = make_relay(db, settings, "http://127.0.0.1:9/", partitions=16)
    relay.store.count_at(relay.store.collection, None)  # the clock's first answer
    return relay.partition_leases()


def test_a_partition_released_drained_is_skipped_by_runs_that_started_before(
    db: firestore.Client, settings: Settings
) -> None:
    first = leases_of(db, settings)
    other = leases_of(db, settings)
    started = first._store.clock.latest()  # the other invocation's run starts here
    held = first.claim("A", 16, rng=random.Random(1))
    assert len(held) == 16
    drained, cut_short = held[:4], held[4:]
    first.release(drained, drained=True)
    first.release(cut_short)  # a run that ended with events left: not drained

    taken = other.claim("B", 16, rng=random.Random(2), drained_since=started)
    assert {h.partition for h in taken} == {h.partition for h in cut_short}
    other.release(taken)

    later = leases_of(db, settings)  # a run that starts after the drain: its own visit
    since = later._store.clock.latest()
    again = later.claim("C", 16, rng=random.Random(3), drained_since=since)
    assert {h.partition for h in again} == set(range(16))
    assert {d.id for d in first.collection.get() if d.to_dict().get("drainedAt")} == {
        str(h.partition) for h in drained
    }


def test_a_lease_read_once_is_not_read_again_while_claiming_the_rest(
    db: firestore.Client, settings: Settings
) -> None:
    leases_of(db, settings).claim("setup", 16, rng=random.Random(4))  # lease documents exist
    for doc in db.collection("outbox_partitions").get():  # all free again
        doc.reference.update({"holder": None, "expiresAt": None})
    leases = leases_of(db, settings)
    reads: list[int] = []
    original = leases._read

    def counted(refs):  # type: ignore[no-untyped-def]
        reads.append(len(refs))
        return original(refs)

    leases._read = counted  # type: ignore[method-assign]
    skip: set[int] = set()
    for _ in range(4):
        claimed = leases.claim("A", 4, skip=skip, rng=random.Random(5))
        assert len(claimed) == 4
        skip.update(h.partition for h in claimed)
        leases.release(claimed, drained=True)
    assert reads == [16]  # once, at the first claim; not 16 + 12 + 8 + 4
