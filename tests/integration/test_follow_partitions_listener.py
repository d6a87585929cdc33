"""Follow mode with partition leases (the default) when its listener's stream ends for good:
the failure is injected into the real `Watch` the follower subscribed (its gRPC call
cancelled, as a server ending the stream would); the client and the emulator are real."""

from __future__ import annotations

import logging
import threading

import pytest
from google.cloud import firestore

from app.config import Settings
from app.receiver import Receiver
from tests.helpers import add_orders, outbox
from tests.integration.test_follow_listener import events, following, listening


def test_a_partitioned_followers_stream_closed_for_good_is_reported_and_resubscribed(
    db: firestore.Client, settings: Settings, receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    # No periodic poll during the test: only the listener and its resubscription deliver.
    with following(db, settings, receiver.url, leases="partition", follow_poll_seconds=3600.0) as (
        watches,
        summary,
    ):
        listening(watches)
        [first] = add_orders(db, settings, 1)
        assert [r.event_id for r in receiver.wait_for(1, timeout=20)] == [first]
        watches[0]._rpc.call.cancel()  # the stream ends with CANCELLED: Watch does not recover
        second = set(add_orders(db, settings, 1)) - {first}
        delivered = receiver.wait_for(2, timeout=20)
        assert {r.event_id for r in delivered} == {first, *second}, "blind after the stream ended"
        for _ in range(200):  # the new subscription's first snapshot
            if events(caplog, "relay.listener_resubscribed"):
                break
            threading.Event().wait(0.1)
        assert len(watches) == 2 and watches[-1].is_active
        third = set(add_orders(db, settings, 1)) - {first, *second}
        delivered = receiver.wait_for(3, timeout=20)  # woken by the new listener
        assert {r.event_id for r in delivered} == {first, *second, *third}
    [down] = events(caplog, "relay.listener_down")
    assert down.structured["reason"] == "stream ended"  # type: ignore[attr-defined]
    assert summary["listenerDown"] == 1 and summary["resubscribed"] == 1, summary
    assert summary["processed"] == 3, summary
    assert {e["status"] for e in outbox(db, settings).values()} == {"PROCESSED"}
