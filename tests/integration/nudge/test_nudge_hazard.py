"""The nudge's hazard: the nudged invocation finds the event's partition held by another
invocation that has already read past the event and is about to release it. With nudges on,
the holder re-checks the partition after its release and claims it again
(`firestore_outbox.relay.claim.recheck`); without, the event waits for the next timer.

The interleaving is forced, not hoped for: the downstream holds the holder's delivery of the
partition's first event (its last page is read) until the nudged invocation has come and gone."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from google.cloud import firestore

from firestore_outbox.consumer.receiver import Received, Receiver, ReceiverAnswer
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.partitions import DEFAULT_PARTITIONS, partition_of
from firestore_outbox.producer.uow import FirestoreUnitOfWork
from tests.support.helpers import make_relay, outbox


def same_partition(unique: str) -> tuple[str, str, int]:
    """Two aggregate ids of one partition."""
    first = f"a-{unique}"
    partition = partition_of(first, DEFAULT_PARTITIONS)
    second = next(
        f"b-{unique}-{n}"
        for n in range(10_000)
        if partition_of(f"b-{unique}-{n}", DEFAULT_PARTITIONS) == partition
    )
    return first, second, partition


def commit(db: firestore.Client, settings: Settings, aggregate: str) -> str:
    event = {"eventType": "Tested", "aggregateType": "t", "aggregateId": aggregate, "payload": {}}
    with FirestoreUnitOfWork(db, settings, nudger=False) as uow:
        return uow.outbox.add(event)


class HoldFirst:
    """Answers 200, but holds the first delivery until `go` is set."""

    def __init__(self) -> None:
        self.holding, self.go = threading.Event(), threading.Event()

    def __call__(self, _: Received) -> ReceiverAnswer:
        if not self.holding.is_set():
            self.holding.set()
            assert self.go.wait(20)
        return ReceiverAnswer(200)


@pytest.mark.parametrize("recheck", [True, False])
def test_a_nudge_during_another_invocations_drain_of_its_partition_still_delivers(
    recheck: bool, db: firestore.Client, settings: Settings, unique: str
) -> None:
    first, second, partition = same_partition(unique)
    downstream = HoldFirst()
    with Receiver(downstream) as receiver:
        holder = make_relay(db, settings, receiver.url, recheck_released=recheck)
        nudged = make_relay(db, settings, receiver.url, recheck_released=recheck)
        early = commit(db, settings, first)
        summaries: list[dict[str, Any]] = []
        run = threading.Thread(target=lambda: summaries.append(holder.run().to_json()))
        run.start()
        assert downstream.holding.wait(20)  # the holder read the partition's last page
        late = commit(db, settings, second)  # committed after: the holder never read it
        nudge = nudged.run(partitions={partition}).to_json()  # finds the partition held
        downstream.go.set()
        run.join(30)

    assert nudge["status"] == "ok" and nudge["partitionsClaimed"] == 0, nudge
    assert nudge["processed"] == 0
    [held] = summaries
    states = {k: v["status"] for k, v in outbox(db, settings).items()}
    assert states[early] == "PROCESSED"
    if recheck:  # the holder's re-check after its release found it
        assert held["processed"] == 2 and held["partitionsClaimed"] == 2, held
        assert states[late] == "PROCESSED"
        assert [r.event_id for r in receiver.received] == [early, late]
    else:  # the hazard: nobody delivers it before the next timer tick
        assert held["processed"] == 1, held
        assert states[late] == "PENDING"
