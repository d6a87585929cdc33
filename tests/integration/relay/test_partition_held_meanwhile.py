"""An aggregate held (its head FAILED, `RELAY_FAILED_HEAD=hold`) by another invocation while a
run is under way, in a partition the run claims later: its later events must wait. On the
emulator, with a real HTTP downstream and two invocations' partition leases."""

from __future__ import annotations

import itertools
import random
import threading

import pytest
from google.cloud import firestore

from firestore_outbox.consumer.receiver import Received, Receiver, ReceiverAnswer
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.partitions import HELD, partition_of
from firestore_outbox.relay.claim.partition_claims import PartitionLeases
from tests.support.helpers import make_relay, outbox
from tests.support.ordering import add_steps


def names_in(partition: int, count: int) -> list[str]:
    """`count` aggregate ids whose events go to `partition` of 2."""
    ids = (f"agg-{n}" for n in itertools.count())
    return list(itertools.islice((a for a in ids if partition_of(a, 2) == partition), count))


def test_an_aggregate_held_meanwhile_in_a_partition_claimed_later_waits(
    db: firestore.Client, settings: Settings, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RELAY_PARTITIONS", "2")  # the writers agree with the relays
    others, [held] = names_in(0, 12), names_in(1, 1)
    add_steps(db, settings, others)
    head, later = add_steps(db, settings, [held, held])
    relay = make_relay(
        db, settings, receiver.url, partitions=2, partitions_per_claim=1, batch_size=2
    )
    relay.store.count_at(relay.store.collection, None)  # the clock's first reading
    # Invocation A holds partition 1 when the run starts; the run drains partition 0 first.
    a_leases = PartitionLeases(db, relay.store, "outbox_partitions", count=2, duration=120.0)
    taken = a_leases.claim("A", 1, skip={0}, rng=random.Random(1))
    assert [h.partition for h in taken] == [1]
    once = threading.Lock()

    def a_fails_the_head_and_lets_go(request: Received) -> ReceiverAnswer:
        if once.acquire(blocking=False):
            # A's delivery of the head was refused for good: settled FAILED, holding its
            # aggregate; A's run then ended (its budget) and released the partition.
            ref = db.collection(settings.outbox_collection).document(head)
            ref.update({"status": "FAILED", "attempts": 1, HELD: True})
            a_leases.release(taken)
        threading.Event().wait(0.05)
        return ReceiverAnswer(200)

    receiver.respond = a_fails_the_head_and_lets_go
    summary = relay.run(instance_id="B")

    assert summary["partitionsClaimed"] == 2, summary  # it did drain partition 1 after A
    delivered = [r.json()["aggregate"] for r in receiver.received]
    assert sorted(delivered) == sorted(others), "an event of the held aggregate went out"
    assert outbox(db, settings)[later]["status"] == "PENDING"
