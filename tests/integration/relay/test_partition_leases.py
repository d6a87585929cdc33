"""Partition leases on the emulator: claimed by compare-and-set, expiring on Firestore's
clock, taken over, redistributed; a late settle after a lost partition is refused."""

from __future__ import annotations

import itertools
import random
import threading
import time
from collections import defaultdict

import pytest
from google.cloud import firestore

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.cas import Change
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.partitions import partition_of
from firestore_outbox.publishers.base import Delivery, Outcome, PublishResult
from firestore_outbox.relay import Relay
from firestore_outbox.relay.claim.partition_claims import PartitionLeases
from firestore_outbox.relay.events import OutboxEvent
from firestore_outbox.relay.settle.settler import Lease, Settler
from tests.support.helpers import add_orders, fast_config, make_relay, outbox
from tests.support.overlap import HeldUntilOverlap


def leases_of(relay: Relay) -> PartitionLeases:
    leases = relay.partition_leases()
    # The clock needs one Firestore answer first, as a run's opening count gives it.
    relay.store.count_at(relay.store.collection, None)
    return leases


def test_a_partition_has_one_holder_until_it_is_released(
    db: firestore.Client, settings: Settings
) -> None:
    relay = make_relay(db, settings, "http://127.0.0.1:9/", partitions=16)
    leases, rng = leases_of(relay), random.Random(1)
    first = leases.claim("A", 8, rng=rng)
    second = leases.claim("B", 16, rng=rng)
    assert len(first) == 8 and len(second) == 8
    assert not {h.partition for h in first} & {h.partition for h in second}
    assert leases.claim("C", 16, rng=rng) == []  # every partition is held

    leases.release(first)
    third = leases.claim("C", 16, rng=rng)
    assert {h.partition for h in third} == {h.partition for h in first}


def test_an_expired_partition_is_taken_over_and_its_old_holder_cannot_renew(
    db: firestore.Client, settings: Settings
) -> None:
    relay = make_relay(db, settings, "http://127.0.0.1:9/", partitions=2)
    leases = leases_of(relay)
    short = PartitionLeases(db, relay.store, "outbox_partitions", count=2, duration=1.0)
    held = short.claim("A", 2, rng=random.Random(2))
    assert len(held) == 2
    assert leases.claim("B", 2, rng=random.Random(3)) == []  # not expired yet
    time.sleep(1.2)  # past the lease on Firestore's clock (the emulator shares this host's)
    taken = leases.claim("B", 2, rng=random.Random(4))
    assert {h.partition for h in taken} == {0, 1}
    assert short.renew(held, "A") == []  # A's leases are gone: its writes are refused
    holders = {d.id: d.get("holder") for d in leases.collection.get()}
    assert holders == {"0": "B", "1": "B"}


def test_a_late_settle_after_the_partition_was_taken_over_is_refused(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    [event_id] = add_orders(db, settings, 1)
    late = make_relay(db, settings, receiver.url)
    leases = leases_of(late)
    snapshot = late.store.collection.document(event_id).get()  # A reads the event at T0
    held = PartitionLeases(db, late.store, "outbox_partitions", count=16, duration=0.5).claim(
        "A", 16, rng=random.Random(5)
    )
    assert len(held) == 16
    time.sleep(0.7)  # A stalls past its partition lease; B takes over and delivers
    taken = make_relay(db, settings, receiver.url).run(instance_id="B")
    assert taken["processed"] == 1 and len(receiver.received) == 1

    event = OutboxEvent.from_document(event_id, snapshot.to_dict() or {})
    change = Change(snapshot.reference, snapshot.update_time, {})
    lease = Lease(event, change, time.monotonic(), 1, one_write=True)
    settler = Settler(late.store, late.config, random.Random(6), lambda _: None, instance="A")
    with settler:
        settler.put(lease, PublishResult(Outcome.DELIVERED))
    assert settler.tally["lostLeases"] == 1 and settler.tally["processed"] == 0
    stored = outbox(db, settings)[event_id]
    assert (stored["processingInstanceId"], stored["attempts"]) == ("B", 1)
    assert leases.collection.document("0").get().exists


class Recording:
    """A publisher that notes, per partition, when each relay was publishing in it; each
    delivery is held until both relays are publishing at once (`overlap`)."""

    def __init__(
        self,
        relay_name: str,
        spans: dict[int, list[tuple[float, float, str]]],
        overlap: HeldUntilOverlap,
    ):
        self._name, self._spans, self._lock = relay_name, spans, threading.Lock()
        self._overlap = overlap

    def publish(self, delivery: Delivery) -> PublishResult:
        started = time.monotonic()
        self._overlap.hold()
        with self._lock:
            self._spans[partition_of(delivery.subject, 4)].append(
                (started, time.monotonic(), self._name)
            )
        return PublishResult(Outcome.DELIVERED)


def test_two_invocations_never_drain_one_partition_at_once(
    db: firestore.Client, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RELAY_PARTITIONS", "4")  # the writers agree with the relays
    event_ids = add_orders(db, settings, 120)
    spans: dict[int, list[tuple[float, float, str]]] = defaultdict(list)
    config = fast_config("http://127.0.0.1:9/", partitions=4, partitions_per_claim=1)
    # Each relay holds one partition at a time and up to `concurrency` deliveries from it:
    # more in flight means both are publishing, in different partitions or (the bug) one.
    overlap = HeldUntilOverlap(config.concurrency, pace=0.03)
    relays = [
        Relay(db, settings, config, publisher=Recording(name, spans, overlap))
        for name in ("A", "B")
    ]
    summaries: dict[str, dict[str, object]] = {}
    threads = [
        threading.Thread(target=lambda r=r, n=n: summaries.update({n: r.run(instance_id=n)}))
        for r, n in zip(relays, ("A", "B"), strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stored = outbox(db, settings)
    assert all(stored[e]["status"] == "PROCESSED" for e in event_ids), summaries
    assert sum(len(s) for s in spans.values()) == 120  # each event published once
    for partition, published in spans.items():
        published.sort()
        for (_, end, name), (next_start, _, next_name) in itertools.pairwise(published):
            assert name == next_name or next_start >= end, (partition, name, next_name)
    assert sum(int(str(s["processed"])) for s in summaries.values()) == 120
    assert overlap.overlapped  # both were publishing at once
    assert min(int(str(s["processed"])) for s in summaries.values()) > 0  # they split the work
