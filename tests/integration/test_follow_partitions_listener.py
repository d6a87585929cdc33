"""Follow mode with partition leases (the default) when its listener's stream ends for good:
the failure is injected into the real `Watch` the follower subscribed (its gRPC call
cancelled, as a server ending the stream would); the client and the emulator are real."""

from __future__ import annotations

import logging

import pytest
from google.cloud import firestore

from app.config import Settings
from app.receiver import Receiver
from tests.helpers import outbox
from tests.integration.test_follow_listener import (
    end_the_stream_and_deliver_around_it,
    events,
    following,
)


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
    [down] = events(caplog, "relay.listener_down")
    assert down.structured["reason"] == "stream ended"  # type: ignore[attr-defined]
    assert summary["listenerDown"] == 1 and summary["resubscribed"] == 1, summary
    assert summary["processed"] == 3, summary
    assert {e["status"] for e in outbox(db, settings).values()} == {"PROCESSED"}
