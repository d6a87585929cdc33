"""Clock skew: the relay compares server timestamps only with Firestore's own clock, so a
relay whose wall clock runs ahead leaves a live lease alone."""

from __future__ import annotations

import datetime as dt
import threading

import time_machine
from google.cloud import firestore

from firestore_outbox.consumer.receiver import Received, Receiver, ReceiverAnswer
from firestore_outbox.firestore.settings import Settings
from tests.support.helpers import FAST, add_orders, make_relay, outbox


def test_a_relay_with_a_fast_clock_leaves_a_live_lease_alone(
    db: firestore.Client, settings: Settings
) -> None:
    [event_id] = add_orders(db, settings, 1)
    skewed: dict[str, object] = {}
    deliveries: list[str] = []
    first = threading.Event()

    def downstream(request: Received) -> ReceiverAnswer:
        deliveries.append(request.headers["ce-id"])
        if not first.is_set():
            first.set()
            # While relay A's lease is live, relay B runs in a process whose wall clock is a
            # lock timeout (and a second) ahead of Firestore's.
            ahead = dt.datetime.now(dt.timezone.utc) + dt.timedelta(
                seconds=FAST.lock_timeout_seconds + 1
            )
            with time_machine.travel(ahead, tick=True):
                assert dt.datetime.now(dt.timezone.utc) >= ahead  # the skew is real
                skewed.update(make_relay(db, settings, receiver.url).run())
        return ReceiverAnswer(200, body=b"{}")

    with Receiver(downstream) as receiver:
        summary = make_relay(db, settings, receiver.url).run()

    assert (skewed["reclaimed"], skewed["processed"]) == (0, 0), skewed  # B left it alone
    assert (summary["processed"], summary["lostLeases"]) == (1, 0)
    assert deliveries == [event_id]  # delivered once
    assert outbox(db, settings)[event_id]["status"] == "PROCESSED"
