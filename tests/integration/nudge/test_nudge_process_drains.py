"""`OUTBOX_NUDGE=process` drains partitions side by side, one drain per partition at a time
(`firestore_outbox.nudge.process`). Before, one drain ran on the nudger's thread and every
commit behind it waited for it, then for the interval.

The interleavings are forced: the downstream holds partition B's delivery until partition A's
event has arrived (so A's must be delivered while B's drain is under way), with a bound that
fails the test instead of hanging it."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

from google.cloud import firestore

from firestore_outbox.config.shortcuts import nudger_for
from firestore_outbox.consumer.receiver import Received, Receiver, ReceiverAnswer
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.nudge import Nudger
from firestore_outbox.partitions import DEFAULT_PARTITIONS, partition_of
from firestore_outbox.producer.uow import FirestoreUnitOfWork
from tests.integration.nudge.test_nudge_hazard import same_partition
from tests.support.helpers import assert_each_processed_once, outbox, relay_environment

HOLD_SECONDS = 2.5  # past any drain's own time: a held B that is let go by it failed
# The relay must not give up on the held delivery (FAST's 0.5 s) or its lease before then.
RELAY = {"RELAY_HTTP_TIMEOUT_SECONDS": "3", "RELAY_LOCK_TIMEOUT_SECONDS": "15"}


def other_partition(unique: str, taken: int) -> str:
    """An aggregate id of a partition other than `taken`."""
    return next(
        f"o-{unique}-{n}"
        for n in range(10_000)
        if partition_of(f"o-{unique}-{n}", DEFAULT_PARTITIONS) != taken
    )


class HoldUntil:
    """Holds the delivery of `held`'s first event until an event of `awaited` has arrived;
    records whether that happened (`met`) and every arrival in order."""

    def __init__(self, held: str, awaited: str) -> None:
        self.held, self.awaited = held, awaited
        self.holding, self.arrived = threading.Event(), threading.Event()
        self.met: bool | None = None
        self.order: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, request: Received) -> ReceiverAnswer:
        subject = request.headers.get("ce-subject", "")
        with self._lock:
            self.order.append(subject)
        if subject == self.awaited:
            self.arrived.set()
        elif subject == self.held and not self.holding.is_set():
            self.holding.set()
            self.met = self.arrived.wait(HOLD_SECONDS)
        return ReceiverAnswer(200)


def commit(db: firestore.Client, settings: Settings, nudger: Nudger, aggregate: str) -> str:
    event = {"eventType": "Tested", "aggregateType": "t", "aggregateId": aggregate, "payload": {}}
    with FirestoreUnitOfWork(db, settings, nudger=nudger) as uow:
        return uow.outbox.add(event)


@contextmanager
def process_nudger(
    db: firestore.Client, settings: Settings, downstream: HoldUntil
) -> Iterator[tuple[Receiver, Nudger]]:
    with Receiver(downstream) as receiver:
        env = relay_environment(settings, receiver.url, OUTBOX_NUDGE="process", **RELAY)
        nudger = nudger_for(db, settings, env)
        assert nudger is not None
        try:
            yield receiver, nudger
        finally:
            nudger.close()


def test_a_commit_into_one_partition_is_delivered_during_another_partitions_drain(
    db: firestore.Client, settings: Settings, unique: str
) -> None:
    b = f"b-{unique}"
    a = other_partition(unique, partition_of(b, DEFAULT_PARTITIONS))
    downstream = HoldUntil(held=b, awaited=a)
    with process_nudger(db, settings, downstream) as (receiver, nudger):
        held = commit(db, settings, nudger, b)
        assert downstream.holding.wait(30)  # B's drain is under way, its delivery held
        late = commit(db, settings, nudger, a)
        assert nudger.wait_idle(30)  # the drains too

    assert downstream.met is True, downstream.order  # A's arrived while B's was held
    assert downstream.order == [b, a]
    assert_each_processed_once(db, settings, receiver, held, late)


def test_a_commit_into_a_partition_under_its_own_drain_is_delivered_right_after_it(
    db: firestore.Client, settings: Settings, unique: str
) -> None:
    first, second, partition = same_partition(unique)
    elsewhere = other_partition(unique, partition)
    # The partition's first delivery is held until the other partition's event arrives, so
    # the second commit (nudged) lands while the partition's own drain is under way.
    downstream = HoldUntil(held=first, awaited=elsewhere)
    with process_nudger(db, settings, downstream) as (receiver, nudger):
        early = commit(db, settings, nudger, first)
        assert downstream.holding.wait(30)
        late = commit(db, settings, nudger, second)  # its drain: after this one's
        other = commit(db, settings, nudger, elsewhere)  # lets the first go, once delivered
        assert nudger.wait_idle(30)  # no timer: the drains alone
        states = {k: v["status"] for k, v in outbox(db, settings).items()}

    assert downstream.met is True, downstream.order
    assert states == {early: "PROCESSED", late: "PROCESSED", other: "PROCESSED"}
    order = downstream.order
    assert order.index(first) < order.index(second), order  # one drain of it at a time
    assert Counter(r.event_id for r in receiver.received) == {early: 1, late: 1, other: 1}
