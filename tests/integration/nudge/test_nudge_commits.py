"""Nudges never fail or slow a commit: a nudge that fails, hangs or finds the queue full
costs latency only, and the timer delivers everything; and nudges from 8 threads committing
at once coalesce into a few. The conditions are forced: a target that hangs until the test
lets it go, a first nudge held until every commit has returned."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from google.cloud import firestore

from app.services import create_new_order
from app.uow import FirestoreUnitOfWork
from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.nudge import Nudger
from tests.support.helpers import make_relay, outbox, run_until


def order(db: firestore.Client, settings: Settings, nudger: Nudger, n: int) -> None:
    with FirestoreUnitOfWork(db, settings, nudger=nudger) as uow:
        create_new_order(f"customer-{n}", [{"productId": "sku-1", "quantity": 1}], uow)


class Failing:
    def send(self, partitions: frozenset[int]) -> bool:
        raise ConnectionError("the relay function is unreachable")

    def close(self) -> None:
        pass


class Hanging:
    """Every send blocks until `release` is set (a relay endpoint that never answers)."""

    def __init__(self) -> None:
        self.entered, self.release = threading.Event(), threading.Event()
        self.sent: list[frozenset[int]] = []

    def send(self, partitions: frozenset[int]) -> bool:
        self.entered.set()
        self.release.wait(60)
        self.sent.append(partitions)
        return True

    def close(self) -> None:
        self.release.set()


def all_processed(db: firestore.Client, settings: Settings) -> bool:
    return {e["status"] for e in outbox(db, settings).values()} == {"PROCESSED"}


def test_failing_hanging_and_dropped_nudges_never_fail_a_commit_and_the_timer_delivers(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    failing = Nudger(Failing(), interval_seconds=0)
    hanging_target = Hanging()
    hanging = Nudger(hanging_target, queue_size=1, interval_seconds=0)
    for n in range(3):
        order(db, settings, failing, n)
    order(db, settings, hanging, 3)
    assert hanging_target.entered.wait(30)  # the sender is stuck in its first nudge
    for n in range(4, 8):  # one waits in the queue of one; the others are dropped
        order(db, settings, hanging, n)
    assert not hanging_target.release.is_set()  # every commit returned while it hung
    assert failing.wait_idle(30)
    assert failing.counts["failed"] == 3 and failing.counts["sent"] == 0
    assert hanging.counts["dropped"] == 3 and hanging.counts["requested"] == 5
    assert len(outbox(db, settings)) == 8  # every commit landed

    run_until(make_relay(db, settings, receiver.url), lambda: all_processed(db, settings))
    hanging_target.release.set()
    assert hanging.wait_idle(30)
    hanging.close()
    failing.close()
    assert hanging.counts["sent"] == 2 and hanging.counts["dropped"] == 3


def test_nudges_from_8_threads_committing_at_once_coalesce(
    db: firestore.Client, settings: Settings
) -> None:
    target = Hanging()
    nudger = Nudger(target, interval_seconds=0)
    start = threading.Barrier(8)

    def commit(n: int) -> None:
        start.wait()
        order(db, settings, nudger, n)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(commit, range(8)))
    target.release.set()  # the first nudge was held until every commit had returned
    assert nudger.wait_idle(30)
    nudger.close()

    partitions = {int(e["partition"]) for e in outbox(db, settings).values()}
    assert nudger.counts["requested"] == 8 and nudger.counts["sent"] == 8
    assert nudger.counts["nudges"] == len(target.sent) <= 2  # one in flight, one after it
    assert set().union(*target.sent) == partitions  # every partition committed to was nudged
