"""Follow mode with partition leases (the default) when its listener's stream ends for good:
the failure is injected into the real `Watch` the follower subscribed (its gRPC call
cancelled, as a server ending the stream would); the client and the emulator are real."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest
from google.cloud import firestore

from firestore_outbox.consumer.receiver import Receiver, ReceiverAnswer
from firestore_outbox.firestore.settings import Settings
from tests.integration.relay.test_follow_listener import (
    assert_later_downs_are_failed_resubscriptions,
    count_up_then_ended,
    end_the_stream_and_deliver_around_it,
    events,
    following,
    listening,
)
from tests.support.helpers import add_orders, outbox


def test_a_partitioned_followers_stream_closed_for_good_is_reported_and_resubscribed(
    db: firestore.Client, settings: Settings, receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    # No periodic poll during the test: only the listener and its resubscription deliver.
    with following(db, settings, receiver.url, leases="partition", follow_poll_seconds=3600.0) as (
        watches,
        summary,
    ):
        end_the_stream_and_deliver_around_it(db, settings, receiver, caplog, watches)
    down, *again = events(caplog, "relay.listener_down")
    assert down.structured["reason"] == "stream ended"  # type: ignore[attr-defined]
    assert_later_downs_are_failed_resubscriptions(again)
    assert summary["listenerDown"] == 1 + count_up_then_ended(again), summary
    assert summary["resubscribed"] >= 1, summary
    assert summary["processed"] == 3, summary
    assert {e["status"] for e in outbox(db, settings).values()} == {"PROCESSED"}


def test_a_partitioned_follower_keeps_a_broken_channel_alone_through_new_events(
    db: firestore.Client, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    """After its breaker opened, new events (each wakes the follower) must not make it claim
    partitions and send to the broken channel again until the breaker's cooldown is over."""
    caplog.set_level(logging.INFO)
    pending: list[int] = []
    seen = threading.Event()

    def count_pending(snapshots: list[Any], *_: Any) -> None:
        pending.append(len(snapshots))
        if len(snapshots) == 7:
            seen.set()

    query = db.collection(settings.outbox_collection).where(
        filter=firestore.FieldFilter("status", "==", "PENDING")
    )
    with Receiver(lambda _: ReceiverAnswer(401, body=b"bad signature")) as downstream:
        with following(
            db, settings, downstream.url, leases="partition", follow_poll_seconds=3600.0
        ) as (watches, summary):
            listening(watches)
            add_orders(db, settings, 3)
            for _ in range(200):
                if events(caplog, "relay.channel_broken"):
                    break
                threading.Event().wait(0.1)
            # Three in a row open the breaker; how many were sent before depends on how the
            # three commits fell into the follower's runs (one handed back by a run that saw
            # only it is sent again by the next), so the count is taken, not assumed.
            before = len(downstream.wait_for(3, timeout=20))
            assert events(caplog, "relay.channel_broken")
            add_orders(db, settings, 4)  # each one changes the follower's window
            # A listener of the test's own sees the 7 pending; the emulator sometimes leaves a
            # new listen unanswered (see assert_later_downs_are_failed_resubscriptions; CI
            # saw no snapshot in 20 s once), so an unanswered one is replaced, never waited on.
            for _ in range(4):
                watch = query.on_snapshot(count_pending)
                try:
                    if seen.wait(5):
                        break
                finally:
                    watch.unsubscribe()
            assert seen.is_set(), pending
            threading.Event().wait(2.0)  # the follower's listener saw them too by now
        sent = len(downstream.received)
    assert sent == before, "the broken channel was sent to again"
    assert len(events(caplog, "relay.channel_broken")) == 1
    assert summary["processed"] == 0 and summary["failed"] == 0, summary
    assert {(e["status"], e["attempts"]) for e in outbox(db, settings).values()} == {("PENDING", 0)}
