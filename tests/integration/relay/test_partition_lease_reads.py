"""A claim reads each lease document it needs once: a reading it has just taken is not
taken again when every partition turns out to be held by others."""

from __future__ import annotations

import random

from google.cloud import firestore

from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.testing.metering import meter
from tests.support.helpers import make_relay


def test_a_claim_that_finds_every_partition_held_reads_each_lease_once(
    db: firestore.Client, settings: Settings
) -> None:
    holder = make_relay(db, settings, "http://127.0.0.1:9/", partitions=4, lock_timeout_seconds=120)
    holder.store.count_at(holder.store.collection, None)  # the clock's first reading
    assert len(holder.partition_leases().claim("A", 4, rng=random.Random(1))) == 4

    other_db = get_db_client(settings)
    counts = meter(other_db)
    other = make_relay(other_db, settings, "http://127.0.0.1:9/", partitions=4)
    other.store.count_at(other.store.collection, None)
    counts.reset()
    assert other.partition_leases().claim("B", 4, rng=random.Random(2)) == []
    # The four lease documents, read once: all held by A, read just now.
    assert counts.snapshot()["reads"] == 4
