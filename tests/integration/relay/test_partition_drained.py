"""A partition released drained is not claimed again by an invocation that started before:
with four relays on one backlog, each partition is drained once, not claimed by every relay
that comes by after (a claim, an empty page and a release each, for nothing). One whose
events were handed back unsent is not released drained."""

from __future__ import annotations

import itertools
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from google.cloud import firestore

from app.services import create_new_order
from app.uow import FirestoreUnitOfWork
from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.example import NewOrder
from firestore_outbox.firestore.cas import Written
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.partitions import DEFAULT_PARTITIONS, partition_of
from firestore_outbox.relay import Relay
from firestore_outbox.relay.claim.partition_claims import PartitionLeases
from firestore_outbox.relay.claim.partition_leases import ClaimedPartition
from firestore_outbox.relay.lease import Lease, OnSettled, Settled
from firestore_outbox.relay.pipeline import Pipeline
from firestore_outbox.relay.summary import Tally
from tests.support.helpers import fast_config, make_relay, outbox


def leases_of(db: firestore.Client, settings: Settings) -> PartitionLeases:
    relay = make_relay(db, settings, "http://127.0.0.1:9/", partitions=16)
    relay.store.count_at(relay.store.collection, None)  # the clock's first answer
    return relay.partition_leases()


def test_a_partition_released_drained_is_skipped_by_runs_that_started_before(
    db: firestore.Client, settings: Settings
) -> None:
    first = leases_of(db, settings)
    other = leases_of(db, settings)
    # The other invocation's run starts here: surely before the drain below, on Firestore's
    # clock (`latest()`, the relay's own pick, is an upper bound that a slow answer stretches:
    # on a loaded machine it passed the drain, and the test saw drained partitions claimed).
    started = first._store.clock.earliest()
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


def before_the_second_claim(leases: PartitionLeases, action: Callable[[], object]) -> None:
    """Run `action` once, when a run that claimed its first partitions comes to claim more
    (a run's first claim names the partitions its survey saw events in: `claim_named`)."""
    claims = itertools.count()

    def after_action(claim: Callable[..., list[ClaimedPartition]]) -> Callable[..., Any]:
        def claim_after_action(*args: Any, **kwargs: Any) -> list[ClaimedPartition]:
            if next(claims) == 1:
                action()
            return claim(*args, **kwargs)

        return claim_after_action

    leases.claim = after_action(leases.claim)  # type: ignore[method-assign]
    leases.claim_named = after_action(leases.claim_named)  # type: ignore[method-assign]


class HandsEverythingBack(Relay):
    """A relay whose partition leases have less time left than one attempt takes as soon as
    they are claimed: every head it takes is handed back unsent, as a drain late to renew
    its leases on a loaded machine hands back the heads that were waiting to go. Its next
    claim waits until its first head was handed back, so that the partition is released
    while the run goes on (as a run with other partitions to drain releases it)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.handed_back = threading.Event()

    def partition_leases(self) -> PartitionLeases:
        leases = super().partition_leases()
        leases.duration = 1.0  # an attempt here takes up to 15.5 s (RelayConfig.attempt_seconds)
        before_the_second_claim(leases, lambda: self.handed_back.wait(30))
        return leases

    @contextmanager
    def pipeline(
        self, deadline: float, instance: str, tally: Tally, *, on_settled: OnSettled | None = None
    ) -> Iterator[Pipeline]:
        def heard(lease: Lease, kind: Settled, written: Written | None) -> None:
            if on_settled is not None:
                on_settled(lease, kind, written)
            if kind is Settled.RELEASED:
                self.handed_back.set()

        with super().pipeline(deadline, instance, tally, on_settled=heard) as pipeline:
            yield pipeline


class LetsAnotherRunFirst(Relay):
    """A relay whose runs let `meanwhile` run once, when they come to claim more partitions:
    another invocation's whole run fits there, after this run started."""

    def __init__(self, *args: Any, meanwhile: Callable[[], object], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._meanwhile = meanwhile

    def partition_leases(self) -> PartitionLeases:
        leases = super().partition_leases()
        before_the_second_claim(leases, self._meanwhile)
        return leases


def one_order_in_each_partition(db: firestore.Client, settings: Settings, partitions: int) -> None:
    """One order whose event lies in each of the first `partitions` partitions, as the
    producer writes them (`DEFAULT_PARTITIONS`): ids from idempotency keys."""
    items = [{"productId": "sku-1", "quantity": 1}]
    keys: dict[int, str] = {}
    for n in itertools.count():
        key = f"order-{n}"
        order_id = str(NewOrder.parse("c", items, key).order_id)
        if (partition := partition_of(order_id, DEFAULT_PARTITIONS)) < partitions:
            keys.setdefault(partition, key)
        if len(keys) == partitions:
            break
    for key in keys.values():
        with FirestoreUnitOfWork(db, settings) as uow:
            create_new_order("c", items, uow, idempotency_key=key)


def test_a_partition_whose_events_were_handed_back_unsent_is_claimed_by_a_run_that_started_before(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    # Three partitions, one event each, claimed one at a time. Relay B claims one; before it
    # claims more, relay A claims the other two and hands their events back unsent, releasing
    # the first of them while its run goes on. B's run started before: had A released that
    # one drained, B skipped it and its event waited for the next invocation, B's budget
    # unspent (in the four-relay test, 4 events PENDING with 3 relays done early).
    config = fast_config(
        receiver.url,
        partitions=3,
        partitions_per_claim=1,
        batch_size=1,  # the next claim comes once the head read was taken
        http_timeout_seconds=10.0,  # B's first delivery may be out while A runs
        lock_timeout_seconds=40.0,
    )
    one_order_in_each_partition(db, settings, 3)
    relay_a = HandsEverythingBack(db, settings, config)
    runs_of_a: list[Any] = []  # its summaries

    def run_a() -> None:
        # Once B's first event is settled: A's first claim names a partition its survey saw
        # an event in, and B's, still PENDING, was one of three it could pick (held by B:
        # A claimed nothing there, waited for a hand-back that never came, ran out of budget).
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if "PROCESSED" in {e["status"] for e in outbox(db, settings).values()}:
                break
            time.sleep(0.05)
        runs_of_a.append(relay_a.run())

    relay_b = LetsAnotherRunFirst(db, settings, config, meanwhile=run_a)
    summary = relay_b.run()

    [by_a] = runs_of_a
    assert (by_a["processed"], by_a["released"], by_a["partitionsClaimed"]) == (0, 2, 2), by_a
    assert (summary["processed"], summary["partitionsClaimed"]) == (3, 3), summary
    assert {e["status"] for e in outbox(db, settings).values()} == {"PROCESSED"}
    assert sorted(Counter(r.event_id for r in receiver.received).values()) == [1, 1, 1]
